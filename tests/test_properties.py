"""The property layer: generated scenarios are valid vectors, runs are
reproducible, and a shrunk counterexample replays as an ordinary vector."""

import json
import subprocess
import sys

import pytest
from hypothesis import given

from conformance.data import vectors as vectors_mod
from conformance.data import catalog as catalog_mod
from conformance.data import disk_cache, schemas
from conformance.bindings.base import KERNEL_PROTOCOL
from conformance.bindings.python import PythonBinding
from conformance.engine.connection import Connection
from conformance.properties import strategies
from conformance.properties.runner import PropertyRun, kernel_property
from conformance.reference.kernel import create
from conformance.proofs.kernel_mutants import MUTANTS
from tests.conftest import ROOT, ctxconf


@given(strategies.kernel_scenarios())
def test_generated_kernel_scenarios_are_valid_vectors(doc):
    assert schemas.problems("kernel-vector.json", {**doc, "requirements": ["K-PRIOR-SECTIONS"],
                                                   "invariant_requirements": ["K-PRIOR-SECTIONS"]}) == []


@given(strategies.provider_scenarios())
def test_generated_provider_scenarios_are_valid_vectors(doc):
    assert schemas.problems("provider-vector.json", {**doc, "requirements": ["P-FULL-CHAIN"],
                                                     "invariant_requirements": ["P-FULL-CHAIN"]}) == []


def _property(factory, **options):
    with Connection(lambda: PythonBinding("t", KERNEL_PROTOCOL, 10.0, factory=factory)) as connection:
        return kernel_property(connection, PropertyRun(**options))


def test_the_reference_kernel_holds_every_invariant():
    result = _property(create, profile="ci")
    assert result.status == "pass", [f.message for f in result.failures()][:3]
    assert len({f.requirement for f in result.findings}) >= 25, "the scenarios exercise most requirements"


SEEDED_RUN = """
import sys

import pytest
from pathlib import Path
from conformance.bindings.base import KERNEL_PROTOCOL
from conformance.bindings.python import PythonBinding
from conformance.engine.connection import Connection
from conformance.properties.runner import PropertyRun, kernel_property
from conformance.proofs.kernel_mutants import MUTANTS
run = PropertyRun(profile="default", seed=1234, examples=80, shrink=False, counterexamples=Path(sys.argv[1]))
with Connection(lambda: PythonBinding("t", KERNEL_PROTOCOL, 10.0, factory=MUTANTS["HistoryToEveryone"])) as c:
    print(kernel_property(c, run).status)
"""


def test_a_seed_reproduces_the_same_counterexample(tmp_path):
    # Each certification run is its own process; the seed decides the scenarios (and the shrinking, by work).
    runs = [subprocess.run([sys.executable, "-c", SEEDED_RUN, str(tmp_path / d)], capture_output=True, text=True,
                           cwd=ROOT, timeout=120) for d in ("a", "b")]
    assert [r.stdout.strip() for r in runs] == ["fail", "fail"], runs[0].stderr[-500:]
    files = [sorted(p.name for p in (tmp_path / d).rglob("*.yaml")) for d in ("a", "b")]
    assert files[0] == files[1] and files[0]


def test_a_counterexample_replays_as_a_vector(tmp_path):
    result = _property(MUTANTS["TrustsStatedTokens"], profile="ci", examples=100, shrink_work=500,
                       counterexamples=tmp_path)
    assert result.status == "fail"
    [path] = list(tmp_path.rglob("*.yaml"))
    vector = vectors_mod.load_file(path, catalog_mod.load(), tmp_path)  # valid, and its id matches its place
    assert vector.id.startswith("kernel/counterexample/") and vector.doc["origin"]["tool"] == "hypothesis"
    replay = ctxconf("replay", str(path), "--python", "conformance.proofs.kernel_mutants:TrustsStatedTokens",
                     "--report", str(tmp_path / "r.json"))
    assert replay.returncode == 1
    failing = set(json.loads((tmp_path / "r.json").read_text())["summary"]["blocking_failures"])
    assert failing & set(vector.requirements)
    assert ctxconf("replay", str(path)).returncode == 0, "the reference kernel passes the same scenario"
    rerun = ctxconf("kernel", "--vectors", str(tmp_path), "--no-properties",
                    "--python", "conformance.proofs.kernel_mutants:TrustsStatedTokens")
    assert rerun.returncode == 1, "the normal vector runner reproduces it too"


def test_certification_reports_its_seed(tmp_path):
    run = ctxconf("kernel", "--examples", "5", "--seed", "77", "--report", str(tmp_path / "r.json"))
    assert run.returncode == 0 and "seed 77" in run.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["seed"] == 77 and any(c["id"].startswith("property/") for c in report["cases"])


def _pairs(**run):
    """A search over {n, m} pairs, each 0 to 100, and the run that drives it."""
    from hypothesis import strategies as st
    return st.fixed_dictionaries({"n": st.integers(0, 100), "m": st.integers(0, 100)}), \
        PropertyRun(profile=run.pop("profile", "ci"), **run)


def _pairs_case(attempt, **run):
    """The property case the search over pairs reports."""
    from conformance.properties.runner import _result
    pairs, run = _pairs(**run)
    return _result("property/kernel/generated-scenarios", "pairs", run, pairs, attempt)


def test_a_failure_is_shrunk_to_the_smallest_scenario_that_shows_it():
    """Hypothesis replays a failing example before it shrinks it; that replay must count as the same failure,
    or hypothesis stops at once and the report carries the first, unshrunk, scenario."""
    from conformance.engine.results import Finding

    def attempt(doc):
        return [Finding("K-BUDGET-REJECT", doc["n"] <= 5, "over")], None
    from conformance.properties.runner import _search
    for profile in ("ci", "default"):
        found = _search(*reversed(_pairs(profile=profile)), attempt)
        assert found.doc == {"n": 6, "m": 0}, (profile, found.doc)


def test_a_requirement_failed_in_a_scenario_the_search_went_past_is_never_reported_passing():
    from conformance.engine.results import Finding

    def attempt(doc):  # the simplest failure shows only the second requirement
        return [Finding("K-BUDGET-REJECT", doc["n"] <= 50, "over"), Finding("K-PROMPT-BOUNDARIES", doc["m"] <= 5)], None
    case = _pairs_case(attempt)
    statuses = {(f.requirement, f.passed) for f in case.findings}
    assert ("K-BUDGET-REJECT", True) not in statuses and ("K-PROMPT-BOUNDARIES", True) not in statuses
    assert {r for r, passed in statuses if not passed} == {"K-BUDGET-REJECT", "K-PROMPT-BOUNDARIES"}


def test_a_suite_bug_after_a_failure_is_a_case_error_not_swallowed():
    from conformance.engine.results import Finding

    def attempt(doc):
        if doc["m"] % 3 == 1:
            raise KeyError("a check of the suite's own")
        return [Finding("K-BUDGET-REJECT", doc["n"] <= 5, "over")], None
    case = _pairs_case(attempt)
    assert case.error and "defect of the suite" in case.error and "KeyError" in case.error


def test_an_implementation_that_cannot_be_restarted_mid_search_keeps_the_failure_found():
    from conformance.bindings.base import HarnessError
    from conformance.engine.results import Finding
    seen = []

    def attempt(doc):
        seen.append(doc)
        if len(seen) > 3:
            raise HarnessError("gone")
        return [Finding("K-BUDGET-REJECT", doc["n"] <= 5, "over")], None
    case = _pairs_case(attempt)
    assert "could not start the implementation: gone" in case.error
    assert any(f.requirement == "K-BUDGET-REJECT" and not f.passed for f in case.findings)


@pytest.mark.parametrize("shrink_work", [0, 3])
def test_a_racy_failure_or_running_out_of_shrink_work_still_reports_the_failure_found(shrink_work):
    from conformance.engine.results import Finding
    calls = []

    def attempt(doc):  # fails once, then never again: hypothesis cannot reproduce it
        calls.append(doc)
        return [Finding("K-BUDGET-REJECT", len(calls) != 2 or doc["n"] == 0, "once")], None
    case = _pairs_case(attempt, shrink_work=shrink_work)
    assert case.error is None and any(not f.passed for f in case.findings), case.findings


def test_generation_does_not_draw_on_the_literals_of_imported_modules():
    """Hypothesis' local constants made a seed's scenarios depend on what the process had imported; the runner
    switches them off. A hypothesis that moved the hook would let them back silently: this fails instead."""
    from hypothesis.internal.conjecture import providers

    from conformance.properties import runner
    assert providers._get_local_constants is runner._NoLocalConstants
    assert providers._get_local_constants().set_for_type("integer") == ()


def test_a_search_that_passed_is_replayed_and_a_failure_in_the_replay_goes_back_to_hypothesis(monkeypatch):
    """Later searches with the same strategy, profile and seed try the scenarios the first drew, in its order,
    without hypothesis; at the first that fails hypothesis searches from the start, so the report is its own."""
    from conformance.engine.results import Finding
    from conformance.properties import runner
    monkeypatch.delenv(disk_cache.ENV, raising=False)  # this process's memory only: the first search draws
    monkeypatch.setattr(runner, "_PASSED_SEARCHES", {})
    pairs, run = _pairs()
    seen: list[list[dict]] = [[], [], []]

    def attempt(tried, fails=lambda doc: False):
        return lambda doc: (tried.append(doc), ([Finding("K-BUDGET-REJECT", not fails(doc), "over")], None))[1]
    first = runner._search(run, pairs, attempt(seen[0]), drawn_by=("pairs",))
    drawn = []
    monkeypatch.setattr(runner, "_draw", lambda *a: drawn.append(a) or runner._Search())
    second = runner._search(run, pairs, attempt(seen[1]), drawn_by=("pairs",))
    assert seen[1] == seen[0] and len(seen[0]) == run.settings().max_examples and drawn == []
    assert (second.examples, second.exercised, second.failed) == (first.examples, first.exercised, {})
    monkeypatch.undo()
    monkeypatch.delenv(disk_cache.ENV, raising=False)
    monkeypatch.setattr(runner, "_PASSED_SEARCHES", {("pairs", "ci", None, run.settings().max_examples):
                                                          [*map(runner.pickle.dumps, seen[0])]})
    middle = seen[0][len(seen[0]) // 2]
    failing = runner._search(run, pairs, attempt(seen[2], lambda doc: doc == middle), drawn_by=("pairs",))
    fresh = runner._search(run, pairs, attempt([], lambda doc: doc == middle))  # no key: hypothesis alone
    assert seen[2][:len(seen[0]) // 2 + 1] == seen[0][:len(seen[0]) // 2 + 1]  # replayed up to the failure...
    assert (failing.doc, failing.examples, failing.failed.keys()) == (fresh.doc, fresh.examples, fresh.failed.keys())
    assert failing.doc == middle  # ...then hypothesis drew again and found it, as it does with no replay at all


def test_a_failure_in_the_replay_of_a_search_that_does_not_shrink_is_what_hypothesis_finds(monkeypatch):
    """Without shrinking, the replay's first failure is the answer: hypothesis, drawing afresh, draws the same
    scenarios up to it (they passed, as when it first drew them) and stops there."""
    from conformance.engine.results import Finding
    from conformance.properties import runner
    monkeypatch.delenv(disk_cache.ENV, raising=False)
    monkeypatch.setattr(runner, "_PASSED_SEARCHES", {})
    pairs, run = _pairs(shrink=False)
    seen: list[list[dict]] = [[], [], []]

    def attempt(tried, fails=lambda doc: False):
        return lambda doc: (tried.append(doc), ([Finding("K-BUDGET-REJECT", not fails(doc), "over"),
                                                  Finding("K-PROMPT-BOUNDARIES", True)], None))[1]
    runner._search(run, pairs, attempt(seen[0]), drawn_by=("pairs",))
    middle = seen[0][len(seen[0]) // 2]
    drawing = runner._draw
    drawn = []
    monkeypatch.setattr(runner, "_draw", lambda *a: drawn.append(a) or drawing(*a))
    replayed = runner._search(run, pairs, attempt(seen[1], lambda doc: doc == middle), drawn_by=("pairs",))
    fresh = runner._search(run, pairs, attempt(seen[2], lambda doc: doc == middle))  # no key: hypothesis alone
    assert len(drawn) == 1 and seen[1] == seen[2] == seen[0][:len(seen[0]) // 2 + 1]
    assert (replayed.doc, replayed.examples, replayed.failed, replayed.exercised) == \
        (fresh.doc, fresh.examples, fresh.failed, fresh.exercised) and replayed.doc == middle


def test_a_passed_search_is_kept_between_processes_only_for_the_same_suite(monkeypatch, tmp_path):
    """With CTXCONF_CACHE set, another process (here: this one with its memory emptied) replays a passed
    search from the folder instead of drawing it; a file of another suite, or a broken one, is never read as one."""
    from conformance.engine.results import Finding
    from conformance.properties import runner
    monkeypatch.setenv(disk_cache.ENV, str(tmp_path))
    monkeypatch.setattr(runner, "_PASSED_SEARCHES", {})
    pairs, run = _pairs()
    seen: list[list[dict]] = [[], [], [], []]

    def attempt(tried):
        return lambda doc: (tried.append(doc), ([Finding("K-BUDGET-REJECT", True, "over")], None))[1]
    runner._search(run, pairs, attempt(seen[0]), drawn_by=("pairs",))
    [stored] = (tmp_path / "scenarios").iterdir()
    drawing = runner._draw
    drawn = []
    monkeypatch.setattr(runner, "_draw", lambda *a: drawn.append(a) or drawing(*a))
    monkeypatch.setattr(runner, "_PASSED_SEARCHES", {})  # another process: nothing in memory
    runner._search(run, pairs, attempt(seen[1]), drawn_by=("pairs",))
    assert seen[1] == seen[0] and len(seen[0]) == run.settings().max_examples and drawn == []
    monkeypatch.setattr(runner, "_PASSED_SEARCHES", {})
    monkeypatch.setattr(runner, "_suite_digest", lambda: "another suite")
    runner._search(run, pairs, attempt(seen[2]), drawn_by=("pairs",))
    assert len(drawn) == 1, "another suite's file is not found"
    monkeypatch.undo()
    monkeypatch.setenv(disk_cache.ENV, str(tmp_path))
    monkeypatch.setattr(runner, "_PASSED_SEARCHES", {})
    monkeypatch.setattr(runner, "_draw", lambda *a: drawn.append(a) or drawing(*a))
    stored.write_bytes(stored.read_bytes()[:10])  # cut short
    runner._search(run, pairs, attempt(seen[3]), drawn_by=("pairs",))
    assert len(drawn) == 2 and seen[3] == seen[0], "a broken file is drawn again, to the same scenarios"


def test_no_shrink_work_reports_the_failure_as_first_found():
    from conformance.engine.results import Finding
    from conformance.properties.runner import _search

    def attempt(doc):
        return [Finding("K-BUDGET-REJECT", doc["n"] <= 5, "over")], None
    shrunk = _search(*reversed(_pairs()), attempt)
    first = _search(*reversed(_pairs(shrink_work=0)), attempt)
    assert first.failed.keys() == shrunk.failed.keys() == {"K-BUDGET-REJECT"} and first.doc["n"] > 5
    assert first.examples < shrunk.examples and shrunk.doc == {"n": 6, "m": 0} != first.doc


def test_a_search_that_does_not_shrink_stops_at_its_first_failure_without_printing_it(monkeypatch):
    """The self-test's searches do not shrink: the first failure is the answer, as with no shrink work, and
    hypothesis's replay to print it (the repr of the whole scenario) is never made."""
    from hypothesis.vendor import pretty
    from conformance.engine.results import Finding
    from conformance.properties.runner import _search
    tried: list[list[dict]] = [[], []]

    def attempt(seen):
        return lambda doc: (seen.append(doc), ([Finding("K-BUDGET-REJECT", doc["n"] <= 5, "over")], None))[1]
    first = _search(*reversed(_pairs(shrink_work=0)), attempt(tried[0]))
    monkeypatch.setattr(pretty.RepresentationPrinter, "pretty", lambda *a, **k: pytest.fail("printed the scenario"))
    unshrunk = _search(*reversed(_pairs(shrink=False)), attempt(tried[1]))
    assert (unshrunk.doc, unshrunk.examples, unshrunk.failed) == (first.doc, first.examples, first.failed)
    assert tried[0] == tried[1] and tried[1][-1] == unshrunk.doc and unshrunk.doc["n"] > 5


def test_the_command_line_takes_a_shrink_budget_and_refuses_a_negative_one(tmp_path):
    run = ctxconf("kernel", "--python", "conformance.proofs.kernel_mutants:TrustsStatedTokens", "--profile", "ci",
                  "--shrink-work", "0", "--counterexamples", str(tmp_path), "--report", str(tmp_path / "r.json"))
    [case] = [c for c in json.loads((tmp_path / "r.json").read_text())["cases"] if c["id"].startswith("property/")]
    assert run.returncode == 1 and case["status"] == "fail" and case["counterexample"], run.stdout[-2000:]
    bad = ctxconf("kernel", "--shrink-work", "-1")
    assert bad.returncode == 2 and "--shrink-work" in bad.stderr and "at least 0" in bad.stderr
