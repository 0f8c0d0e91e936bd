"""The self-test: the suite proves each of its checks can fail.

The reference implementations must pass every vector and property with no
failure. Every mutant must be caught: at least one of the requirements it
breaks reported failing. The kill matrix shows, for each mutant, what caught
it and whether the golden vectors or only the property tests did; it names
any survivor and any testable requirement no mutant exercises.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from conformance import catalog as catalog_mod, manifest as manifest_mod, paths, vectors as vectors_mod
from conformance.bindings.base import KERNEL_PROTOCOL, PROVIDER_PROTOCOL
from conformance.bindings.grpc_kernel import GrpcKernelBinding
from conformance.bindings.python import PythonBinding
from conformance.engine import kernel_run, provider_run
from conformance.engine.connection import Connection
from conformance.engine.results import CaseResult
from conformance.properties.runner import PropertyRun, kernel_property, provider_property
from conformance.proofs import kernel_mutants, provider_mutants
from conformance.reference import compactor, filereader, kernel

MANIFESTS = paths.PACKAGE / "reference" / "manifests"
PROPERTY_ONLY_EXAMPLES = 300  # property-only mutants hide in corners; give the search room


@dataclass
class Subject:
    """One implementation the self-test certifies."""
    name: str
    role: str                  # kernel | provider
    factory: object
    manifest: str = ""
    breaks: tuple[str, ...] = ()
    also: tuple[str, ...] = ()
    property_only: bool = False
    grpc_command: str = ""     # certified over the gRPC binding instead (a deadline needs a real transport)

    @property
    def reference(self) -> bool:
        return not self.breaks


@dataclass
class Outcome:
    subject: Subject
    by_vectors: set[str] = field(default_factory=set)
    by_properties: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def caught(self) -> set[str]:
        return self.by_vectors | self.by_properties

    @property
    def killed(self) -> bool:
        return bool(set(self.subject.breaks) & self.caught)

    @property
    def stray(self) -> set[str]:
        return self.caught - set(self.subject.breaks) - set(self.subject.also)

    @property
    def problem(self) -> str:
        """What is wrong with this row of the matrix, or an empty string."""
        s = self.subject
        if self.errors:
            return "errored: " + self.errors[0].splitlines()[0]
        if s.reference:
            return f"reference failed {sorted(self.caught)}" if self.caught else ""
        if not self.killed:
            return "SURVIVED"
        if s.property_only and set(s.breaks) & self.by_vectors:
            return "caught by the vectors, though declared property-only"
        if s.property_only and not set(s.breaks) & self.by_properties:
            return "property-only, but the properties missed it"
        return ""


def subjects() -> list[Subject]:
    found = [Subject("ReferenceKernel", "kernel", kernel.ReferenceKernel),
             Subject("FileReader", "provider", filereader.FileReader, "filereader"),
             Subject("Compactor", "provider", compactor.Compactor, "compactor")]
    found += [Subject(n, "kernel", c, "", c.breaks, c.also, c.property_only) for n, c in kernel_mutants.MUTANTS.items()]
    found += [Subject(n, "provider", c, c.manifest, c.breaks, c.also, c.property_only)
              for n, c in provider_mutants.MUTANTS.items()]
    harness = f"{sys.executable} {paths.RUNNERS / 'python' / 'grpc_kernel_harness.py'} conformance.reference.kernel:create"
    found += [Subject("ReferenceKernelOverGrpc", "kernel", None, grpc_command=harness),
              Subject("HarnessWithoutDeadline", "kernel", None, breaks=("K-TIMEOUT",),
                      grpc_command=harness + " --no-deadline")]
    return found


def certify(subject: Subject, profile: str, seed: int | None) -> Outcome:
    """Vectors, then properties (no shrinking: the self-test needs the verdict, not the smallest case)."""
    started = time.perf_counter()
    catalog = catalog_mod.load()
    examples = PROPERTY_ONLY_EXAMPLES if subject.property_only else None
    run = PropertyRun(profile=profile, seed=seed, examples=examples, shrink=False)
    protocol = KERNEL_PROTOCOL if subject.role == "kernel" else PROVIDER_PROTOCOL
    outcome = Outcome(subject)
    with tempfile.TemporaryDirectory(prefix="ctxconf-selftest-") as workdir, \
            Connection(_opener(subject, protocol, Path(workdir))) as connection:
        vectors = vectors_mod.load_dir(subject.role, catalog)
        if subject.role == "kernel":
            cases = kernel_run.run_vectors(connection, vectors)
            prop = kernel_property(connection, run)
        else:
            manifest = manifest_mod.load(MANIFESTS / f"{subject.manifest}.yaml")
            cases = provider_run.run_vectors(connection, vectors, manifest, Path(workdir) / "cases")
            prop = provider_property(connection, run, manifest, Path(workdir) / "properties")
    outcome.by_vectors = _failed(cases)
    outcome.by_properties = _failed([prop])
    outcome.errors = [f"{c.id}: {c.error}" for c in [*cases, prop] if c.error]
    outcome.seconds = time.perf_counter() - started
    return outcome


def _opener(subject: Subject, protocol: str, workdir: Path):
    if subject.grpc_command:
        return lambda: GrpcKernelBinding(workdir, 5.0, command=subject.grpc_command)
    return lambda: PythonBinding(subject.name, protocol, 10.0, factory=subject.factory)


def _failed(cases: list[CaseResult]) -> set[str]:
    return {f.requirement for c in cases for f in c.failures()}


def _certify_by_name(name: str, profile: str, seed: int | None) -> Outcome:
    subject = next(s for s in subjects() if s.name == name)
    return certify(subject, profile, seed)


def run(profile: str = "ci", seed: int | None = None, jobs: int | None = None) -> list[Outcome]:
    names = [s.name for s in subjects()]
    workers = jobs or min(len(names), os.cpu_count() or 1)
    if workers <= 1:
        return [_certify_by_name(n, profile, seed) for n in names]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_certify_by_name, names, [profile] * len(names), [seed] * len(names)))


def unexercised(outcomes: list[Outcome]) -> list[str]:
    """Testable MUST / MUST NOT / SHOULD requirements no mutant sets out to break."""
    targeted = {r for o in outcomes for r in o.subject.breaks}
    catalog = catalog_mod.load()
    return [r.id for r in catalog.requirements.values() if r.testable and r.normative and r.id not in targeted]


def render(outcomes: list[Outcome], seconds: float) -> str:
    lines = [f"{'implementation':<34} {'breaks':<34} {'vectors':<8} {'props':<6} verdict"]
    for o in outcomes:
        s = o.subject
        target = ", ".join(s.breaks) or "(reference)"
        verdict = o.problem or ("killed" + (" (property-only)" if s.property_only else "") if s.breaks else "conformant")
        lines.append(f"{s.name:<34} {target[:34]:<34} {_mark(s, o.by_vectors):<8} {_mark(s, o.by_properties):<6} {verdict}")
        extra = sorted(o.caught - set(s.breaks))
        if extra and s.breaks:
            lines.append(f"{'':<34}   also reported: {', '.join(extra)}" + ("  (NOT DECLARED: " + ", ".join(sorted(o.stray)) + ")" if o.stray else ""))
    mutants = [o for o in outcomes if o.subject.breaks]
    lines.append("")
    lines.append(f"{sum(o.killed for o in mutants)}/{len(mutants)} mutants killed "
                 f"({sum(o.killed and o.subject.property_only for o in mutants)} only by the property tests); "
                 f"{sum(not o.problem for o in outcomes if o.subject.reference)}/"
                 f"{sum(o.subject.reference for o in outcomes)} reference implementations clean; {seconds:.1f}s")
    gaps = unexercised(outcomes)
    if gaps:
        lines.append("requirements no mutant exercises: " + ", ".join(gaps))
    return "\n".join(lines)


def _mark(subject: Subject, caught: set[str]) -> str:
    """Did this part of the suite catch the mutant (or fail the reference)?"""
    if subject.breaks:
        return "yes" if set(subject.breaks) & caught else "-"
    return "FAIL" if caught else "clean"


def to_json(outcomes: list[Outcome], seconds: float) -> dict:
    return {
        "seconds": round(seconds, 2),
        "subjects": [{"name": o.subject.name, "role": o.subject.role, "breaks": list(o.subject.breaks),
                      "property_only": o.subject.property_only, "by_vectors": sorted(o.by_vectors),
                      "by_properties": sorted(o.by_properties), "problem": o.problem, "errors": o.errors}
                     for o in outcomes],
        "unexercised": unexercised(outcomes),
    }
