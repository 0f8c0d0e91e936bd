"""Requirement IDs and statuses are checked, not trusted. Every requirement ID
the suite's code names is in the catalog, so a misspelt one fails here before
any run (and, should one slip through, the finding refuses it when made:
tests/test_outputs.py). Statuses, verdicts and placements are enums whose
values are what the reports have always said."""

import ast
import json
import re

from conformance.data import catalog as catalog_mod
from conformance.engine.provider_checks import Placement, placement
from conformance.engine.results import Status
from conformance.reports.verdict import Verdict
from tests.conftest import ROOT

REQUIREMENT_ID = re.compile(r"^(?:K|KC|P|C)-[A-Z0-9]+(?:-[A-Z0-9]+)*$")


def ids_named(source: str) -> set[str]:
    """The string constants in `source` that have the shape of a requirement ID."""
    return {node.value for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and REQUIREMENT_ID.match(node.value)}


def test_every_requirement_id_the_code_names_is_in_the_catalog():
    known = set(catalog_mod.load().requirements)
    unknown = {}
    for path in sorted((ROOT / "conformance").rglob("*.py")):
        if "pb" in path.relative_to(ROOT).parts:
            continue
        missing = ids_named(path.read_text(encoding="utf-8")) - known
        if missing:
            unknown[str(path.relative_to(ROOT))] = sorted(missing)
    assert unknown == {}


def test_the_scan_finds_a_misspelt_id_and_nothing_that_only_looks_alike():
    source = 'self.add("K-SCOPE-DISCARDS", False, "K-SCOPE-LOG is logged"); x = "KC-NO-REORDER"; y = "K-"'
    assert ids_named(source) == {"K-SCOPE-DISCARDS", "KC-NO-REORDER"}
    assert ids_named(source) - set(catalog_mod.load().requirements) == {"K-SCOPE-DISCARDS"}


def test_enum_values_are_what_the_reports_say():
    assert json.dumps([Status.NOT_TESTED, Verdict.NOT_CONFORMANT]) == '["not-tested", "not conformant"]'
    assert f"{Status.PASS}|{Verdict.CONFORMANT:>11}" == "pass| conformant"
    assert Status("xfail") is Status.XFAIL


def test_placement_is_one_of_three():
    prior = [{"provider": "a", "label": "A", "content": []}]
    own = {"provider": "b", "label": "B", "content": []}
    assert placement(prior, prior + [own]) is Placement.PREFIX
    assert placement(prior, [own]) is Placement.DELTA
    assert placement(prior, [own, *prior]) is Placement.MOVED


def test_the_schemas_admit_exactly_the_assertion_keys_the_evaluator_answers_to():
    # The vector schemas refuse an unknown key at load time; this keeps them and the one evaluator in step.
    from conformance.engine.expectations import KERNEL
    from conformance.engine.provider_checks import PROVIDER
    for role, language in (("kernel", KERNEL), ("provider", PROVIDER)):
        schema = json.loads((ROOT / "schemas" / f"{role}-vector.json").read_text())
        assert set(schema["$defs"]["Assertions"]["properties"]) == set(language.assertions), role
        assert schema["$defs"]["Assertions"]["additionalProperties"] is False


def test_one_of_is_judged_alike_for_both_roles():
    from conformance.engine.expectations import KERNEL, NotEvaluable
    from conformance.engine.provider_checks import PROVIDER
    seen = {"turn_failed": False, "failure": None}
    assert KERNEL.evaluate({"one_of": [{"turn_failed": True}, {"turn_failed": False}]}, seen) == []
    assert KERNEL.evaluate({"one_of": [{"turn_failed": True}]}, seen) == [
        "none of the accepted behaviours holds: (1) turn_failed: expected True, got False"]
    # An alternative the observation cannot judge might be the one that holds: no finding, not a failure.
    try:
        PROVIDER.evaluate({"one_of": [{"fails": {}}, {"categorized": True}]}, seen)
    except NotEvaluable:
        pass
    else:
        raise AssertionError("a one_of with an unjudgeable alternative was judged")
