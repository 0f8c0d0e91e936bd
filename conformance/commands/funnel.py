"""The one path from a connection to case results, for both roles: the golden
vectors, then the property tests. `ctxconf kernel`/`provider`/`replay`/`matrix`
(commands/certify.py) and the self-test both run through it, so a change
to how a run proceeds is made once."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from conformance.bindings import trace
from conformance.engine import kernel_run, provider_run
from conformance.engine.connection import Connection
from conformance.engine.results import CaseResult
from conformance.data.manifest import Manifest
from conformance.properties import CASE_IDS

if TYPE_CHECKING:
    from conformance.properties.runner import PropertyRun


def run_cases(role: str, connection: Connection, vectors: list, run: PropertyRun | None, workdir: Path,
              manifest: Manifest | None = None, on_result: Callable[[CaseResult], None] = lambda r: None,
              on_properties: Callable[[str], None] = lambda what: None,
              on_progress: Callable[[str], None] | None = None) -> list[CaseResult]:
    """Every vector, one case after another, then (with `run`) the property tests as one more case;
    `on_progress` hears how far they have got."""
    if role == "kernel":
        cases = kernel_run.run_vectors(connection, vectors, on_result)
    else:
        cases = provider_run.run_vectors(connection, vectors, manifest, workdir / "cases", on_result)
    if run is not None:
        from conformance.properties.runner import kernel_property, provider_property  # hypothesis: only if asked
        seed = f"seed {run.seed}" if run.seed is not None else "its fixed seed"
        on_properties(f"property tests, profile {run.profile}, {seed}")
        trace.set_case(CASE_IDS[role])
        run = replace(run, progress=on_progress) if on_progress else run
        cases.append(kernel_property(connection, run) if role == "kernel" else
                     provider_property(connection, run, manifest, workdir / "properties"))
        on_result(cases[-1])
    trace.set_case(None)  # what follows (the final stop) belongs to the run, not to the last case
    return cases
