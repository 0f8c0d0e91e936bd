"""Certify a provider: every case that applies to it, through one connection."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterable

from conformance.bindings.base import Binding
from conformance.engine import provider_checks
from conformance.data import sweep
from conformance.engine.connection import Connection
from conformance.data.provider_cases import from_vector
from conformance.engine.provider_driver import ProviderTranscript, case_directory, drive, emptied
from conformance.engine.results import CaseResult, suite_defect
from conformance.data.manifest import Manifest
from conformance.data.vectors import Vector


def applies(applies_to: str, manifest: Manifest, capabilities: dict) -> tuple[str, str | None] | None:
    """None when a case applies to this provider; otherwise why not, and what would let it run
    (None when nothing would: it is for another kind of provider)."""
    compactor = bool(capabilities.get("compactor"))
    if applies_to == "file-reader" and not manifest.reads_files:
        return "for file readers (the manifest's kind is not file-reader)", "a file-reader manifest, if it reads files"
    if applies_to == "declares-source" and not (manifest.reads_files or manifest.bad_config is not None):
        return ("for providers whose config names a source (the manifest is not a file reader's and gives no "
                "bad_config)", "a file-reader manifest, or a bad_config naming a source that does not exist")
    if applies_to == "compactor" and not compactor:
        return "for compactors", None
    if applies_to == "non-compactor" and compactor:
        return "for providers that are not compactors", None
    return None


def unserved(transcript: ProviderTranscript) -> tuple[str, str] | None:
    """When a step could not be put to this provider, the case shows nothing, its other steps included
    (they are controls for that step): why, and what would let it run."""
    record = next((record for record in transcript.records if record.unserved), None)
    if record is None:
        return None
    needs = ("a manifest whose config puts ${source} in the field naming the source" if record.step.spec.get("bad")
             else "a config_schema that marks required a field the manifest's config sets, if it has one")
    return f"not one this provider can be put to: {record.unserved}", needs


def run_vectors(connection: Connection, vectors: Iterable[Vector], manifest: Manifest, run_dir: Path,
                on_result: Callable[[CaseResult], None] = lambda r: None) -> list[CaseResult]:
    results = []
    for vector in vectors:
        results.append(_run_vector(connection, vector, manifest, run_dir))
        on_result(results[-1])
    return results


def _run_vector(connection: Connection, vector: Vector, manifest: Manifest, run_dir: Path) -> CaseResult:
    result = CaseResult(vector.id, vector.title, vector.requirements, vector.rulings, source=str(vector.path))

    def play(binding: Binding) -> str | None:
        """Every sub-run of the case on this binding (a sweep's values are not new processes); the first
        one that errs ends the case. Sub-runs start from the capabilities the first run was given."""
        capabilities, folder = None, case_directory(run_dir, vector.id)
        for number, run in enumerate(vector.sub_runs()):
            case = from_vector(run.doc, number, run.last_step)
            transcript = drive(binding, case, manifest, emptied(folder) if number else folder, capabilities)
            capabilities = transcript.capabilities
            reason = applies(case.applies_to, manifest, transcript.capabilities or {}) or unserved(transcript)
            if reason:
                result.skipped, result.needs = f"the case is {reason[0]}", reason[1]
                return transcript.error
            try:
                found = provider_checks.check_case(transcript, manifest)
                # A finding is frozen: outside a sub-run (no label) it is kept as it is, not copied unchanged.
                result.findings += [replace(f, where=sweep.named(run.label, f.where)) for f in found] if run.label \
                    else found
            except Exception:
                transcript.error = suite_defect("judging this case", transcript.error)
            if transcript.error:
                return sweep.named(run.label, transcript.error)
        return None

    return connection.run(result, play, fresh=vector.fresh)
