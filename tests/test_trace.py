"""--trace FILE: every message exchanged, per case, over every binding; gRPC in proto3 JSON."""

import collections
import json
import sys

import pytest

from conformance.data import paths
from conformance.bindings import trace
from tests.conftest import REFERENCE_SHIM, ROOT, ctxconf

CASE = "kernel/counting/tokenizer-reached-by-provider-and-model"
GRPC_HARNESS = f"{sys.executable} {paths.RUNNERS / 'python' / 'grpc_kernel_harness.py'} conformance.reference.kernel:create"


def rows(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]


def by_case(found):
    grouped = collections.defaultdict(list)
    for row in found:
        assert set(row) == {"ts", "case", "binding", "direction", "message"}
        assert row["direction"] in (trace.TO_IMPL, trace.FROM_IMPL)
        grouped[row["case"]].append(row)
    return grouped


@pytest.mark.parametrize("target", [[], ["--stdio", REFERENCE_SHIM], ["--grpc-cmd", GRPC_HARNESS]],
                         ids=["python", "stdio", "grpc"])
def test_a_kernel_run_traces_every_op_and_callback(tmp_path, target):
    run = ctxconf("kernel", *target, "-k", CASE, "--no-properties", "--trace", str(tmp_path / "t.jsonl"))
    assert run.returncode == 0, run.stdout + run.stderr
    grouped = by_case(rows(tmp_path / "t.jsonl"))
    assert set(grouped) == {None, CASE}  # None: the launch before the case and the final stop
    text = json.dumps(grouped[CASE])
    for name in ("Load", "GetCapabilities", "Configure", "Assemble", "Contribute", "CountTokens"):
        assert name.lower() in text.lower(), name
    assert "stop" in json.dumps(grouped[None]).lower() and "hello" in json.dumps(grouped[None]).lower()
    binding = {row["binding"] for row in rows(tmp_path / "t.jsonl")}
    assert binding == {"grpc" if target and target[0] == "--grpc-cmd" else "stdio" if target else "python"}


def test_grpc_messages_are_proto3_json_with_their_method_and_status(tmp_path):
    run = ctxconf("kernel", "--grpc-cmd", GRPC_HARNESS, "-k", "kernel/errors/source-unavailable", "--no-properties",
                  "--trace", str(tmp_path / "t.jsonl"))
    assert run.returncode == 0, run.stdout + run.stderr
    found = rows(tmp_path / "t.jsonl")
    contribute = [r["message"] for r in found if r["message"]["rpc"].endswith("ContextService/Contribute")]
    assert "tokenBudget" in contribute[0]["request"]  # lowerCamelCase: json_format's proto3 JSON
    failed = [m["status"] for m in contribute if "status" in m]
    assert failed and failed[0]["code"] == "UNAVAILABLE" and failed[0]["message"] == "CLAUDE.md vanished"
    assert failed[0]["details"][0]["category"] == "CONTEXT_ERROR_CATEGORY_SOURCE_UNAVAILABLE"


def test_a_provider_run_and_a_replay_are_traced(tmp_path):
    run = ctxconf("provider", "-k", "provider/tokens/", "--no-properties", "--trace", str(tmp_path / "p.jsonl"))
    assert run.returncode == 0, run.stdout + run.stderr
    grouped = by_case(rows(tmp_path / "p.jsonl"))
    case = "provider/tokens/figures-come-from-count-tokens"
    assert {r["direction"] for r in grouped[case]} == {trace.TO_IMPL, trace.FROM_IMPL}
    assert any(r["message"].get("call") == "CountTokens" for r in grouped[case])
    vector = ROOT / "vectors/kernel/config/static-before-dynamic-quiet.yaml"
    run = ctxconf("replay", str(vector), "--stdio", REFERENCE_SHIM, "--trace", str(tmp_path / "r.jsonl"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "kernel/config/static-before-dynamic-quiet" in by_case(rows(tmp_path / "r.jsonl"))


def test_a_trace_path_that_is_a_directory_is_bad_usage(tmp_path):
    run = ctxconf("kernel", "-k", CASE, "--no-properties", "--trace", str(tmp_path))
    assert run.returncode == 2 and "--trace" in run.stderr
    (tmp_path / "file").write_text("")
    run = ctxconf("kernel", "-k", CASE, "--no-properties", "--trace", str(tmp_path / "file" / "t.jsonl"))
    assert run.returncode == 2 and "--trace" in run.stderr and "Traceback" not in run.stderr
    run = ctxconf("kernel", "-k", CASE, "--no-properties", "--trace", str(tmp_path / "new" / "t.jsonl"))
    assert run.returncode == 0 and (tmp_path / "new" / "t.jsonl").stat().st_size > 0


def test_nothing_is_traced_or_intercepted_when_no_trace_is_open():
    assert trace._active is None
    trace.record("stdio", trace.TO_IMPL, {"op": "hello"})  # no file, no error
    channel = object()
    assert trace.channel("grpc", channel) is channel and trace.server_interceptors() == ()
