"""Loading golden vector files: YAML, validated against their JSON Schema and
against the catalog, so a bad file stops the run with its name and the field
at fault (exit code 2) instead of a traceback or a silently weaker test."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from conformance.data import paths, provider_cases
from conformance.data.catalog import Catalog
from conformance.data import sweep
from conformance.data.schemas import InputError, check, read_yaml


@dataclass(frozen=True)
class Vector:
    id: str
    title: str
    requirements: tuple[str, ...]
    rulings: tuple[str, ...]
    needs: tuple[str, ...]
    doc: dict
    path: Path
    at: str | None = None  # `ctxconf replay --at`: only the sub-run of a sweep this label names
    swept: bool = True     # False: only as written (the self-test over a binding whose transport is all at stake)

    @property
    def fresh(self) -> bool:
        """Whether the case needs a process no earlier case configured (`fresh: true`)."""
        return bool(self.doc.get("fresh"))

    def sub_runs(self) -> list[sweep.SubRun]:
        """The runs of this case: as written, then each value of each sweep (or only the one `at` names)."""
        return sweep.sub_runs(self.doc, self.at) if self.swept else [sweep.SubRun("", self.doc)]


def load_dir(role: str, catalog: Catalog, root: Path | None = None) -> list[Vector]:
    folder = (root or paths.VECTORS) / role
    if not folder.is_dir():
        raise InputError(str(root or paths.VECTORS), f"has no {role}/ folder of vectors")
    files = sorted(folder.rglob("*.yaml")) + sorted(folder.rglob("*.yml"))
    return sorted((load_file(f, catalog, root or paths.VECTORS) for f in files), key=lambda v: v.id)


def load_all(catalog: Catalog, root: Path | None = None) -> list[Vector]:
    """The vectors of both roles."""
    return [v for role in ("kernel", "provider") for v in load_dir(role, catalog, root)]


def load_file(path: Path, catalog: Catalog, root: Path | None = None) -> Vector:
    doc = read_yaml(path)
    check(f"{_role(doc, path)}-vector.json", doc, str(path))
    role = doc["id"].split("/")[0]
    source = str(path)
    if root is not None:
        try:
            expected_id = path.resolve().relative_to(root.resolve()).with_suffix("").as_posix()
        except ValueError:
            expected_id = None
        if expected_id is not None and doc["id"] != expected_id:
            raise InputError(source, f"id {doc['id']!r} must match the file's place, {expected_id!r}", "id")
    _check_citations(doc, catalog, source)
    _check_inputs(doc, role, source)
    sweep.check(doc, source, lambda changed: _check(changed, role, source))
    return Vector(doc["id"], doc["title"], tuple(doc["requirements"]), tuple(doc.get("rulings", ())),
                  tuple(doc.get("needs", ())), doc, path)


def _check(doc: dict, role: str, source: str) -> None:
    """A document as its schema and the role's own input checks see it (a sweep's value in place)."""
    check(f"{role}-vector.json", doc, source)
    _check_inputs(doc, role, source)


def _check_inputs(doc: dict, role: str, source: str) -> None:
    """What the schema cannot say about the inputs, for each role."""
    if role == "kernel":
        _check_kernel_names(doc, source)
    else:
        provider_cases.check_vector(doc, source)


def at(vector: Vector, label: str) -> Vector:
    """The vector restricted to one sub-run of its sweeps (`--at`), checked like the vector itself."""
    try:
        run = sweep.sub_run(vector.doc, label)
    except ValueError as exc:
        raise InputError("--at", str(exc)) from None
    role = vector.id.split("/")[0]
    try:
        _check(run.doc, role, str(vector.path))
    except InputError as exc:
        raise InputError("--at", f"{run.label} is not a valid input of {vector.path}: {exc}") from None
    return replace(vector, at=run.label)


def _role(doc, path: Path) -> str:
    """Which schema judges the file: the role its id names, else the folder it sits in."""
    named = doc.get("id", "") if isinstance(doc, dict) else ""
    if isinstance(named, str) and named.split("/")[0] in ("kernel", "provider"):
        return named.split("/")[0]
    if isinstance(named, str) and named:  # the schema's pattern would name one role only, maybe not the intended one
        raise InputError(str(path), f"id {named!r} names no role: a vector's id is kernel/<group>/<name> or "
                                    f"provider/<group>/<name>", "id")
    return "provider" if "provider" in path.parts else "kernel"


def expectation_blocks(doc: dict) -> list[tuple[str, dict]]:
    """(field path, {requirement: assertions}) for every expectation block of a vector."""
    blocks = [("expect_load", doc.get("expect_load", {}))]
    for i, step in enumerate(doc.get("turns", doc.get("steps", []))):
        blocks.append((f"{'turns' if 'turns' in doc else 'steps'}[{i}].expect", step.get("expect", {})))
    return blocks


def _check_citations(doc: dict, catalog: Catalog, source: str) -> None:
    for i, rid in enumerate(doc["requirements"]):
        if rid not in catalog.requirements:
            raise InputError(source, f"cites unknown requirement {rid}", f"requirements[{i}]")
    for i, rid in enumerate(doc.get("rulings", ())):
        if rid not in catalog.rulings:
            raise InputError(source, f"cites unknown ruling {rid}", f"rulings[{i}]")
    asserted: set[str] = set(doc.get("invariant_requirements", ()))
    for i, rid in enumerate(doc.get("invariant_requirements", ())):
        if rid not in catalog.requirements:
            raise InputError(source, f"cites unknown requirement {rid}", f"invariant_requirements[{i}]")
    for where, block in expectation_blocks(doc):
        for rid in block:
            if rid not in doc["requirements"]:
                raise InputError(source, f"asserts on {rid}, which the vector's requirements do not list", f"{where}.{rid}")
            asserted.add(rid)
    for i, rid in enumerate(doc["requirements"]):
        if rid not in asserted:
            raise InputError(source, f"lists {rid} but asserts nothing about it", f"requirements[{i}]")


def _check_kernel_names(doc: dict, source: str) -> None:
    setup = doc["setup"]
    models = [m["id"] for m in setup["models"]]
    providers = [p["name"] for p in setup["providers"]]
    for i, name in enumerate(providers):
        if providers.index(name) != i:
            raise InputError(source, f"provider {name!r} is declared twice", f"setup.providers[{i}].name")
    for field, model in [("setup.primary_model", setup["primary_model"])] + [
            (f"setup.fallback_models[{i}]", m) for i, m in enumerate(setup.get("fallback_models", []))]:
        if model not in models:
            raise InputError(source, f"no model {model!r} in setup.models", field)
    for i, turn in enumerate(doc["turns"]):
        body = turn.get("assemble") or turn.get("count_tokens")
        if "model" in body and body["model"] not in models:
            raise InputError(source, f"no model {body['model']!r} in setup.models",
                             f"turns[{i}].{'assemble' if 'assemble' in turn else 'count_tokens'}.model")
    for where, block in expectation_blocks(doc):
        for rid, assertions in block.items():
            for name in _named_providers(assertions):
                if name not in providers:
                    raise InputError(source, f"names provider {name!r}, which is not declared", f"{where}.{rid}")


def _named_providers(assertions: dict) -> list[str]:
    names = list(assertions.get("calls", [])) + list(assertions.get("requests", {})) + \
        list(assertions.get("contribute_calls", {})) + list(assertions.get("no_diagnostics_for", []))
    names += [d["provider"] for d in assertions.get("diagnostics", []) if "provider" in d]
    for alternative in assertions.get("one_of", []):
        names += _named_providers(alternative)
    return names
