"""The self-test itself: every mutant of both roles is caught (property-only
ones by the properties and not the vectors), and every reference
implementation, the gRPC one included, comes out clean."""

from conformance import selftest


def test_selftest_kills_every_mutant_and_clears_every_reference():
    outcomes = selftest.run("ci", jobs=2)
    problems = {o.subject.name: o.problem for o in outcomes if o.problem}
    assert not problems, problems
    assert sum(o.subject.property_only for o in outcomes) >= 5, "properties must pull their weight"
    assert selftest.unexercised(outcomes) == [], "every testable requirement has a mutant"
    assert "mutants killed" in selftest.render(outcomes, 0.0)
