"""The benchmark's --check: its exit code follows the targets. The figures are injected: a unit test times
nothing (the benchmark itself is run by hand, see README "Speed")."""

from __future__ import annotations

import importlib.util

import pytest

from conformance.data import paths

spec = importlib.util.spec_from_file_location("benchmark", paths.RUNNERS / "benchmark.py")
benchmark = importlib.util.module_from_spec(spec)
spec.loader.exec_module(benchmark)


def rows(stdio_ratio: float, in_process_us: float) -> list[dict]:
    def row(name, trip, ratio=None):
        return {"name": name, "trip": trip, "bare": trip / ratio if ratio else None, "ratio": ratio}
    return [row("python, null kernel", in_process_us / 1e6), row("stdio, null kernel", 40e-6, stdio_ratio),
            row("gRPC, null kernel", 1e-3, 9.0), row("stdio JSON echo", 20e-6, 1.2), row("stdio shim alone", 30e-6, 1.5)]


@pytest.mark.parametrize("stdio, in_process, code, missed", [
    (1.9, 99, 0, []),
    (2.0, 100, 0, []),  # at the target is within it
    (2.1, 50, 1, ["stdio binding 2.1x"]),
    (1.5, 101, 1, ["in-process suite work 101 us"]),
    (3.0, 150, 1, ["stdio binding 3.0x", "in-process suite work 150 us"]),
])
def test_check_exits_1_exactly_when_a_target_is_missed(stdio, in_process, code, missed, capsys):
    seen = []

    def measure(firings, repeats):
        seen.append((firings, repeats))
        return rows(stdio, in_process)

    assert benchmark.main(["--check", "--firings", "7", "--repeats", "2"], measure=measure) == code
    out = capsys.readouterr().out
    assert seen == [(7, 2)]
    said = [line for line in out.splitlines() if line.startswith("MISSED")]
    assert len(said) == len(missed) and all(any(m in line for line in said) for m in missed)
    assert ("targets: missed" if missed else "targets: met") in out
    assert "gRPC binding vs its bare transport (null kernel): 9.0x" in out  # reported, never checked


def test_without_check_the_figures_are_printed_and_the_exit_is_0(capsys):
    assert benchmark.main([], measure=lambda firings, repeats: rows(5.0, 500)) == 0
    out = capsys.readouterr().out
    assert "MISSED" not in out and "5.0x" in out and "500 us" in out
