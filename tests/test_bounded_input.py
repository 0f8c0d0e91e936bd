"""Input files that would cost unbounded time or memory, or crash the reader, are refused at
once: exit 2, naming the file, no traceback. Vectors, manifests and baselines share one reader."""

import time
from pathlib import Path

import pytest

from conformance.data.schemas import MAX_DEPTH, MAX_FILE_BYTES
from tests.conftest import ctxconf


def _alias_bomb() -> str:
    """About 400 bytes that a reader expanding aliases turns into 9**10 strings."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    return "\n".join(lines) + "\n"


HOSTILE = {  # name: (file content, words the message must hold)
    "alias-bomb": (_alias_bomb(), "aliases"),
    "unclosed-nesting": ("[" * 200_000, "nesting depth"),
    "deep-nesting": ("x: " + "[" * (MAX_DEPTH + 50) + "]" * (MAX_DEPTH + 50) + "\n", f"more than {MAX_DEPTH}"),
    "huge-int": ("x: " + "9" * 5000 + "\n", "4300 digits"),
    "not-utf8": (b"id: \xff\xfe caf\xe9\n", "not UTF-8"),
    "oversized": ("# padding\n" * (MAX_FILE_BYTES // 10 + 1), "larger than"),
}

ROLES = {  # how each kind of file reaches the reader
    "vector": lambda path: ("replay", str(path)),
    "manifest": lambda path: ("provider", "--manifest", str(path), "--no-properties"),
    "baseline": lambda path: ("kernel", "--baseline", str(path), "--no-properties"),
}


@pytest.mark.parametrize("role", sorted(ROLES))
@pytest.mark.parametrize("hostile", sorted(HOSTILE))
def test_a_hostile_input_file_is_exit_2_at_once(role, hostile, tmp_path):
    content, words = HOSTILE[hostile]
    path = tmp_path / f"{hostile}.yaml"
    (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
    started = time.monotonic()
    run = ctxconf(*ROLES[role](path), timeout=60)
    assert run.returncode == 2, run.stdout[-2000:] + run.stderr[-2000:]
    assert f"ctxconf: error: {path}: " in run.stderr and words in run.stderr, run.stderr[-2000:]
    assert "Traceback" not in run.stderr
    assert time.monotonic() - started < 30


def test_the_bundled_files_use_no_aliases_and_stay_shallow():
    """What the reader refuses, the suite's own files never needed (so the limits cost nothing)."""
    from conformance.data import paths
    from conformance.data.schemas import read_yaml
    files = list(paths.VECTORS.rglob("*.yaml")) + list((paths.EXAMPLES / "manifests").glob("*.yaml"))
    assert len(files) > 20
    for path in files:
        read_yaml(Path(path))


def test_a_request_figure_past_the_protos_range_is_refused_on_load(catalog, tmp_path):
    """The schema says integer; the proto says int32 or int64. A vector asking for more is exit 2 on load,
    not a crash in the middle of the run."""
    import yaml
    from conformance.data import vectors
    from conformance.data.schemas import InputError
    doc = {"id": "provider/x/y", "title": "t", "requirements": ["P-SOURCE-UNAVAILABLE"],
           "steps": [{"configure": {}}, {"contribute": {"model_target": {"context_window": 10**30}},
                                         "expect": {"P-SOURCE-UNAVAILABLE": {"own_sections": {"min": 1}}}}]}
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError, match=r"steps\[1\]\.contribute: .*context_window"):
        vectors.load_file(path, catalog)


def test_a_vector_whose_id_names_no_role_is_refused_naming_both_forms(tmp_path):
    """A hand-written provider vector given a `dispute/...` id was refused with the kernel id pattern alone."""
    path = tmp_path / "mine.yaml"
    path.write_text("id: dispute/stability/mine\ntitle: t\norigin: {tool: hand-written}\nsteps: []\n")
    run = ctxconf("replay", str(path), "--python", "conformance.reference.filereader:create",
                  "--manifest", "examples/manifests/filereader.yaml")
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "mine.yaml" in run.stderr and "kernel/<group>/<name> or provider/<group>/<name>" in run.stderr


def _nested(levels: int) -> bytes:
    """A JSON line `levels` deep: an object holding lists nested inside each other."""
    return b'{"id": 1, "deep": ' + b"[" * (levels - 1) + b"]" * (levels - 1) + b"}"


def test_a_message_nested_past_the_cap_is_refused_and_one_at_the_cap_is_read(tmp_path):
    """The line's brackets are counted before the parsed message is walked: the count may only let
    through what the walk would let through."""
    from conformance.bindings.base import HarnessError
    from conformance.bindings.jsonlines import JsonLinesProcess
    process = JsonLinesProcess("true", tmp_path, 1.0)  # never started: _parse needs no child
    assert process._parse(_nested(MAX_DEPTH))["id"] == 1
    with pytest.raises(HarnessError, match=f"nested deeper than {MAX_DEPTH} levels"):
        process._parse(_nested(MAX_DEPTH + 1))
    brackets_in_a_string = b'{"id": 2, "text": "' + b"[{" * 100 + b'"}'
    assert process._parse(brackets_in_a_string)["id"] == 2  # many brackets, but not deep


JSON_HOSTILE = {  # the JSON reports `ctxconf diff` reads go through the same caps
    "unclosed-nesting": ("[" * 200_000, "nested too deeply"),
    "deep-nesting": ("[" * (MAX_DEPTH + 50) + "]" * (MAX_DEPTH + 50), f"more than {MAX_DEPTH}"),
    "huge-int": ("9" * 5000, "4300 digits"),
    "not-utf8": (b'{"id": "caf\xe9"}', "not UTF-8"),
    "oversized": (" " * (MAX_FILE_BYTES + 1) + "{}", "larger than"),
    "not-json": ("{'single': 'quotes'}", "not a JSON report"),
}


@pytest.mark.parametrize("hostile", sorted(JSON_HOSTILE))
def test_a_hostile_report_given_to_diff_is_exit_2_at_once(hostile, tmp_path):
    content, words = JSON_HOSTILE[hostile]
    path = tmp_path / f"{hostile}.json"
    (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
    run = ctxconf("diff", str(path), str(path), timeout=60)
    assert run.returncode == 2, run.stdout[-2000:] + run.stderr[-2000:]
    assert f"ctxconf: error: {path}: " in run.stderr and words in run.stderr, run.stderr[-2000:]
    assert "Traceback" not in run.stderr
