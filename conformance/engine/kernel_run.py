"""Certify a kernel: every case through one connection, each judged."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterable

from conformance.bindings.base import Binding
from conformance.engine import kernel_checks
from conformance.data import sweep
from conformance.engine.connection import Connection
from conformance.engine.kernel_driver import drive
from conformance.engine.results import CaseResult, split_harness, suite_defect
from conformance.engine.scenario import KernelScenario, from_vector
from conformance.data.vectors import Vector


# What each feature a vector may need is, in the words of a verdict that names what was not exercised.
FEATURES = {"real_transport": "a real transport (gRPC)", "count_tokens": "the count_tokens op",
            "concurrent_callbacks": "a binding that sees calls made at the same time (python or gRPC)",
            "launch_plugins": "the plugin-launching mode (--launch-plugins)"}


def case_result(case_id: str, title: str, scenario: KernelScenario | None, connection: Connection,
                requirements: tuple[str, ...] = (), rulings: tuple[str, ...] = (), needs: tuple[str, ...] = (),
                source: str = "", sub_runs: tuple[tuple[str, KernelScenario], ...] = (),
                fresh: bool = False) -> CaseResult:
    """One case: the scenario (None: there is none as written, only `--at`'s sub-run), then each sub-run of a
    sweep (label, scenario). A sub-run is a new `load`, on the same process when the kernel offers `reload`
    (else a fresh one, as for any case); the first that errs ends the case. `fresh`: the case's first load is
    the first its kernel process serves."""
    result = CaseResult(case_id, title, requirements, rulings, source=source)
    seconds = 0.0
    for index, (label, run) in enumerate((() if scenario is None else (("", scenario),)) + sub_runs):
        connection.run(result, _player(result, run, needs, label), fresh=fresh and index == 0)
        seconds += result.seconds
        if result.error or result.skipped:
            break
    result.seconds = seconds
    return result


def _player(result: CaseResult, scenario: KernelScenario, needs: tuple[str, ...], label: str):
    def play(binding: Binding) -> str | None:
        missing = [n for n in needs if n not in binding.features]
        if missing:
            result.needs = " and ".join(FEATURES.get(n, n) for n in missing)
            result.skipped = f"needs {result.needs}, which the {binding.name} binding does not offer"
            return None
        transcript = drive(binding, scenario)
        try:
            findings = kernel_checks.check_case(scenario, transcript)
        except Exception:
            findings, transcript.error = [], suite_defect("judging this case", transcript.error)
        found, harness = split_harness(findings)
        # A finding is frozen: outside a sub-run (no label) it is kept as it is, not copied unchanged.
        result.findings += [replace(f, where=sweep.named(label, f.where)) for f in found] if label else found
        error = transcript.error or harness
        return sweep.named(label, error) if error else None

    return play


def run_vectors(connection: Connection, vectors: Iterable[Vector],
                on_result: Callable[[CaseResult], None] = lambda r: None) -> list[CaseResult]:
    results = []
    for vector in vectors:
        result = case_result(vector.id, vector.title, None, connection, vector.requirements, vector.rulings,
                             vector.needs, str(vector.path),
                             tuple((run.label, from_vector(run.doc)) for run in vector.sub_runs()), vector.fresh)
        on_result(result)
        results.append(result)
    return results
