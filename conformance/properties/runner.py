"""Property-based certification: hypothesis generates whole scenarios, the
live implementation runs each through the same driver as the vectors, and the
same invariant checks judge it. A failing scenario is shrunk against the
implementation and written out as a vector file that replays it.

Runs are reproducible: the seed is printed and settable, and the ci profile
is derandomized.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import random
import sys
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import hypothesis
import yaml
from hypothesis import HealthCheck, Phase, Verbosity, given, seed as fix_seed, settings as hsettings, target
from hypothesis.configuration import set_hypothesis_home_dir
from hypothesis.errors import HypothesisWarning
from hypothesis.internal.conjecture import providers as _providers

from conformance.engine import kernel_checks, provider_checks
from conformance.bindings.base import HarnessError
from conformance.engine.connection import Connection
from conformance.engine.kernel_driver import drive as drive_kernel
from conformance.data.provider_cases import from_vector as provider_case
from conformance.engine.provider_driver import case_directory, drive as drive_provider
from conformance.engine.results import CaseResult, Finding, split_harness, suite_defect
from conformance.engine.scenario import from_vector as kernel_scenario
from conformance.data import disk_cache
from conformance.data.manifest import Manifest
from conformance.properties import (CASE_IDS, LARGE_SHARE, PROFILES, SHRINK_WORK,  # noqa: F401 (PROFILES: the runner's API too)
                                    TARGETED, space, strategies)


class _NoLocalConstants:
    def set_for_type(self, choice_type):
        return ()


# Hypothesis mixes into its draws the literals of the "local" modules imported so far, cached on first use.
# Which modules those are depends on what the process ran before and on where ctxconf is installed (a
# checkout is local, a wheel in site-packages is not), so the same seed, or the ci profile's fixed one,
# generated other scenarios from run to run. The suite's scenarios come from its strategies alone.
if hasattr(_providers, "_get_local_constants") and hasattr(_providers, "CONSTANTS_CACHE"):
    _providers._get_local_constants = _NoLocalConstants
    _providers.CONSTANTS_CACHE = {}  # what was cached before, with the local constants of the moment, goes


DERANDOMIZED_SEED = 0  # the ci profile's scenarios, whatever the code around them


@dataclass
class ScenarioTiming:
    """Where one scenario's seconds went. `generating` is what went before the suite had it: hypothesis drawing
    it, steering by its targets, and its own bookkeeping since the scenario before (for the first, since the
    search began; a replayed search only unpickles it). `driving` runs the implementation through it;
    `judging` is the checks' time."""
    generating: float
    driving: float = 0.0
    judging: float = 0.0


class _Judging:
    """The judging share of an attempt: the attempt wraps its checks in `timed()`, the search reads `seconds`."""

    def __init__(self) -> None:
        self.seconds = 0.0

    @contextmanager
    def timed(self):
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds += time.perf_counter() - started


@dataclass
class PropertyRun:
    profile: str = "default"
    seed: int | None = None
    examples: int | None = None
    shrink: bool = True
    shrink_work: int = SHRINK_WORK  # see conformance.properties.SHRINK_WORK
    progress: Callable[[str], None] | None = field(default=None, compare=False, repr=False)  # "scenario N of M"
    counterexamples: Path | None = None   # where shrunk failures are written as vectors
    timings: list[ScenarioTiming] | None = field(default=None, compare=False, repr=False)  # one per scenario tried

    def __post_init__(self) -> None:
        if self.seed is None and not PROFILES[self.profile].get("derandomize"):
            self.seed = random.SystemRandom().randrange(2**32)

    def settings(self) -> hsettings:
        options = {"derandomize": False, **PROFILES[self.profile]}  # nothing inherited from a loaded profile
        if self.examples is not None:
            options["max_examples"] = self.examples
        phases = [Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.target] if TARGETED[self.profile] else []) \
            + ([Phase.shrink] if self.shrink else [])
        # A run that shrinks reports one counterexample: looking on for other bugs after the first is bounded by
        # hypothesis in seconds of wall clock, so what it found, and so the report, would depend on the load.
        return hsettings(database=None, deadline=None, phases=phases, print_blob=False, verbosity=Verbosity.quiet,
                         suppress_health_check=list(HealthCheck), report_multiple_bugs=not self.shrink, **options)


class _Failed(Exception):
    """One generated scenario broke an invariant, or the implementation."""


class _OutOfTime(BaseException):
    """Shrinking took long enough (the smallest failure so far is the answer), or the implementation cannot
    be started at all. A BaseException, so that hypothesis lets it through instead of shrinking on."""


class _FirstFailure(BaseException):
    """The first failure of a search that does not shrink: hypothesis would stop there anyway, and only
    replay it to print it (the repr of a large scenario, a tenth of a second each time). Let through at once."""


@dataclass
class _Search:
    exercised: set[str] = field(default_factory=set)
    failed: dict[str, Finding] = field(default_factory=dict)  # each requirement's first failure, in any scenario
    examples: int = 0
    shrink_work: int = 0                            # the work() of the scenarios tried since the first failure
    doc: dict | None = None                         # the failing scenario reported, with its failures and error
    failures: list[Finding] = field(default_factory=list)
    error: str | None = None
    not_restarted: str | None = None                # the implementation could not be (re)started
    defect: str | None = None                       # the suite's own code raised while judging a scenario


def work(doc: dict) -> int:
    """What trying a scenario costs, counted in what it asks of the implementation: one unit per call it makes
    (a provider's Contribute in each turn, or a provider step) and one per 16 KiB of the text it carries."""
    calls = len(doc.get("turns", ())) * len(doc.get("setup", {}).get("providers", ())) if "turns" in doc \
        else len(doc.get("steps", ()))
    return 1 + calls + len(repr(doc)) // 16384


def _cache_directory() -> Path:
    """Hypothesis keeps files even with its database off; they go to the user's cache, not the working directory."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "ctxconf" / "hypothesis"


def large_share(profile: str) -> int:
    """One scenario in this many switches each dimension to its large range under the profile."""
    return LARGE_SHARE[profile]


# The scenarios of searches that passed whole, by what drew them (the strategy, the profile, the seed, the
# number of examples). Hypothesis's generation sees nothing of the implementation but its failures (and the
# target() scores, which are the scenarios' own): every search that passes draws the same scenarios in the
# same order. So a later search in this process with the same key plays them back instead of drawing them
# again (drawing is a third of an in-process certification, and the self-test certifies hundreds), and goes
# back to hypothesis, from the start, at the first scenario that fails: what it reports is then hypothesis's.
_PASSED_SEARCHES: dict[tuple, list[bytes]] = {}
# ... and between processes, when CTXCONF_CACHE names a folder (data/disk_cache.py): an entry is named by the key
# and by a digest of the suite's own files, hypothesis' version and Python's, since another suite draws other
# scenarios for the same key, and must not find these.


@functools.lru_cache(maxsize=None)
def _suite_digest() -> str:
    package = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256(f"{sys.version} {hypothesis.__version__}".encode())
    for path in sorted(p for p in package.rglob("*") if p.suffix in (".py", ".yaml", ".json") and p.is_file()):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _stored_search(key: tuple) -> Path | None:
    return disk_cache.entry("scenarios", _suite_digest(), repr(key))


def _passed_search(key: tuple) -> list[bytes] | None:
    """The scenarios of a passed search with this key, drawn in this process or (see disk_cache) another."""
    if key not in _PASSED_SEARCHES and (stored := disk_cache.read(_stored_search(key))) is not None:
        try:
            _PASSED_SEARCHES[key] = pickle.loads(stored)
        except (pickle.UnpicklingError, EOFError, ValueError):
            return None  # not one of ours: draw them
    return _PASSED_SEARCHES.get(key)


def _keep_passed_search(key: tuple, drawn: list[bytes]) -> None:
    _PASSED_SEARCHES[key] = drawn
    disk_cache.write(_stored_search(key), pickle.dumps(drawn))


def _timed(attempt: Callable[[dict], tuple[list[Finding], str | None]], timings: list[ScenarioTiming],
           judging: _Judging | None) -> Callable[[dict], tuple[list[Finding], str | None]]:
    """`attempt`, adding a ScenarioTiming of each scenario it tries to `timings`; what went before it since the
    last attempt ended (or since the search began) is the generating."""
    ended = [time.perf_counter()]

    def timed(doc: dict) -> tuple[list[Finding], str | None]:
        started = time.perf_counter()
        timing = ScenarioTiming(generating=started - ended[0])
        judged_before = judging.seconds if judging else 0.0
        try:
            return attempt(doc)
        finally:
            timing.judging = judging.seconds - judged_before if judging else 0.0
            ended[0] = time.perf_counter()
            timing.driving = ended[0] - started - timing.judging
            timings.append(timing)

    return timed


def _search(run: PropertyRun, strategy, attempt: Callable[[dict], tuple[list[Finding], str | None]],
            aim: Callable[[dict], dict[str, float]] | None = None, drawn_by: tuple | None = None,
            judging: _Judging | None = None) -> _Search:
    """Run the search; `aim` scores each scenario for hypothesis' target(), toward the boundaries it names.
    `drawn_by` names the strategy (the same value for the same scenarios), so that a passed search replays.
    `judging` is what the attempt says of its checks' time, for run.timings."""
    if run.timings is not None:
        attempt = _timed(attempt, run.timings, judging)
    key = drawn_by and (*drawn_by, run.profile, run.seed, run.settings().max_examples)
    if key and (passed := _passed_search(key)) is not None:
        timed_before = len(run.timings) if run.timings is not None else 0
        replayed = _replay(run, passed, attempt)
        if replayed is not None:
            return replayed
        if run.timings is not None:
            del run.timings[timed_before:]  # the search starts again: one timing per scenario of the search reported
    drawn: list[bytes] = []
    found = _draw(run, strategy, lambda doc: (drawn.append(pickle.dumps(doc)), attempt(doc))[1], aim)
    if key and found.doc is None and not (found.not_restarted or found.defect):
        _keep_passed_search(key, drawn)
    return found


def _replay(run: PropertyRun, drawn: list[bytes], attempt) -> _Search | None:
    """The scenarios of a passed search, tried in order. At the first that fails: None, for hypothesis to search
    and shrink, or, in a search that does not shrink, what was found. Hypothesis, drawing afresh, would draw the
    same scenarios up to that one (they passed, as they did when it drew them first) and stop at it."""
    found = _Search()
    example = _example(run, found, attempt, len(drawn))
    for doc in drawn:
        try:
            example(pickle.loads(doc))
        except _FirstFailure:
            return found
        except _Failed:
            return None
        except _OutOfTime:  # the implementation could not be restarted, or the suite's bug: as hypothesis stops
            return found
    return found


def _draw(run: PropertyRun, strategy, attempt, aim) -> _Search:
    """Hypothesis's search: it draws the scenarios, and shrinks a failure unless the run says not to."""
    if not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        set_hypothesis_home_dir(_cache_directory())
    found = _Search()
    example = _example(run, found, attempt, run.settings().max_examples, aim)
    test = given(strategy)(example)
    test = run.settings()(test)
    if PROFILES[run.profile].get("derandomize"):
        # Hypothesis derives a derandomized run's seed from the test function's source, read from disk: any edit
        # of _example drew other scenarios (and a checkout edited under a running process, others again).
        test = fix_seed(DERANDOMIZED_SEED)(test)
    elif run.seed is not None:
        test = fix_seed(run.seed)(test)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HypothesisWarning)
        try:
            test()
        except BaseException as exc:
            # Ours, alone or grouped (a racy implementation whose failure did not reproduce: the one found
            # stands). Anything else is a bug of the suite, or hypothesis', or an interrupt: it goes on up.
            if not _ours(exc):
                raise
    return found


def _example(run: PropertyRun, found: _Search, attempt, planned: int, aim=None) -> Callable[[dict], None]:
    """The test of one scenario: it tries the scenario and keeps what it found in `found`."""

    def example(doc: dict) -> None:
        # Hypothesis replays a failing example, to confirm it and to report it: the one just run is not run
        # again. Every failure is raised from the one line at the end: a failure raised elsewhere is another
        # bug to hypothesis, which then stops shrinking (a replay it takes for a flaky failure) or reports
        # the two in a BaseExceptionGroup (an _OutOfTime beside a _Failed) the search would not recognise.
        for label, score in (aim(doc) if aim else {}).items():
            target(score, label=label)
        if found.doc is None or doc != found.doc:
            if found.doc is not None and found.shrink_work >= run.shrink_work:
                raise _OutOfTime()
            found.examples += 1
            if found.doc is not None:
                found.shrink_work += work(doc)
            if run.progress:
                run.progress(f"scenario {found.examples} of {planned}" if found.doc is None else
                             f"shrinking a failure: {min(100, 100 * found.shrink_work // run.shrink_work)} % of its work")
            try:
                findings, error = attempt(doc)
            except HarnessError as exc:  # it could not be (re)started: no scenario can show more, nothing to shrink
                found.not_restarted = f"could not start the implementation: {exc}"
                raise _OutOfTime() from None
            except Exception:  # the suite's own bug: stop, and say so, whatever was found before
                found.defect = suite_defect("generating and judging scenarios")
                raise _OutOfTime() from None
            failed = [f for f in findings if not f.passed]
            found.exercised.update(f.requirement for f in findings if f.passed)
            for finding in failed:
                found.failed.setdefault(finding.requirement, finding)
            if not (failed or error):
                return
            found.doc, found.failures, found.error = doc, failed, error  # the last one is the simplest yet
        raise _Failed() if run.shrink else _FirstFailure()

    return example


def _ours(exc: BaseException) -> bool:
    inner = getattr(exc, "exceptions", None)  # an exception group, hypothesis' FlakyFailure among them
    return all(map(_ours, inner)) if inner is not None else isinstance(exc, (_Failed, _OutOfTime, _FirstFailure))


def kernel_property(connection: Connection, run: PropertyRun) -> CaseResult:
    judging = _Judging()

    def attempt(doc: dict) -> tuple[list[Finding], str | None]:
        scenario = kernel_scenario(doc)
        transcript = drive_kernel(connection.binding(), scenario)
        if transcript.error:
            connection.discard()
        with judging.timed():
            findings = kernel_checks.check_case(scenario, transcript)
        findings, harness = split_harness(findings)
        return findings, transcript.error or harness

    return _result(CASE_IDS["kernel"], "Generated kernel scenarios hold every invariant",
                   run, strategies.kernel_scenarios(large_share(run.profile)), attempt, "kernel",
                   ("kernel", large_share(run.profile)), judging)


def provider_property(connection: Connection, run: PropertyRun, manifest: Manifest, run_dir: Path) -> CaseResult:
    judging = _Judging()

    def attempt(doc: dict) -> tuple[list[Finding], str | None]:
        case = provider_case(doc)
        workdir = case_directory(run_dir, f"property-{hashlib.sha1(repr(doc).encode()).hexdigest()[:10]}")
        transcript = drive_provider(connection.binding(), case, manifest, workdir)
        if transcript.error:
            connection.discard()
        with judging.timed():
            findings = provider_checks.one_scenario(provider_checks.check_case(transcript, manifest))
        return findings, transcript.error

    return _result(CASE_IDS["provider"], "Generated requests hold every provider invariant",
                   run, strategies.provider_scenarios(large_share(run.profile), manifest.name), attempt, "provider",
                   ("provider", large_share(run.profile), manifest.name), judging)


def _result(case_id: str, title: str, run: PropertyRun, strategy, attempt, role: str | None = None,
            drawn_by: tuple | None = None, judging: _Judging | None = None) -> CaseResult:
    started = time.perf_counter()
    result = CaseResult(case_id, title, source=f"hypothesis, profile {run.profile}, seed {run.seed}")
    aim = (lambda doc: space.targets(role, doc)) if role else None
    try:
        found = _search(run, strategy, attempt, aim, drawn_by, judging)
    except Exception:
        result.error = suite_defect("generating and judging scenarios")
        return result
    if found.defect:
        result.error = found.defect
        return result
    failing = {f.requirement for f in found.failures}
    result.findings = [Finding(r, True, where=f"{found.examples} examples")
                       for r in sorted(found.exercised - found.failed.keys())]
    result.findings += found.failures
    # A requirement that failed in a scenario the search went past (shrinking leads to the simplest failure,
    # which may show another) is a failure too, never a pass; its scenario is not the one written out.
    result.findings += [Finding(r, False, f"{f.message} (in a generated scenario the search went past on its way to "
                                          f"the simplest failure)", where=f.where)
                        for r, f in sorted(found.failed.items()) if r not in failing]
    if found.error or found.not_restarted:
        result.error = f"a generated scenario broke the implementation: {found.error or found.not_restarted}"
    if found.doc is not None and run.counterexamples is not None:
        result.counterexample = str(write_counterexample(found.doc, sorted(failing), run, run.counterexamples,
                                                         found.error or ""))
    result.seconds = time.perf_counter() - started
    return result


class _PlainDumper(yaml.SafeDumper):
    """No anchors or aliases: vectors are plain data any YAML reader takes."""

    def ignore_aliases(self, data) -> bool:
        return True


def write_counterexample(doc: dict, requirements: list[str], run: PropertyRun, folder: Path,
                         problem: str = "") -> Path:
    """The shrunk scenario as a vector file under folder/<role>/counterexample/."""
    role = doc["id"].split("/")[0]
    digest = hashlib.sha1(yaml.safe_dump(doc, allow_unicode=True).encode()).hexdigest()[:12]
    vector = {**doc, "id": f"{role}/counterexample/{digest}",
              "title": f"Counterexample found by property testing (profile {run.profile}, seed {run.seed})",
              "requirements": requirements, "invariant_requirements": requirements,
              "origin": {"tool": "hypothesis", "profile": run.profile, "seed": run.seed,
                         "problem": problem or "broke the invariants of " + ", ".join(requirements)}}
    path = folder / role / "counterexample" / f"{digest}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.dump(vector, Dumper=_PlainDumper, allow_unicode=True, sort_keys=False, width=120),
                    encoding="utf-8")
    return path

