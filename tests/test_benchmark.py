"""The benchmark's --check: its exit code follows the targets. The figures are injected: a unit test times
nothing (the benchmark itself is run by hand, see docs/speed.md)."""

from __future__ import annotations

import importlib.util

import pytest

from conformance.data import paths
from conformance.properties.runner import ScenarioTiming

spec = importlib.util.spec_from_file_location("benchmark", paths.RUNNERS / "benchmark.py")
benchmark = importlib.util.module_from_spec(spec)
spec.loader.exec_module(benchmark)


def rows(stdio_ratio: float, grpc_ratio: float, in_process_us: float) -> list[dict]:
    def row(name, trip, floor_name=None, ratio=None):
        return {"name": name, "trip": trip, "floor name": floor_name, "floor": trip / ratio if ratio else None,
                "ratio": ratio}
    return [row("stdio shim alone", 30e-6, "bare echo", 2.5), row("python, null kernel", in_process_us / 1e6),
            row("stdio, null kernel", 40e-6, "shim alone", stdio_ratio),
            row("gRPC, null kernel", 1e-3, "bare unary call", grpc_ratio)]


@pytest.mark.parametrize("stdio, grpc, in_process, code, missed", [
    (1.2, 1.4, 19, 0, []),
    (1.25, 1.5, 20, 0, []),  # at the target is within it
    (1.26, 1.0, 10, 1, ["stdio binding 1.26x"]),
    (1.0, 1.51, 10, 1, ["gRPC binding 1.51x"]),
    (1.0, 1.0, 20.1, 1, ["in-process suite work 20.1 us"]),
    (3.0, 2.0, 150, 1, ["stdio binding 3.00x", "gRPC binding 2.00x", "in-process suite work 150.0 us"]),
])
def test_check_exits_1_exactly_when_a_target_is_missed(stdio, grpc, in_process, code, missed, capsys):
    seen = []

    def measure(firings, rounds):
        seen.append((firings, rounds))
        return rows(stdio, grpc, in_process)

    assert benchmark.main(["--check", "--firings", "7", "--rounds", "2"], measure=measure) == code
    out = capsys.readouterr().out
    assert seen == [(7, 2)]
    said = [line for line in out.splitlines() if line.startswith("MISSED")]
    assert len(said) == len(missed) and all(any(m in line for line in said) for m in missed)
    assert ("targets: missed" if missed else "targets: met") in out
    assert f"stdio binding / shim alone: {stdio:.2f}x" in out and f"gRPC binding / bare unary call: {grpc:.2f}x" in out


def test_without_check_the_figures_are_printed_and_the_exit_is_0(capsys):
    assert benchmark.main([], measure=lambda firings, rounds: rows(5.0, 3.0, 500)) == 0
    out = capsys.readouterr().out
    assert "MISSED" not in out and "5.00x" in out and "500.0 us" in out


def test_the_property_timings_are_printed_per_scenario():
    out = benchmark.render_timings([ScenarioTiming(0.002, 0.010, 0.001), ScenarioTiming(0.004, 0.020, 0.003)])
    lines = out.splitlines()
    assert lines[3].split() == ["1", "2.00", "10.00", "1.00"] and lines[4].split() == ["2", "4.00", "20.00", "3.00"]
    assert lines[5].split() == ["total", "6.00", "30.00", "4.00"] and lines[6].split() == ["median", "3.00", "15.00",
                                                                                            "2.00"]


def test_a_property_run_times_every_scenario_it_tries_and_judges_as_without():
    from conformance.bindings.base import KERNEL_PROTOCOL
    from conformance.bindings.python import PythonBinding
    from conformance.engine.connection import Connection
    from conformance.properties.runner import PropertyRun, kernel_property

    def run(timings):
        with Connection(lambda: PythonBinding("conformance.reference.kernel:create", KERNEL_PROTOCOL, 10)) as c:
            result = kernel_property(c, PropertyRun(profile="ci", examples=4, shrink=False, timings=timings))
        return [(f.requirement, f.passed) for f in result.findings], result.error

    timings: list = []
    assert run(timings) == run(None)
    assert timings and len(timings) <= 4
    assert all(t.generating > 0 and t.driving > 0 and t.judging > 0 for t in timings)
