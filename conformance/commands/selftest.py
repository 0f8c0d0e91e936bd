"""The self-test: the suite proves each of its checks can fail, and that none
of them fails what the spec allows.

Two matrices. The kill matrix: every mutant must be caught, failing at least
one requirement it declares and none it does not (a stray requirement means
its declaration or the suite's attribution is wrong, and the row says which
requirement and why it was failed). The false-failure matrix: the reference
implementations and every conforming variant, over python and stdio (and
gRPC where the variant's freedom shows on the wire), must come out with no
failure at all. It also names any testable requirement no mutant exercises.
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from conformance.data import vectors as vectors_mod
from conformance.data import manifest as manifest_mod
from conformance.data import catalog as catalog_mod
from conformance.data import paths
from conformance.data.schemas import InputError
from conformance.bindings.base import KERNEL_PROTOCOL, PROVIDER_PROTOCOL
from conformance.bindings.grpc_kernel import GrpcKernelBinding
from conformance.bindings.grpc_provider import GrpcProviderBinding
from conformance.bindings.launch_plugins import LaunchingKernel
from conformance.bindings.python import PythonBinding
from conformance.bindings.stdio import StdioBinding
from conformance.commands import pool, shards
from conformance.commands.certify import ROLES
from conformance.commands.shards import Shard
from conformance.commands.funnel import run_cases
from conformance.engine import provider_checks
from conformance.engine.connection import Connection
from conformance.engine.results import CaseResult
from conformance.properties.runner import PropertyRun
from conformance.proofs import kernel_mutants, kernel_variants, provider_mutants, provider_variants
from conformance.reports.verdict import build
from conformance.reference import compactor, filereader, kernel

MANIFESTS = paths.EXAMPLES / "manifests"
PROPERTY_ONLY_EXAMPLES = 300  # property-only mutants hide in corners; give the search room
OTHER_BINDING_EXAMPLES = 5    # over stdio and gRPC the python run's scenarios only need their transport proven
CAUGHT_MUTANT_EXAMPLES = 5    # the vectors caught it; the properties only have to show they blame nothing else
BINDINGS = ("python", "stdio", "grpc", "stdio+plugins")
PLUGINS = "+plugins"          # the plugin-launching mode around a binding (bindings/launch_plugins.py)
_RUNNERS = paths.RUNNERS / "python"
_COMMANDS = {"stdio": _RUNNERS / "stdio_shim.py",
             "grpc": {"kernel": _RUNNERS / "grpc_kernel_harness.py", "provider": _RUNNERS / "grpc_provider_server.py"}}


@dataclass
class Subject:
    """One implementation the self-test certifies, over one binding."""
    name: str
    role: str                  # kernel | provider
    factory: type
    manifest: str = ""
    breaks: tuple[str, ...] = ()
    also: tuple[str, ...] = ()
    property_only: bool = False
    binding: str = "python"
    freedom: str = ""          # a conforming variant: the freedom it takes, and what grants it
    grants: str = ""
    extra_args: str = ""       # appended to a launched runner's command line
    vectors_under: str = ""    # only the vectors whose id starts with this, and no properties

    @property
    def mutant(self) -> bool:
        return bool(self.breaks)

    @property
    def key(self) -> tuple[str, str, str]:
        return self.role, self.name, self.binding

    @property
    def target(self) -> str:
        return f"{self.factory.__module__}:{self.factory.__name__}"

    def command(self) -> str:
        runner = _COMMANDS[self.binding.removesuffix(PLUGINS)]
        runner = runner[self.role] if isinstance(runner, dict) else runner
        return f"{sys.executable} {runner} {self.target}{self.extra_args}"


@dataclass
class Outcome:
    subject: Subject
    by_vectors: set[str] = field(default_factory=set)
    by_properties: set[str] = field(default_factory=set)
    why: dict[str, str] = field(default_factory=dict)   # requirement -> the first failure reported for it
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    unexercised: list[str] = field(default_factory=list)  # MUSTs that applied and were never judged
    killed_by: set[str] = field(default_factory=set)      # the vectors that failed it on what it breaks
    cited: set[str] = field(default_factory=set)         # collateral its killing vectors say they test
    stray: set[str] = field(default_factory=set)         # failures neither declared nor cited, case by case

    @property
    def caught(self) -> set[str]:
        return self.by_vectors | self.by_properties

    @property
    def killed(self) -> bool:
        """Every requirement it declares it breaks was reported failing: one of several is not a kill."""
        return set(self.subject.breaks) <= self.caught

    @property
    def problem(self) -> str:
        """What is wrong with this row of the matrix, or an empty string."""
        s = self.subject
        if self.errors:
            return "errored: " + self.errors[0].splitlines()[0]
        if not s.mutant and self.caught:
            return "FALSE FAILURE of " + "; ".join(f"{r} ({self.why[r]})" for r in sorted(self.caught))
        if not s.mutant:
            # A conforming implementation must be certifiable: every MUST exercised, or named for a reason.
            # (A run on part of the vectors, such as the plugin mode's, proves only what those vectors exercise.)
            return f"INCOMPLETE: never exercised {', '.join(self.unexercised)}" \
                if self.unexercised and not s.vectors_under else ""
        if not self.killed:
            missed = sorted(set(s.breaks) - self.caught)
            return "SURVIVED" if len(missed) == len(s.breaks) else f"not caught on {', '.join(missed)}, which it declares"
        if self.stray:
            return ("failed requirements it does not declare (fix the declaration or the attribution): "
                    + "; ".join(f"{r} ({self.why[r]})" for r in sorted(self.stray)))
        if s.property_only and set(s.breaks) & self.by_vectors:
            return "caught by the vectors, though declared property-only"
        return ""

    def evidence(self) -> dict:
        """What a shard report keeps beyond the report's own fields, so that a merge can rebuild the outcome:
        the problem's wording, and which vectors killed it (for the vectors that kill no mutant)."""
        return {"why": self.why, "unexercised": self.unexercised, "killed_by": sorted(self.killed_by),
                "stray": sorted(self.stray)}

    @classmethod
    def from_json(cls, subject: Subject, entry: dict) -> Outcome:
        """The outcome a shard report's entry (to_json's, with its evidence) records for `subject`."""
        evidence = entry["evidence"]
        return cls(subject, set(entry["by_vectors"]), set(entry["by_properties"]), dict(evidence["why"]),
                   list(entry["errors"]), entry["seconds"], list(evidence["unexercised"]),
                   set(evidence["killed_by"]), set(entry["cited_collateral"]), set(evidence["stray"]))


def _conforming(name: str, role: str, cls, manifest: str = "", bindings=("python", "stdio")) -> list[Subject]:
    return [Subject(name, role, cls, manifest, binding=b, freedom=getattr(cls, "freedom", ""),
                    grants=getattr(cls, "grants", "")) for b in bindings]


def subjects() -> list[Subject]:
    found = _conforming("ReferenceKernel", "kernel", kernel.ReferenceKernel, bindings=BINDINGS)  # + plugins
    found += _conforming("FileReader", "provider", filereader.FileReader, "filereader")
    found += _conforming("Compactor", "provider", compactor.Compactor, "compactor")
    for role, variants in (("kernel", kernel_variants.VARIANTS), ("provider", provider_variants.VARIANTS)):
        for name, cls in variants.items():
            if getattr(cls, "plugins", False):
                found.append(Subject(name, role, cls, binding="python" + PLUGINS, vectors_under="kernel/plugins/",
                                     freedom=cls.freedom, grants=cls.grants))
                continue
            found += _conforming(name, role, cls, getattr(cls, "manifest", ""),
                                 ("python", "stdio", "grpc") if cls.grpc else ("python", "stdio"))
    found += [Subject(n, "kernel", c, "", c.breaks, c.also, c.property_only) for n, c in kernel_mutants.MUTANTS.items()
              if not c.launches_plugins]
    found += [Subject(n, "kernel", c, "", c.breaks, c.also, binding="python" + PLUGINS, vectors_under="kernel/plugins/")
              for n, c in kernel_mutants.MUTANTS.items() if c.launches_plugins]
    found += [Subject(n, "provider", c, c.manifest, c.breaks, c.also, c.property_only)
              for n, c in provider_mutants.MUTANTS.items()]
    found.append(Subject("HarnessWithoutDeadline", "kernel", kernel.ReferenceKernel, breaks=("K-TIMEOUT",),
                         binding="grpc", extra_args=" --no-deadline"))
    return found


def certify(subject: Subject, profile: str, seed: int | None, properties: bool = True) -> Outcome:
    """The vectors, then the properties."""
    started = time.perf_counter()
    cases, generated = _run(subject, profile, seed, properties)
    return judged(subject, cases, generated, time.perf_counter() - started)


def _run(subject: Subject, profile: str, seed: int | None, properties: bool = True, with_vectors: bool = True,
         group: str | None = None) -> tuple[list[CaseResult], list[CaseResult]]:
    """The subject's vector cases (those of one vector `group` only, if given; none unless `with_vectors`)
    and its generated ones (none without `properties`)."""
    with tempfile.TemporaryDirectory(prefix="ctxconf-selftest-") as workdir, \
            Connection(_opener(subject, Path(workdir))) as connection:
        vectors = [v for v in _vectors(subject.role, subject.binding == "python")
                   if with_vectors and v.id.startswith(subject.vectors_under) and group in (None, _group(v.id))]
        properties = properties and not subject.vectors_under
        manifest = manifest_mod.load(MANIFESTS / f"{subject.manifest}.yaml") if subject.role == "provider" else None
        cases = run_cases(subject.role, connection, vectors, None, Path(workdir), manifest)
        if subject.role == "provider":
            cases = provider_checks.judge_over_run(cases)
        # How hard the properties must look depends on what the vectors already caught.
        run = _property_run(subject, profile, seed, _failed(cases))
        generated = run_cases(subject.role, connection, [], run, Path(workdir), manifest) if properties else []
    return cases, generated


def judged(subject: Subject, cases: list[CaseResult], generated: list[CaseResult], seconds: float = 0.0,
           whole: bool = True) -> Outcome:
    """The outcome of the subject's cases. A `whole` run must exercise every MUST; a part of one (see
    parts()) answers only for what it ran, so it is never INCOMPLETE."""
    outcome = Outcome(subject)
    outcome.by_vectors = _failed(cases)
    outcome.by_properties = _failed(generated)
    roles = ROLES[subject.role].binds
    report = build(catalog_mod.load(), roles, subject.role, [*cases, *generated], subject.binding, {}, 0.0)
    outcome.unexercised = [r.id for r in report.unexercised] if whole else []
    for case in [*cases, *generated]:
        for finding in case.failures():
            outcome.why.setdefault(finding.requirement, f"{case.id}, {finding.where}: {finding.message[:300]}")
    outcome.killed_by = {c.id for c in cases if {f.requirement for f in c.failures()} & set(subject.breaks)}
    outcome.cited = cited_collateral(cases, subject.breaks)
    outcome.stray = stray_failures(cases, generated, subject.breaks, subject.also)
    outcome.errors = [f"{c.id}: {c.error}" for c in [*cases, *generated] if c.error]
    outcome.seconds = seconds
    return outcome


# Parts: a conforming run longer than this (estimated_seconds) can be certified in pieces that a test runner
# spreads over its workers: each vector group on its own, then the properties. Only a conforming run: how
# hard a mutant's properties look depends on what its vectors caught (_property_run).
SPLIT_OVER_SECONDS = 100
PROPERTIES = "properties"


def _group(vector_id: str) -> str:
    return vector_id.split("/")[1]  # kernel/budget/... -> budget


def parts(subject: Subject) -> list[str]:
    """The pieces a long conforming run splits into, in the order its cases run (none: it is not split)."""
    if subject.mutant or subject.vectors_under or estimated_seconds(subject) <= SPLIT_OVER_SECONDS:
        return []
    return [*dict.fromkeys(_group(v.id) for v in _vectors(subject.role)), PROPERTIES]


def certify_part(subject: Subject, part: str, profile: str,
                 seed: int | None) -> tuple[list[CaseResult], list[CaseResult]]:
    """One of parts(): the cases of a vector group, or the generated ones, as certify() would run them."""
    if part == PROPERTIES:
        return _run(subject, profile, seed, with_vectors=False)  # a conforming subject's properties ignore them
    return _run(subject, profile, seed, properties=False, group=part)


def joined(subject: Subject, runs: list[tuple[list[CaseResult], list[CaseResult]]]) -> Outcome:
    """The outcome of certify() from its parts' runs (given in parts()' order)."""
    return judged(subject, [c for cases, _ in runs for c in cases], [c for _, generated in runs for c in generated])


def _property_run(subject: Subject, profile: str, seed: int | None, caught_by_vectors: set[str]) -> PropertyRun:
    """No shrinking: the self-test needs the verdict, not the smallest case."""
    if subject.property_only:
        examples = PROPERTY_ONLY_EXAMPLES
    elif subject.mutant and set(subject.breaks) <= caught_by_vectors:
        examples = CAUGHT_MUTANT_EXAMPLES
    else:
        examples = None if subject.binding == "python" else OTHER_BINDING_EXAMPLES
    return PropertyRun(profile=profile, seed=seed, examples=examples, shrink=False)


@functools.lru_cache(maxsize=None)
def _vectors(role: str, swept: bool = True) -> tuple:
    """Loaded once per worker process: every subject of a role runs the same vectors. Over a binding other
    than python a sweep runs at the value written only: the python run judged every value of the same code,
    and what the other binding adds is its transport (as OTHER_BINDING_EXAMPLES has it for the properties)."""
    return tuple(replace(v, swept=swept) for v in vectors_mod.load_dir(role, catalog_mod.load()))


def _opener(subject: Subject, workdir: Path):
    if subject.binding.endswith(PLUGINS):
        plain = _plain_opener(replace(subject, binding=subject.binding.removesuffix(PLUGINS)), workdir)
        return lambda: LaunchingKernel(plain(), workdir, 10.0)
    return _plain_opener(subject, workdir)


def _plain_opener(subject: Subject, workdir: Path):
    protocol = KERNEL_PROTOCOL if subject.role == "kernel" else PROVIDER_PROTOCOL
    if subject.binding == "stdio":
        return lambda: StdioBinding(subject.command(), protocol, f"{subject.role}-protocol.json", workdir, 10.0)
    if subject.binding == "grpc" and subject.role == "kernel":
        return lambda: GrpcKernelBinding(workdir, 5.0, command=subject.command())
    if subject.binding == "grpc":
        return lambda: GrpcProviderBinding(workdir, 10.0, command=subject.command())
    return lambda: PythonBinding(subject.name, protocol, 10.0, factory=subject.factory)


def cited_collateral(cases: list[CaseResult], breaks: tuple[str, ...]) -> set[str]:
    """The collateral a mutant's `also` need not list, over all its vector cases (see _excused)."""
    return set().union(*(_excused(case, breaks) for case in cases)) - set(breaks)


def stray_failures(cases: list[CaseResult], generated: list[CaseResult], breaks: tuple[str, ...],
                   also: tuple[str, ...]) -> set[str]:
    """What a mutant failed that it neither declares nor may put down to its collateral, case by case."""
    declared = {*breaks, *also}
    return set().union(*(_failed([case]) - declared - _excused(case, breaks) for case in cases)) \
        | (_failed(generated) - declared)


def _excused(case: CaseResult, breaks: tuple[str, ...]) -> set[str]:
    """A vector case's failures its vector cites, where the same case fails a requirement the mutant declares:
    the vector's author said the case tests them all. They excuse only that case; a failure elsewhere, or in a
    case that shows nothing the mutant breaks, or in a generated scenario, still needs declaring in `also`."""
    failed = _failed([case])
    return failed & set(case.requirements) if failed & set(breaks) else set()


def _failed(cases: list[CaseResult]) -> set[str]:
    return {f.requirement for c in cases for f in c.failures()}


def slowest_first(everyone: list[Subject]) -> list[Subject]:
    """The order to start them in, so that parallel workers finish together."""
    return sorted(everyone, key=lambda s: (s.binding == "stdio" + PLUGINS) * 8 + (s.binding == "grpc") * 4
                  + s.property_only * 2 + (s.binding == "stdio"), reverse=True)


def cores() -> int:
    """The cores this process may run on: a container or taskset may allow fewer than the machine has."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def run(profile: str = "ci", seed: int | None = None, jobs: int | None = None, only: str = "",
        where=lambda subject: True, on_done=lambda outcome, done, total: None) -> list[Outcome]:
    """Certify every subject (or those whose name contains `only`, and that `where` picks), the slowest first,
    in `jobs` processes; `on_done` hears of each as it finishes."""
    everyone = [s for s in subjects() if only in s.name and where(s)]
    keys = [s.key for s in slowest_first(everyone)]
    subject_of = {s.key: s for s in everyone}
    workers = jobs or min(len(keys), cores())
    done: list[Outcome] = []

    def finished(outcome: Outcome) -> None:
        done.append(outcome)
        on_done(outcome, len(done), len(keys))

    if workers <= 1:
        for key in keys:
            finished(certify(subject_of[key], profile, seed))
    else:  # commands/pool: interrupted, it hands out no more subjects and its workers close what they hold
        pool.run(workers, _Certifier, (profile, seed), keys, finished,
                 lambda index, key, why: Outcome(subject_of[key], errors=[f"the self-test's worker: {why}"]))
    outcome_of = {o.subject.key: o for o in done}
    return [outcome_of[s.key] for s in everyone]


class _Certifier:
    """A worker process of the self-test (commands/pool): it certifies the subjects it is handed."""

    def __init__(self, profile: str, seed: int | None, number: int):
        self.profile, self.seed = profile, seed
        self.subject_of = {s.key: s for s in subjects()}

    def item(self, index: int, key: tuple[str, str, str]) -> Outcome:
        return certify(self.subject_of[key], self.profile, self.seed)

    def finish(self) -> list:
        return []


def unit_list(everyone: list[Subject]) -> list[list]:
    """What identifies a run's subjects, for its shards' fingerprint: each one's key and declaration."""
    return [[*s.key, list(s.breaks), list(s.also), s.property_only, s.freedom, s.vectors_under, s.extra_args]
            for s in everyone]


# Seconds a subject takes, by binding and kind (conforming, mutant, property-only mutant), from a self-test's
# report (docs/speed.md): what the shards are dealt by. Conforming python runs take the whole property search;
# other bindings, and mutants the vectors caught, a few scenarios; property-only mutants, PROPERTY_ONLY_EXAMPLES.
SECONDS = {("kernel", "python"): (22, 6, 11), ("kernel", "stdio"): (11, 6, 11), ("kernel", "grpc"): (16, 32, 32),
           ("kernel", "python+plugins"): (17, 10, 10), ("kernel", "stdio+plugins"): (300, 300, 300),
           ("provider", "python"): (13, 3, 3), ("provider", "stdio"): (8, 3, 3), ("provider", "grpc"): (4, 4, 4)}


def estimated_seconds(subject: Subject) -> float:
    conforming, mutant, property_only = SECONDS.get((subject.role, subject.binding), (10, 10, 10))
    return property_only if subject.property_only else mutant if subject.mutant else conforming


def shard_of(everyone: list[Subject], shard: Shard) -> set[tuple[str, str, str]]:
    """The keys of one shard's subjects, dealt by their estimated seconds."""
    return {s.key for s in shard.take(everyone, estimated_seconds)}


def shard_header(everyone: list[Subject], shard: Shard, profile: str, seed: int | None, only: str) -> dict:
    return shards.header("selftest", shard, profile, seed, unit_list(everyone), filter=only,
                         subjects=len(everyone))


def to_shard_json(outcomes: list[Outcome], seconds: float, header: dict) -> dict:
    """A shard's report: its header, and its subjects as to_json has them, each with its evidence. The
    corpus-wide lists (vectors that kill no mutant, ...) are left to the merge, which sees every subject."""
    subjects_json = to_json(outcomes, seconds)["subjects"]
    for entry, outcome in zip(subjects_json, outcomes):
        entry["evidence"] = outcome.evidence()
    return {"shard": header, "seconds": round(seconds, 2), "subjects": subjects_json}


def merge(docs: list[dict]) -> tuple[list[Outcome], float]:
    """The outcomes of every shard, in the unsharded run's order, and the longest shard's seconds (the wall
    time of shards run side by side). The shards' subjects must be this suite's: InputError otherwise."""
    head = docs[0]["shard"]
    everyone = [s for s in subjects() if head["filter"] in s.name]
    if shards.fingerprint(unit_list(everyone)) != head["units"]:
        raise InputError("shard reports", "their subjects are not this suite's (another version or checkout of "
                         "ctxconf wrote them): merge with the ctxconf that ran the shards", "shard.units")
    entries = {(e["role"], e["name"], e["binding"]): e for doc in docs for e in doc["subjects"]}
    missing = [s for s in everyone if s.key not in entries]
    if missing:
        raise InputError("shard reports", f"no shard has {missing[0].name} ({missing[0].role}, "
                         f"{missing[0].binding}), which the run certifies", "subjects")
    return [Outcome.from_json(s, entries[s.key]) for s in everyone], max(doc["seconds"] for doc in docs)


def progress_line(outcome: Outcome, done: int, total: int) -> str:
    """One line per subject as it finishes, for stderr: the run is long and otherwise silent."""
    s = outcome.subject
    status = ("killed" if outcome.killed and not outcome.problem else "NOT KILLED") if s.mutant else \
        ("clean" if not outcome.problem else "FALSE FAILURE")
    return f"[{done}/{total}] {status:<13} {s.name} ({s.role}, {s.binding}) {outcome.seconds:.1f}s"


def idle_vectors(outcomes: list[Outcome], roles: tuple[str, ...] = ("kernel", "provider")) -> list[str]:
    """Vectors that failed no mutant on what it breaks, and do not say why they need not (control)."""
    killing = {v for o in outcomes for v in o.killed_by}
    return [v.id for role in roles for v in _vectors(role)
            if v.id not in killing and not v.doc.get("control")]


def only_by_properties(outcomes: list[Outcome], roles: tuple[str, ...] = ("kernel", "provider")) -> list[str]:
    """Testable MUSTs and MUST NOTs whose mutants no golden vector catches: the properties alone are
    not enough evidence that the vectors can fail them."""
    by_vectors = {r for o in outcomes for r in set(o.subject.breaks) & o.by_vectors}
    binds = {b for role in roles for b in ROLES[role].binds}
    return [r.id for r in catalog_mod.load().requirements.values()
            if r.testable and r.blocking and r.binds in binds and r.id not in by_vectors]


def unexercised(everyone: list[Subject]) -> list[str]:
    """Testable MUST / MUST NOT / SHOULD requirements no mutant sets out to break."""
    targeted = {r for s in everyone for r in s.breaks}
    catalog = catalog_mod.load()
    return [r.id for r in catalog.requirements.values() if r.testable and r.normative and r.id not in targeted]


def render(outcomes: list[Outcome], seconds: float, verbose: bool = False, profile: str = "ci",
           shard: Shard | None = None) -> str:
    mutants = [o for o in outcomes if o.subject.mutant]
    conforming = [o for o in outcomes if not o.subject.mutant]
    rows: dict[tuple[str, str], dict[str, Outcome]] = {}
    for o in conforming:
        rows.setdefault((o.subject.role, o.subject.name), {})[o.subject.binding] = o
    variants = sum(bool(next(iter(r.values())).subject.freedom) for r in rows.values())
    lines = _kill_matrix(mutants) + [""] + _false_failure_matrix(rows) + [
        "", f"{sum(o.killed and not o.problem for o in mutants)}/{len(mutants)} mutants killed on what they declare "
            f"({sum(o.killed and o.subject.property_only for o in mutants)} only by the property tests); "
            f"{sum(not o.problem for o in conforming)}/{len(conforming)} conforming runs clean "
            f"({variants} variants, {len(rows) - variants} references); {seconds:.1f}s"]
    gaps = unexercised(subjects())
    if gaps:
        lines.append("requirements no mutant exercises: " + ", ".join(gaps))
    if mutants and shard:
        lines.append(f"shard {shard}: the vectors that kill no mutant, and the MUSTs whose mutants only the property "
                     "tests catch, are found over every shard by `ctxconf merge`")
    elif mutants:
        lines.append("vectors that kill no mutant (and are no control): " + (", ".join(idle_vectors(outcomes))
                                                                             or "none"))
        lines.append("MUSTs whose mutants only the property tests catch: " + (", ".join(only_by_properties(outcomes))
                                                                              or "none"))
    if verbose:
        lines += ["", scenario_space(profile)]
    return "\n".join(lines)


def scenario_space(profile: str) -> str:
    """The dimensions the property tests draw, with their ranges (properties/space.py, docs/scenario-space.md)."""
    from conformance.properties import LARGE_SHARE
    from conformance.properties.space import table
    return (f"Scenario space: each scenario switches each dimension to its large range in 1 of "
            f"{LARGE_SHARE[profile]} (profile {profile})\n\n" + table())


def _kill_matrix(mutants: list[Outcome]) -> list[str]:
    lines = ["Kill matrix: every mutant caught, on the requirements it declares", "",
             f"{'mutant':<34} {'breaks':<34} {'vectors':<8} {'props':<6} verdict"]
    for o in mutants:
        s = o.subject
        verdict = o.problem or "killed" + (" (property-only)" if s.property_only else "")
        name = s.name + ("" if s.binding == "python" else f" [{s.binding}]")
        lines.append(f"{name:<34} {', '.join(s.breaks)[:34]:<34} {_mark(s, o.by_vectors):<8} "
                     f"{_mark(s, o.by_properties):<6} {verdict}")
        extra = sorted(o.caught - set(s.breaks))
        if extra:
            lines.append(f"{'':<34}   also reported: {', '.join(extra)}")
    return lines


def _false_failure_matrix(rows: dict[tuple[str, str], dict[str, Outcome]]) -> list[str]:
    lines = ["False-failure matrix: the references and every conforming variant pass over each binding", "",
             f"{'implementation':<44} {'grants':<34} " + " ".join(f"{b:<{_width(b)}}" for b in BINDINGS)]
    for (role, name), by_binding in rows.items():
        subject = next(iter(by_binding.values())).subject
        cells = ["-" if b not in by_binding else "FAIL" if by_binding[b].problem else "clean" for b in BINDINGS]
        lines.append(f"{f'{name} ({role})':<44} {(subject.grants or '(reference)')[:34]:<34} "
                     + " ".join(f"{c:<{_width(b)}}" for c, b in zip(cells, BINDINGS)))
        if subject.freedom:
            lines.append(f"{'':<44}   {subject.freedom}")
        lines += [f"{'':<44}   {b}: {o.problem}" for b, o in by_binding.items() if o.problem]
    return lines


def _width(binding: str) -> int:
    return max(len(binding), 8)


def _mark(subject: Subject, caught: set[str]) -> str:
    """Did this part of the suite catch the mutant?"""
    return "yes" if set(subject.breaks) <= caught else "some" if set(subject.breaks) & caught else "-"


def to_json(outcomes: list[Outcome], seconds: float) -> dict:
    return {
        "seconds": round(seconds, 2),
        "subjects": [{"name": o.subject.name, "role": o.subject.role, "binding": o.subject.binding,
                      "kind": "mutant" if o.subject.mutant else "variant" if o.subject.freedom else "reference",
                      "breaks": list(o.subject.breaks), "also": list(o.subject.also),
                      "cited_collateral": sorted(o.cited), "freedom": o.subject.freedom, "grants": o.subject.grants,
                      "property_only": o.subject.property_only, "by_vectors": sorted(o.by_vectors),
                      "by_properties": sorted(o.by_properties), "problem": o.problem, "errors": o.errors,
                      "seconds": round(o.seconds, 2)}
                     for o in outcomes],
        "unexercised": unexercised(subjects()),
        "idle_vectors": idle_vectors(outcomes),
        "musts_only_by_properties": only_by_properties(outcomes),
    }
