"""The harness protocols as documented (docs/*.md) and as schemas carry every warning code, diagnostic
category and kind, callback and op the engine uses; and the guides' transcripts are what a real run
of the references exchanges today."""

import ast
import copy
import functools
import json
import re

import pytest
import yaml

from conformance.data import paths
from conformance.commands import transcript
from conformance.engine import kernel_checks
from conformance.wire import errors
from tests.conftest import ROOT

DOCS = ROOT / "docs"
ENGINE = paths.PACKAGE / "engine"
SCHEMAS = paths.SCHEMAS


# --- what the engine uses -------------------------------------------------------------------------

def _literals(path, keep) -> set[str]:
    """String constants in `path` picked by keep(node) -> the constant nodes to take."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        for constant in keep(node):
            if isinstance(constant, ast.Constant) and isinstance(constant.value, str):
                found.add(constant.value)
    return found


def _compared_to(name):
    """`name == "X"`, `name != "X"`, `name in ("X", ...)`: the Xs."""
    def keep(node):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == name:
            for right in node.comparators:
                yield from (right.elts if isinstance(right, (ast.Tuple, ast.List, ast.Set)) else [right])
    return keep


def _first_argument_of(function):
    def keep(node):
        if isinstance(node, ast.Call) and node.args and getattr(node.func, "id", getattr(node.func, "attr", None)) == function:
            yield node.args[0]
    return keep


def _vector_values(role: str, key: str, field: str | None = None) -> set[str]:
    """Every string under `key` anywhere in the role's bundled vectors (their expectations); with `field`,
    that field of each object listed under `key`."""
    found = set()

    def walk(value):
        if isinstance(value, dict):
            for k, v in value.items():
                if k == key:
                    items = v if isinstance(v, list) else [v]
                    if field:
                        items = [x.get(field) for x in items if isinstance(x, dict)]
                    found.update(x for x in items if isinstance(x, str))
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
    for doc in _vector_documents(role):
        walk(doc)
    return found


@functools.lru_cache(maxsize=None)
def _vector_documents(role: str) -> tuple:
    """The role's bundled vectors as parsed YAML, read once: used() walks them for several keys."""
    return tuple(yaml.safe_load(path.read_text(encoding="utf-8")) for path in (paths.VECTORS / role).rglob("*.yaml"))


@pytest.fixture(scope="session")
def uses(run_once):
    """used(), worked out once per pytest run: the tests below compare it with the docs and schemas."""
    return run_once("tests/test_protocol_docs.py used()", used)


def used() -> dict[str, set[str]]:
    kernel_calls = set()
    for name in ("fake_providers.py", "kernel_driver.py"):
        kernel_calls |= _literals(ENGINE / name, _compared_to("call"))
    return {
        "warning codes": set(kernel_checks.WARNING_CODES.values()) | _vector_values("kernel", "warnings")
        | _vector_values("kernel", "no_warnings"),
        "diagnostic categories": set(errors.CATEGORIES) | _literals(ENGINE / "kernel_judge.py", _first_argument_of("Needed"))
        | _vector_values("kernel", "diagnostics", "category"),
        "diagnostic kinds": _literals(paths.PACKAGE / "reference" / "kernel.py", lambda n: (
            [k.value for k in n.keywords if k.arg == "kind"] if isinstance(n, ast.Call) else
            n.args.defaults[-1:] if isinstance(n, ast.FunctionDef) and n.args.args[-1:] and n.args.args[-1].arg == "kind"
            else [])),
        "kernel callbacks": kernel_calls,
        "kernel ops": _literals(ENGINE / "kernel_driver.py", _first_argument_of("request")) | {"hello", "stop"},
        "provider callbacks": _literals(ENGINE / "provider_driver.py", _compared_to("call")),
    }


# --- what is documented ---------------------------------------------------------------------------

def table_keys(markdown: str, heading: str) -> set[str]:
    """The backticked first cells of the table under `### heading`, up to the next heading."""
    match = re.search(rf"^### {re.escape(heading)}\n(.*?)(?=^#)", markdown + "\n#", re.S | re.M)
    assert match, f"no '### {heading}' section"
    return set(re.findall(r"^\| `([^`]+)` \|", match.group(1), re.M))


def documented_in_docs(kernel_md: str, provider_md: str) -> dict[str, set[str]]:
    return {
        "warning codes": table_keys(kernel_md, "Warning codes"),
        "diagnostic categories": table_keys(kernel_md, "Diagnostic categories"),
        "diagnostic kinds": table_keys(kernel_md, "Diagnostic kinds"),
        "kernel callbacks": table_keys(kernel_md, "Callbacks"),
        "kernel ops": set(re.findall(r"^### `(\w+)`", kernel_md, re.M)),
        "provider callbacks": table_keys(provider_md, "Callbacks"),
    }


def documented_in_schemas(kernel: dict, provider: dict) -> dict[str, set[str]]:
    d = kernel["$defs"]
    call = provider["$defs"]["Callback"]["properties"]["call"]
    return {
        "warning codes": set(d["LoadResult"]["properties"]["warnings"]["items"]["properties"]["code"].get("examples", [])),
        "diagnostic categories": set(d["Diagnostic"]["properties"]["category"]["enum"]),
        "diagnostic kinds": set(d["Diagnostic"]["properties"]["kind"].get("examples", [])),
        "kernel callbacks": set(d["Callback"]["properties"]["call"]["enum"]),
        "kernel ops": set(d["Request"]["properties"]["op"]["enum"]),
        "provider callbacks": set(call.get("enum", [call.get("const")])),
    }


def missing(uses: dict[str, set[str]], documented: dict[str, set[str]]) -> list[str]:
    return [f"{what}: {name}" for what, names in uses.items() for name in sorted(names - documented[what])]


def _docs():
    return (DOCS / "kernel-protocol.md").read_text(encoding="utf-8"), (DOCS / "provider-protocol.md").read_text(encoding="utf-8")


def _schemas():
    return (json.loads((SCHEMAS / "kernel-protocol.json").read_text()),
            json.loads((SCHEMAS / "provider-protocol.json").read_text()))


def test_the_engine_uses_what_it_is_thought_to(uses):
    # The introspection itself must find something, or the comparisons below would pass vacuously.
    assert uses["warning codes"] == {"budget_sum_exceeds_ceiling", "dynamic_before_static"}
    assert {"non_text_content", "missing_label", "unknown"} <= uses["diagnostic categories"]
    assert {"GetCapabilities", "Configure", "Describe", "Contribute", "CountTokens"} <= uses["kernel callbacks"]
    assert uses["provider callbacks"] == {"CountTokens"} and uses["diagnostic kinds"] == {"rejected", "provider_failed"}
    assert {"load", "assemble", "count_tokens"} <= uses["kernel ops"]


def test_every_code_kind_and_callback_the_engine_uses_is_documented(uses):
    assert missing(uses, documented_in_docs(*_docs())) == []
    assert missing(uses, documented_in_schemas(*_schemas())) == []


def test_a_code_dropped_from_the_docs_or_the_schemas_is_caught(uses):
    kernel_md, provider_md = _docs()
    without = re.sub(r"^\| `dynamic_before_static` \|.*\n", "", kernel_md, flags=re.M)
    assert without != kernel_md
    assert missing(uses, documented_in_docs(without, provider_md)) == ["warning codes: dynamic_before_static"]
    kernel, provider = _schemas()
    broken = copy.deepcopy(kernel)
    broken["$defs"]["Diagnostic"]["properties"]["category"]["enum"].remove("missing_label")
    broken["$defs"]["Callback"]["properties"]["call"]["enum"].remove("Describe")
    assert missing(uses, documented_in_schemas(broken, provider)) == \
        ["diagnostic categories: missing_label", "kernel callbacks: Describe"]


def test_the_readme_links_the_docs_instead_of_design():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "DESIGN" not in readme
    for name in ("kernel-protocol.md", "provider-protocol.md", "writing-a-kernel-shim.md", "writing-a-provider.md",
                 "tracing.md"):
        assert f"docs/{name}" in readme and (DOCS / name).is_file(), name


@pytest.mark.parametrize("role", sorted(transcript.GUIDES))
def test_the_guide_transcript_is_what_a_run_exchanges_today(role):
    guide = transcript.GUIDES[role]
    committed = (ROOT / guide.doc).read_text(encoding="utf-8")
    fresh = transcript.splice(committed, transcript.render(guide, transcript.run(guide)), guide.doc)
    assert fresh == committed, f"{guide.doc} is stale: run python -m conformance.commands.transcript"
    assert "<run dir>" in fresh or role == "kernel"  # the run's temporary directory never leaks in
    assert "/tmp/ctxconf-" not in fresh
