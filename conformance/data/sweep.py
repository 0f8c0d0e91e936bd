"""Sweeps: one vector run at every value of an integer input.

A provider step (beside its `contribute`) or a kernel vector's model or
provider entry may carry `sweep: {FIELD: {from: A, to: B}}` or `{FIELD: [A, B, ...]}`:
FIELD (dotted for a nested field, `model_target.effective_ceiling`) is an
integer input of that object, and the case runs once as written and once more
at every other value, each run a sub-run of the same case (same binding, same
result). A provider's sub-run plays the steps up to the swept one (the later
ones never see the value); a kernel's, being a new load, all of them. Several
fields are swept one at a time, the others as written. The
vector's assertions and the invariants are judged in every sub-run, and a
finding made in one names it by its label, `steps[1].contribute.token_budget=49`,
which `ctxconf replay FILE --at LABEL` runs alone.

This module finds the sweeps a vector declares, checks them (exit 2 naming the
file and field), and builds the document of each sub-run; the role runners
(provider_run, kernel_run) drive them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

from conformance.data.schemas import InputError

MAX_VALUES = 400  # per swept field: a boundary needs a range around it, not the whole integer line


@dataclass(frozen=True)
class Sweep:
    where: str                # the field the sweep is declared at, for errors: steps[1].sweep.token_budget
    target: tuple             # the swept value's place in the document: ("steps", 1, "contribute", "token_budget")
    values: tuple[int, ...]
    ranged: bool              # given as {from, to} (else as a list)

    @property
    def name(self) -> str:
        """The swept input as a document path: steps[1].contribute.token_budget."""
        return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in self.target).lstrip(".")

    def label(self, value: int) -> str:
        return f"{self.name}={value}"


@dataclass(frozen=True)
class SubRun:
    label: str               # "" for the vector as written
    doc: dict
    last_step: int | None = None  # a provider sub-run ends with its swept step: the later ones do not see the value

    @property
    def steps(self) -> list[dict]:
        """The provider steps this sub-run plays."""
        steps = self.doc["steps"]
        return steps if self.last_step is None else steps[:self.last_step + 1]


def _hosts(doc: dict) -> Iterator[tuple[str, dict, tuple]]:
    """(where the sweep is declared, the declaring object, the path of the object its fields belong to)."""
    for i, step in enumerate(doc.get("steps", [])):
        kind = next((k for k in step if k not in ("note", "expect", "sweep")), None)
        yield f"steps[{i}]", step, ("steps", i, kind)
    setup = doc.get("setup") or {}
    for part in ("models", "providers"):
        for i, entry in enumerate(setup.get(part, [])):
            yield f"setup.{part}[{i}]", entry, ("setup", part, i)


def declared(doc: dict) -> list[Sweep]:
    """Every sweep a schema-valid vector declares, in document order."""
    found = []
    for where, holder, host in _hosts(doc):
        for field, spec in (holder.get("sweep") or {}).items():
            ranged = isinstance(spec, dict)
            values = tuple(range(spec["from"], spec["to"] + 1)) if ranged else tuple(spec)
            found.append(Sweep(f"{where}.sweep.{field}", host + tuple(field.split(".")), values, ranged))
    return found


def at(doc: dict, sweep: Sweep, value: int) -> dict:
    """The document with the swept input set to value: the objects on the way to it are copied, the rest is
    shared with `doc` (which is never changed). TypeError when the way passes through something else."""
    changed = dict(doc)
    place = changed
    for key, below in zip(sweep.target[:-1], sweep.target[1:]):
        if isinstance(place, list) and isinstance(key, int) and key < len(place):
            inner = place[key]
        elif isinstance(place, dict) and isinstance(key, str):
            inner = place.get(key, {})
        else:
            raise TypeError(key)
        inner = dict(inner) if isinstance(inner, dict) else list(inner) if isinstance(inner, list) else inner
        place[key] = inner
        place = inner
    if not isinstance(place, dict):
        raise TypeError(sweep.target[-1])
    place[sweep.target[-1]] = value
    return changed


def _nominal(doc: dict, sweep: Sweep):
    place = doc
    for key in sweep.target:
        try:
            place = place[key]
        except (KeyError, IndexError, TypeError):
            return None
    return place


def check(doc: dict, source: str, validate: Callable[[dict], None]) -> None:
    """Each sweep's range and values, and that its field is an integer input: the document at the first and
    last values (and at every listed one) must still pass `validate` (the schema and the role's own checks)."""
    for sweep in declared(doc):
        if not sweep.values:
            raise InputError(source, "the range ends before it starts (to is less than from)", sweep.where)
        if len(sweep.values) > MAX_VALUES:
            raise InputError(source, f"sweeps {len(sweep.values)} values; at most {MAX_VALUES}", sweep.where)
        nominal = _nominal(doc, sweep)
        if nominal is not None and (isinstance(nominal, bool) or not isinstance(nominal, int)):
            raise InputError(source, f"{sweep.name} is {nominal!r}, not an integer input", sweep.where)
        for value in (sweep.values[0], sweep.values[-1]) if sweep.ranged else sweep.values:
            check_value(doc, sweep, value, source, validate)


def check_value(doc: dict, sweep: Sweep, value: int, source: str, validate: Callable[[dict], None]) -> None:
    try:
        validate(at(doc, sweep, value))
    except TypeError:
        raise InputError(source, f"{sweep.name} is not a field of an object", sweep.where) from None
    except InputError as exc:
        raise InputError(source, f"at {value}, {sweep.name} is not a valid input: {exc}", sweep.where) from None


def sub_runs(doc: dict, only: str | None = None) -> list[SubRun]:
    """The vector as written, then each sweep at each value it does not already have; with `only` (a label,
    `--at`), just that one."""
    if only is not None:
        return [sub_run(doc, only)]
    runs = [SubRun("", doc)]
    for sweep in declared(doc):
        runs += [_sub_run(doc, sweep, v) for v in sweep.values if v != _nominal(doc, sweep)]
    return runs


def _sub_run(doc: dict, sweep: Sweep, value: int) -> SubRun:
    last = sweep.target[1] if sweep.target[0] == "steps" else None
    return SubRun(sweep.label(value), at(doc, sweep, value), last)


def sub_run(doc: dict, label: str) -> SubRun:
    """The sub-run a label names; ValueError when the vector sweeps no such input."""
    name, _, value = label.rpartition("=")
    sweep = next((s for s in declared(doc) if s.name == name), None)
    if sweep is None:
        raise ValueError(f"the vector sweeps {', '.join(s.name for s in declared(doc)) or 'nothing'}, not {name!r}")
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"{value!r} is not an integer") from None
    return _sub_run(doc, sweep, number)


def named(label: str, where: str) -> str:
    """A finding's place, with the sub-run it was made in."""
    return f"at {label}: {where}" if label else where
