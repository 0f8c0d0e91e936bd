"""--jobs N: the vectors over N worker processes, each with an implementation of its own; the report is the
serial run's, timings aside."""

from __future__ import annotations

import json
import re

import pytest

from conformance.bindings import trace
from conformance.data import vectors as vectors_mod
from conformance.engine.connection import Connection
from conformance.engine.results import CaseResult
from tests.conftest import REFERENCE_SHIM, SHIM, ctxconf

MUTANT = f"{SHIM} conformance.proofs.kernel_mutants:AlphabeticalOrder"  # fails some vectors, passes the rest


def comparable(path) -> dict:
    """The report without its timings: everything else must not depend on how the cases were spread."""
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "seconds"}
        return [strip(v) for v in value] if isinstance(value, list) else value
    return strip(json.loads(path.read_text()))


def progress_lines(stderr: str) -> list[str]:
    return re.findall(r"^\[\d+/\d+\] (?:pass|fail|error|skip|xfail) +(\S+)", stderr, re.M)


# The properties run in the main process either way; the mutant's, over stdio, would only add its
# counterexample's shrinking twice, so that run is of the vectors alone (their failures are compared).
@pytest.mark.parametrize("role, target", [("kernel", ("--examples", "5")), ("kernel", ("--stdio", MUTANT, "--no-properties")),
                                          ("provider", ("--examples", "5"))],
                         ids=["kernel-in-process", "kernel-stdio-mutant", "provider-in-process"])
def test_a_parallel_run_reports_exactly_what_a_serial_run_reports(role, target, tmp_path):
    common = (*target, "--profile", "ci")
    serial = ctxconf(role, *common, "--report", str(tmp_path / "serial.json"))
    parallel = ctxconf(role, *common, "--jobs", "3", "--report", str(tmp_path / "jobs.json"))
    failing = "--stdio" in target
    assert serial.returncode == parallel.returncode == (1 if failing else 0), parallel.stderr
    one, other = comparable(tmp_path / "serial.json"), comparable(tmp_path / "jobs.json")
    assert one == other
    assert one != {**other, "cases": other["cases"][:-2] + other["cases"][-1:]}  # a case dropped would show
    if failing:
        assert any(case["status"] == "fail" for case in other["cases"])  # failures, with their messages, compared
    else:
        assert other["cases"][-1]["id"] == f"property/{role}/generated-{'scenarios' if role == 'kernel' else 'requests'}"
    # progress: one line per case, every case, whatever order the workers finished in
    assert sorted(progress_lines(parallel.stderr)) == sorted(case["id"] for case in other["cases"])


def test_each_worker_launches_an_implementation_of_its_own(tmp_path):
    """The shim's parent is the process that launched it: the run's first start, then each worker."""
    parents = tmp_path / "parents"
    command = f"sh -c 'echo $PPID >> {parents}; exec {REFERENCE_SHIM}'"
    run = ctxconf("kernel", "--stdio", command, "--no-properties", "--jobs", "2")
    assert run.returncode == 0, run.stderr
    assert len(set(parents.read_text().split())) == 3  # the main process's first start, and two workers


def test_a_parallel_trace_holds_each_case_whole_in_the_order_of_the_vectors(tmp_path, catalog):
    serial, parallel = tmp_path / "serial.jsonl", tmp_path / "jobs.jsonl"
    assert ctxconf("kernel", "--no-properties", "--trace", str(serial)).returncode == 0
    assert ctxconf("kernel", "--no-properties", "--jobs", "2", "--trace", str(parallel)).returncode == 0

    def by_case(path):
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        order = [line["case"] for line in lines if line["case"]]
        ops = {}
        for line in lines:
            if line["case"] and line["direction"] == "to_impl" and "op" in line["message"]:
                ops.setdefault(line["case"], []).append(line["message"]["op"])
        return [case for i, case in enumerate(order) if i == 0 or order[i - 1] != case], ops

    vectors = [v.id for v in vectors_mod.load_dir("kernel", catalog)]
    serial_order, serial_ops = by_case(serial)
    parallel_order, parallel_ops = by_case(parallel)
    assert parallel_order == serial_order == [v for v in vectors if v in serial_order]  # each case whole, in order
    drop_hello = lambda ops: {case: [op for op in found if op != "hello"] for case, found in ops.items()}
    assert drop_hello(parallel_ops) == drop_hello(serial_ops)  # (each worker says hello to its own kernel)


@pytest.mark.parametrize("value, words", [("0", "at least 1"), ("x", "invalid"), ("-2", "at least 1")])
def test_a_bad_jobs_value_is_exit_2_naming_the_option(value, words):
    run = ctxconf("kernel", "--jobs", value)
    assert run.returncode == 2 and "--jobs" in run.stderr and words in run.stderr, run.stderr


def test_jobs_with_one_running_implementation_is_exit_2():
    run = ctxconf("kernel", "--jobs", "2", "--grpc", "unix:/nonexistent/harness.sock")
    assert run.returncode == 2 and "--jobs" in run.stderr and "--grpc" in run.stderr, run.stderr


class _ReloadingBinding:
    """Reused from case to case (reload); closing it says it had to be killed."""
    name, features, implementation, broken, stopped = "fake", ("reload",), {}, False, False
    closing_note = None

    def start(self) -> dict:
        trace.record(self.name, "to_impl", {"op": "hello"})
        return {}

    def close(self) -> None:
        trace.record(self.name, "to_impl", {"op": "stop"})
        self.closing_note = "the implementation did not exit after stop; it was killed"

    def stderr(self) -> str:
        return ""


def test_a_fresh_case_owns_the_restart_it_asks_for(tmp_path):
    # The stop of the implementation a fresh case will not share is that case's, in the trace and in the
    # report: the case before it is done (in a parallel run, another worker may have served it).
    earlier, fresh = CaseResult("kernel/a", "a"), CaseResult("kernel/b", "b")
    with trace.to_file(tmp_path / "trace.jsonl"), Connection(_ReloadingBinding) as connection:
        connection.run(earlier, lambda binding: None)
        trace.set_case(None)  # as a worker's run_cases leaves it between cases
        connection.run(fresh, lambda binding: None, fresh=True)
        trace.set_case(None)
    lines = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    assert [(line["case"], line["message"]["op"]) for line in lines] == [
        ("kernel/a", "hello"), ("kernel/b", "stop"), ("kernel/b", "hello"), (None, "stop")]
    assert earlier.error is None and "did not exit after stop" in fresh.error
