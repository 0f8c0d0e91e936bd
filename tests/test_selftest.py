"""The self-test: every mutant is caught on what it declares (property-only
ones by the properties and not the vectors), and the reference
implementations and every conforming variant, over each binding they are
certified on, come out with no failure (one test each, so that pytest-xdist
spreads them over the cores). And the self-test's own verdicts can
fail: a variant that is failed, or a mutant that strays, is a problem."""

import pytest

from conformance.data import catalog as catalog_mod
from conformance.commands import selftest
from conformance.engine.results import CaseResult, Finding
from conformance.proofs import kernel_mutants, kernel_variants, provider_variants
from tests.conftest import ROOT, ctxconf

SUBJECTS = {s.key: s for s in selftest.slowest_first(selftest.subjects())}


MUTANTS = [k for k, s in SUBJECTS.items() if s.mutant]
PARTS = [(k, part) for k, s in SUBJECTS.items() for part in selftest.parts(s)]


# First, as pytest-xdist hands tests out in the order they are defined: the parts of the longest run.
@pytest.mark.parametrize("key, part", PARTS, ids=[f"{'-'.join(k)}-{part}" for k, part in PARTS])
def test_each_part_of_a_long_conforming_run_passes(key, part, selftest_part):
    # What fails or errors in a part fails the whole; whether the whole exercised every MUST is judged by
    # test_each_conforming_implementation_passes_over_each_binding, which joins the parts.
    outcome = selftest.judged(SUBJECTS[key], *selftest_part(SUBJECTS[key], part), whole=False)
    assert not outcome.problem, outcome.problem


@pytest.mark.parametrize("key", MUTANTS, ids="-".join)
def test_each_mutant_is_killed_on_what_it_declares(key, selftest_outcome):
    outcome = selftest_outcome(SUBJECTS[key])
    assert not outcome.problem, f"{outcome.subject.name} [{outcome.subject.binding}]: {outcome.problem}"


@pytest.mark.gathers
@pytest.mark.parametrize("role", ["kernel", "provider"])
def test_every_vector_kills_a_mutant_and_every_must_is_caught_by_a_vector(role, selftest_outcome):
    # Known once every mutant has run: the mutants' outcomes are the ones the test above judged, run once in
    # whichever pytest-xdist worker came to them first (these two tests are `gathers`: handed out last).
    outcomes = [selftest_outcome(SUBJECTS[key]) for key in MUTANTS if SUBJECTS[key].role == role]
    assert selftest.idle_vectors(outcomes, (role,)) == [], "each vector must fail some mutant, or say why it need not"
    assert selftest.only_by_properties(outcomes, (role,)) == [], "a MUST caught only by the property tests"


@pytest.mark.parametrize("key", [pytest.param(k, marks=[pytest.mark.gathers] if selftest.parts(s) else [])
                                 for k, s in SUBJECTS.items() if not s.mutant], ids="-".join)
def test_each_conforming_implementation_passes_over_each_binding(key, selftest_part):
    subject = SUBJECTS[key]
    if selftest.parts(subject):  # certified in parts (the first test), spread over the workers: joined here
        runs = [selftest_part(subject, part) for part in selftest.parts(subject)]
        # The parts ran every vector once, in certify()'s order, and the properties.
        assert [c.id for cases, _ in runs for c in cases] == [v.id for v in selftest._vectors(subject.role, False)]
        assert runs[-1][1] and not any(generated for _, generated in runs[:-1])
        outcome = selftest.joined(subject, runs)
    else:
        outcome = selftest.certify(subject, "ci", None)
    assert not outcome.problem, outcome.problem


def test_the_self_test_covers_every_requirement_both_ways():
    everyone = list(SUBJECTS.values())
    assert selftest.unexercised(everyone) == [], "every testable requirement has a mutant"
    # Mutants only the property tests catch: fewer as vectors take over what the generators found first.
    assert sum(s.property_only for s in everyone) >= 3, "properties must pull their weight"
    variants = {s.key for s in everyone if s.freedom}
    assert len(SUBJECTS) == len(selftest.subjects()), "every subject has its own key"
    assert len({(role, name) for role, name, _ in variants}) >= 25
    assert {binding for _, _, binding in variants} == {"python", "stdio", "grpc", "python+plugins"}


def test_a_failed_variant_and_a_straying_mutant_are_problems():
    wrong = kernel_mutants.MUTANTS["PerSectionBudget"]
    posing = selftest.Subject("PosingAsVariant", "kernel", wrong, freedom="claims a freedom it does not have")
    assert selftest.certify(posing, "ci", None).problem.startswith("FALSE FAILURE of K-BUDGET-REJECT")
    undeclared = selftest.Subject("Undeclared", "kernel", wrong, breaks=("K-BUDGET-REJECT",))
    assert "does not declare" in selftest.certify(undeclared, "ci", None).problem
    # A kill is every declared requirement caught: one of two is a problem, not a kill.
    overclaiming = selftest.Subject("Overclaiming", "kernel", wrong, breaks=(*wrong.breaks, "K-TIMEOUT"), also=wrong.also)
    outcome = selftest.certify(overclaiming, "ci", None, properties=False)
    assert not outcome.killed and outcome.problem == "not caught on K-TIMEOUT, which it declares"


def test_collateral_is_derived_only_from_a_citing_vector_that_shows_a_declared_break(selftest_outcome):
    def case(cites, fails):
        return CaseResult("v", "v", requirements=cites, findings=[Finding(r, False) for r in fails])
    cases = [case(("K-BUDGET-REJECT", "K-BUDGET-VALIDATE"), ("K-BUDGET-REJECT", "K-BUDGET-VALIDATE")),
             case(("K-TOKEN-BUDGET",), ("K-TOKEN-BUDGET", "K-HISTORY-TOKENS")),   # fails one it does not cite
             case(("K-SCOPE-LOG",), ("K-SCOPE-LOG",))]                           # shows nothing declared
    assert selftest.cited_collateral(cases, ("K-BUDGET-REJECT", "K-TOKEN-BUDGET")) == {"K-BUDGET-VALIDATE"}
    # A citation excuses its own case only: the same requirement failed in a vector that does not cite it, or in
    # a generated scenario, strays.
    breaks = ("K-BUDGET-REJECT", "K-TOKEN-BUDGET")
    assert selftest.stray_failures(cases, [], breaks, ()) == {"K-HISTORY-TOKENS", "K-SCOPE-LOG"}
    elsewhere = case(("K-SCOPE-LOG",), ("K-BUDGET-VALIDATE",))
    assert selftest.stray_failures([*cases, elsewhere], [], breaks, ("K-HISTORY-TOKENS", "K-SCOPE-LOG")) == \
        {"K-BUDGET-VALIDATE"}
    assert selftest.stray_failures(cases[:1], [case((), ("K-BUDGET-VALIDATE",))], breaks, ()) == {"K-BUDGET-VALIDATE"}
    # On a real mutant: FloorNotCeiling's declared `also` does not name what its killing vectors cite beside the count
    # (its self-test outcome, certified once for this test and the test of each mutant).
    floor = kernel_mutants.MUTANTS["FloorNotCeiling"]
    outcome = selftest_outcome(SUBJECTS[("kernel", "FloorNotCeiling", "python")])
    assert outcome.cited - set(floor.also) and not outcome.problem, (outcome.cited, outcome.problem)


def test_the_command_prints_both_matrices():
    run = ctxconf("selftest", "-k", "JoinedBySpace")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Kill matrix" in run.stdout and "False-failure matrix" in run.stdout
    assert "BlocksJoinedBySpace" in run.stdout and "0/0 mutants" in run.stdout
    assert ctxconf("selftest", "-k", "NoSuchImplementation").returncode == 2


def test_the_variants_page_is_written_from_the_variants():
    from conformance.proofs import table
    assert table.PAGE.read_text(encoding="utf-8") == table.markdown(), "run python -m conformance.proofs.table"
    assert all(f"`{n}`" in table.markdown() for n in (*kernel_variants.VARIANTS, *provider_variants.VARIANTS))


def test_every_variant_names_what_grants_its_freedom(catalog):
    suite_rules = {"the harness protocol: features are optional", "the harness protocol: the implementation names itself",
                   "the proto3 JSON mapping"}
    spec = ROOT.parent / "shared" / "spec" / "upstream"
    for cls in [*kernel_variants.VARIANTS.values(), *provider_variants.VARIANTS.values()]:
        assert cls.freedom, cls.__name__
        if cls.grants in catalog.rulings or cls.grants in suite_rules:
            continue
        file, _, anchor = cls.grants.partition("#")
        assert anchor, f"{cls.__name__}: {cls.grants!r} is neither a ruling nor a spec anchor"
        if spec.is_dir():
            assert anchor in catalog_mod.anchors_in((spec / file).read_text(encoding="utf-8")), cls.grants


def test_by_default_the_self_test_runs_a_process_per_core(monkeypatch):
    """One worker per core the process may use (not per core the machine has), unless --jobs says otherwise."""
    from conformance.commands import selftest
    seen = []

    def run(jobs, make_worker, worker_args, items, on_result, lost):
        seen.append(jobs)
        for key in items:
            on_result(selftest.Outcome(next(s for s in selftest.subjects() if s.key == key)))

    monkeypatch.setattr(selftest.pool, "run", run)
    monkeypatch.setattr(selftest.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    monkeypatch.setattr(selftest.os, "cpu_count", lambda: 64)
    assert selftest.cores() == 3
    assert len(selftest.run()) == len(selftest.subjects())
    selftest.run(jobs=2)
    assert seen == [3, 2]
