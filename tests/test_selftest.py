"""The self-test itself: every mutant of both roles is caught on what it
declares (property-only ones by the properties and not the vectors), and the
reference implementations and every conforming variant, over each binding
they are certified on, come out clean. And the self-test's own verdicts can
fail: a variant that is failed, or a mutant that strays, is a problem."""

from conformance import selftest
from conformance.proofs import kernel_mutants, kernel_variants, provider_variants
from tests.conftest import ROOT


def test_selftest_kills_every_mutant_and_clears_every_conforming_implementation():
    outcomes = selftest.run("ci", jobs=2)
    problems = {o.subject.key: o.problem for o in outcomes if o.problem}
    assert not problems, problems
    assert sum(o.subject.property_only for o in outcomes) >= 5, "properties must pull their weight"
    assert selftest.unexercised(outcomes) == [], "every testable requirement has a mutant"
    variants = {o.subject.key for o in outcomes if o.subject.freedom}
    assert len({name for name, _ in variants}) >= 25
    assert {binding for _, binding in variants} == {"python", "stdio", "grpc"}
    text = selftest.render(outcomes, 0.0)
    assert "Kill matrix" in text and "False-failure matrix" in text


def test_a_failed_variant_and_a_straying_mutant_are_problems():
    wrong = kernel_mutants.MUTANTS["PerSectionBudget"]
    posing = selftest.Subject("PosingAsVariant", "kernel", wrong, freedom="claims a freedom it does not have")
    assert selftest.certify(posing, "ci", None).problem.startswith("FALSE FAILURE of K-BUDGET-REJECT")
    undeclared = selftest.Subject("Undeclared", "kernel", wrong, breaks=("K-BUDGET-REJECT",))
    assert "does not declare" in selftest.certify(undeclared, "ci", None).problem


def test_every_conforming_variant_is_listed_in_the_readme():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## What a pass and a fail mean"):readme.index("## The real wire")]
    names = [*kernel_variants.VARIANTS, *provider_variants.VARIANTS]
    assert [n for n in names if f"`{n}`" not in section] == []
