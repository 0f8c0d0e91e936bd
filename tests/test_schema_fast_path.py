"""The fast schema check (jsonschema-rs, conformance/schemas.is_valid) says "valid" exactly when jsonschema,
which words the errors, does: on every value the suite validated during real runs (vectors loaded, kernels
and providers certified in-process and over stdio), on mutations of those values, and on values built from
each schema's own vocabulary."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from conformance.data import vectors as vectors_mod
from conformance.data import catalog as catalog_mod
from conformance.data import schemas
from conformance.data import paths
from tests.conftest import REFERENCE_SHIM, SHIM, certify_provider, certify_python, certify_stdio

SCHEMA_FILES = sorted(p.name for p in paths.SCHEMAS.glob("*.json"))


def every_ref() -> list[str]:
    refs = []
    for name in SCHEMA_FILES:
        document = json.loads((paths.SCHEMAS / name).read_text())
        refs += [name] + [f"{name}#/$defs/{d}" for d in document.get("$defs", {})]
    return refs


def agree(ref: str, value) -> None:
    expected = schemas.validator(ref).is_valid(value)
    assert schemas.is_valid(ref)(value) == expected, f"{ref}: jsonschema says {expected} for {value!r}"


# Valid messages of the branches the reference implementations never take: error replies, a CountTokens
# callback (no provider), a callback answered with an error.
OTHER_BRANCHES = [
    ("kernel-protocol.json#/$defs/Reply", {"id": 2, "error": {"code": "INTERNAL", "message": "boom"}}),
    ("provider-protocol.json#/$defs/Reply", {"id": 3, "error": {"code": "INVALID_ARGUMENT", "message": "no",
                                                                "details": [{"@type": "x"}]}}),
    ("kernel-protocol.json#/$defs/Callback", {"cb": 0, "call": "CountTokens", "request": {}}),
    ("kernel-protocol.json#/$defs/CallbackAnswer", {"cb": 1, "error": {"code": "UNAVAILABLE", "message": ""}}),
    ("kernel-protocol.json#/$defs/CallbackAnswer", {"cb": 1, "result": {}}),
]


@pytest.fixture(scope="session")
def validated(tmp_path_factory, run_once):
    """(ref, value) for every value the suite validates in a few real runs (run once per pytest run)."""
    return run_once("tests/test_schema_fast_path.py validated", lambda: _validated(tmp_path_factory))


def _validated(tmp_path_factory) -> list[tuple[str, object]]:
    seen: list[tuple[str, object]] = []
    original = schemas.problems

    def spy(ref, data):
        seen.append((ref, json.loads(json.dumps(data))))
        return original(ref, data)

    schemas.problems = spy
    try:
        catalog = catalog_mod.load()
        kernel = vectors_mod.load_dir("kernel", catalog)
        provider = vectors_mod.load_dir("provider", catalog)
        from conformance.reference.kernel import create
        from conformance.reference.filereader import create as filereader
        certify_python(create, kernel[:25])
        certify_stdio(REFERENCE_SHIM, kernel[:8], tmp_path_factory.mktemp("stdio"))
        certify_provider(filereader, "filereader", provider[:6], tmp_path_factory.mktemp("provider"),
                         f"{SHIM} conformance.reference.filereader:create")
    finally:
        schemas.problems = original
    for ref, value in OTHER_BRANCHES:  # what the reference runs never send
        assert schemas.validator(ref).is_valid(value), (ref, value)
        seen.append((ref, value))
    assert {"kernel-protocol.json#/$defs/Callback", "kernel-protocol.json#/$defs/Reply",
            "kernel-protocol.json#/$defs/AssembleResult", "provider-protocol.json#/$defs/Reply"} <= {r for r, _ in seen}
    return seen


def test_agrees_on_every_value_of_real_runs(validated):
    for ref, value in validated:
        agree(ref, value)


BOUNDARIES = (-1, 0, 1.0, 1.5, "", "x", True, None, [], {})


def one_leaf_changed(value, depth: int = 4):
    """Copies of `value` with one member (up to `depth` levels down) replaced by a boundary value, or removed."""
    if depth == 0:
        return
    if isinstance(value, dict):
        for key, member in value.items():
            yield {k: v for k, v in value.items() if k != key}
            for other in (*BOUNDARIES, *one_leaf_changed(member, depth - 1)):
                yield {**value, key: other}
    elif isinstance(value, list):
        for at, member in enumerate(value[:2]):
            for other in (*BOUNDARIES, *one_leaf_changed(member, depth - 1)):
                yield value[:at] + [other] + value[at + 1:]


def test_agrees_when_any_one_member_of_a_real_message_changes(validated):
    """The messages an implementation sends, each changed in every way one member can change."""
    by_ref: dict[str, set[str]] = {}
    for ref, value in validated:
        if "-protocol.json#" in ref:
            by_ref.setdefault(ref, set()).add(json.dumps(value, sort_keys=True))
    for ref, texts in sorted(by_ref.items()):
        small = [json.loads(text) for text in sorted(texts, key=len)[:6]]  # every member within reach
        for value in small:
            for changed in one_leaf_changed(value):
                agree(ref, changed)
        for a in small:  # members one message lacks: a reply with both a result and an error, say
            for b in small:
                agree(ref, {**a, **b})


def test_a_disagreement_would_be_seen():
    # The check above is only worth something if it can fail: a validator that says yes to everything does.
    ref = "kernel-protocol.json#/$defs/Reply"
    assert schemas.validator(ref).is_valid({"id": "x"}) is False and schemas.is_valid(ref)({"id": "x"}) is False
    with pytest.raises(AssertionError):
        original = schemas.is_valid
        schemas.is_valid = lambda r: (lambda value: True)
        try:
            agree(ref, {"id": "x"})
        finally:
            schemas.is_valid = original


SCALARS = (st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.0, 1.0, 1.5, -1.0, float("nan")])
           | st.text(max_size=4))


def vocabulary(ref: str):
    """Values made of the words the schema uses (its property names, enum values and constants) and noise."""
    document = json.loads((paths.SCHEMAS / ref.partition("#")[0]).read_text())
    keys, leaves = set(), []

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "properties" and isinstance(value, dict):
                    keys.update(value)
                if key in ("enum", "examples") and isinstance(value, list):
                    leaves.extend(v for v in value if not isinstance(v, (dict, list)))
                if key == "const":
                    leaves.append(value)
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(document)
    leaf = SCALARS | st.sampled_from(leaves or [None])
    key = st.sampled_from(sorted(keys) or ["x"]) | st.text(max_size=3)
    return st.recursive(leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(key, inner, max_size=6),
                        max_leaves=25)


@pytest.mark.parametrize("name", SCHEMA_FILES)
@settings(max_examples=50)
@given(data=st.data())
def test_agrees_on_values_built_from_the_schemas_words(name, data):
    refs = [r for r in every_ref() if r.partition("#")[0] == name]
    ref = data.draw(st.sampled_from(refs))
    agree(ref, data.draw(vocabulary(ref)))


def mutate(value, draw):
    """One random change somewhere in a JSON value: a key dropped or replaced, an item dropped, a leaf swapped."""
    if isinstance(value, dict) and value and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(value)))
        choice = draw(st.integers(0, 2))
        if choice == 0:
            return {k: v for k, v in value.items() if k != key}
        if choice == 1:
            return {**value, key: draw(SCALARS | st.just([]) | st.just({}))}
        return {**value, key: mutate(value[key], draw)}
    if isinstance(value, list) and value and draw(st.booleans()):
        at = draw(st.integers(0, len(value) - 1))
        if draw(st.booleans()):
            return value[:at] + value[at + 1:]
        return value[:at] + [mutate(value[at], draw)] + value[at + 1:]
    return draw(SCALARS | st.just([]) | st.just({}))


@settings(max_examples=200)
@given(data=st.data())
def test_agrees_on_mutations_of_real_values(validated, data):
    ref, value = data.draw(st.sampled_from(validated))
    agree(ref, mutate(value, data.draw))
