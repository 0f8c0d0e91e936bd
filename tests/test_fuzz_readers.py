"""Fuzzing the suite's own readers (the ci hypothesis profile: a small, derandomized budget). Whatever
a file or a JSON value holds, a reader gives a result or its one documented error: InputError for
vectors, manifests and baselines, WireFormError for the proto JSON forms, HarnessError for what an
implementation writes on stdout. Never anything else."""

import math

import pytest
import yaml
from hypothesis import example, given, strategies as st

from conformance.data import vectors
from conformance.data import manifest
from conformance.data import catalog as catalog_mod
from conformance.data import paths
from conformance.commands import certify
from conformance.bindings.base import HarnessError
from conformance.bindings.jsonlines import JsonLinesProcess
from conformance.data.schemas import InputError, read_yaml
from conformance.wire import forms

SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
# Pieces of YAML that reach the reader's limits (aliases, nesting, long digit runs, bad bytes), mixed with noise.
TOKENS = st.sampled_from([b"[", b"]", b"{", b"}", b"&a ", b"*a", b"<<: ", b"9" * 4400, b"x: ", b"- ", b"\n", b"  ",
                          b",", b"\xff", b"\x00", b"!!binary ", b"!!python/object ", b"2024-13-45", b"\"", b"'"])
YAMLISH = st.lists(TOKENS | st.binary(max_size=8), max_size=60).map(b"".join)
JSON_LIKE = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.text(max_size=12), inner, max_size=4), max_leaves=30)
BUNDLED = sorted(paths.VECTORS.rglob("*.yaml"))


@pytest.fixture(scope="module")
def read_everywhere(tmp_path_factory, catalog):
    """Writes the document to a file and hands it to each reader in turn: only a result or an InputError
    naming the file may come out. (One fixture, so that a falsifying example prints without the catalog.)"""
    path = tmp_path_factory.mktemp("fuzz") / "provider" / "fuzz.yaml"
    path.parent.mkdir()
    readers = [lambda: vectors.load_file(path, catalog), lambda: manifest.load(path),
               lambda: certify._baseline(path, catalog, catalog_mod.PROVIDER_ROLES, {"provider/budget/file-fits-whole"})]

    def read(data: bytes) -> None:
        path.write_bytes(data)
        for reader in readers:
            try:
                reader()
            except InputError as exc:
                assert str(path) in str(exc)
    return read


def _dumped(doc) -> bytes:
    return yaml.safe_dump(doc, allow_unicode=True).encode()


@given(data=YAMLISH | st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_arbitrary_bytes(data, read_everywhere):
    read_everywhere(data)


@given(doc=JSON_LIKE)
def test_structured_documents(doc, read_everywhere):
    read_everywhere(_dumped(doc))


@given(vector=st.sampled_from(BUNDLED), data=st.data())
def test_real_vectors_with_one_part_replaced(vector, data, read_everywhere):
    """Nearer the mark: a bundled vector with one field, at any depth, swapped for any value, so that the
    checks past the schema get exercised too."""
    doc = read_yaml(vector)
    target = doc
    while isinstance(target, (dict, list)) and target and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(target) if isinstance(target, dict) else range(len(target))))
        if not isinstance(target[key], (dict, list)) or not target[key]:
            break
        target = target[key]
    if isinstance(target, (dict, list)) and target:
        key = data.draw(st.sampled_from(sorted(target) if isinstance(target, dict) else range(len(target))))
        target[key] = data.draw(JSON_LIKE)
    read_everywhere(_dumped(doc))


PATHS = st.lists(st.sampled_from(["${workdir}", "${source}", "/", "..", ".", "a", "\x00", "~"]),
                 max_size=8).map("".join)
BASELINE_ENTRY = st.fixed_dictionaries(  # a requirement of the role, of the other role, of none (any value: above)
    {"requirement": st.sampled_from(["P-WITHIN-BUDGET", "K-TOKEN-BUDGET", "P-NOPE"])},
    optional={"case": st.sampled_from(["provider/budget/file-fits-whole"]) | JSON_LIKE, "reason": JSON_LIKE})
SHAPED = (st.lists(BASELINE_ENTRY, max_size=3) | st.fixed_dictionaries({"expected_failures": st.lists(BASELINE_ENTRY)})
          | st.fixed_dictionaries(  # manifests
              {"name": st.text(max_size=5) | SCALARS,
               "config": st.dictionaries(st.text(max_size=5), PATHS | JSON_LIKE)},
              optional={"kind": st.sampled_from(["file-reader", "generic"]) | SCALARS,
                        "bad_config": st.dictionaries(st.text(max_size=5), PATHS | st.lists(PATHS)) | SCALARS}))


@given(doc=SHAPED)
@example(doc=[{"requirement": "P-WITHIN-BUDGET", "case": []}])  # found by fuzzing: a TypeError, now exit 2
def test_documents_shaped_like_baselines_and_manifests(doc, read_everywhere):
    read_everywhere(_dumped(doc))


# JSON objects whose keys are mostly the wire types' own field names (both spellings), nested.
FIELD_NAMES = st.sampled_from(sorted({name for message in forms.TYPES.values() for field in message.DESCRIPTOR.fields
                                      for name in (field.name, field.json_name)})) | st.text(max_size=8)
MESSAGE_LIKE = st.dictionaries(FIELD_NAMES, st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(FIELD_NAMES, inner, max_size=4),
    max_leaves=20), max_size=6)


@given(type_name=st.sampled_from(sorted(forms.TYPES)), doc=MESSAGE_LIKE | JSON_LIKE)
def test_proto_json_forms(type_name, doc):
    for read in (forms.parse, forms.normalize):
        try:
            read(type_name, doc)
        except forms.WireFormError:
            pass


def test_proto_json_forms_known_edges():
    """Plain cases at the edges; the last was found by probing: json_format's SerializeToJsonError leaked
    out of normalize (a NaN in a Struct parses, but has no JSON form)."""
    for type_name, doc in [("ContextRequest", {"token_budget": 10**5000}),
                           ("ContextRequest", {"token_budget": math.nan}),
                           ("ContextRequest", {"session_id": "\ud800"}),
                           ("ConfigureRequest", {"config": _nested(200)}),
                           ("ConfigureRequest", {"config": {"threshold": math.inf}})]:
        with pytest.raises(forms.WireFormError):
            forms.normalize(type_name, doc)


def _nested(depth: int):
    value: object = 1
    for _ in range(depth):
        value = {"a": value}
    return value


# What a launched implementation may write on stdout: noise, JSON at the reader's limits, lines cut short.
STDOUT_TOKENS = st.sampled_from([b"{", b"}", b"[" * 300, b"]", b'"id": ', b"9" * 4400, b"\n", b"\r\n", b"\xff",
                                 b"\x00", b'{"id": 1, "result": {}}\n', b'{"cb": 1, "call": "Contribute"}\n', b"null\n"])


@given(output=st.lists(STDOUT_TOKENS | st.binary(max_size=12), max_size=20).map(b"".join))
def test_json_lines_reader(output, tmp_path_factory):
    """Each message read from a child's stdout is a JSON object or a HarnessError; the reader ends at the
    end of output, and closing leaves nothing behind."""
    folder = tmp_path_factory.mktemp("stdout")
    (folder / "out").write_bytes(output)
    process = JsonLinesProcess("cat out", folder, timeout=2.0)
    process.start()
    try:
        for _ in range(len(output) + 1):  # every message takes at least one byte: this reaches the end
            try:
                assert isinstance(process.receive(), dict)
            except HarnessError as exc:
                if "closed its stdout" in str(exc):
                    break
                assert "no answer within" not in str(exc), "cat wrote all it had: the reader lost the end"
        else:
            pytest.fail("the reader never reported the end of output")
    finally:
        process.close(grace=0.0)
