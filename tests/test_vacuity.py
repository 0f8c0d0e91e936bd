"""No pass without evidence (issue 23): where nothing an implementation could have done would fail a
requirement, the requirement gets no finding (it is then reported not exercised, with the reason), never a
pass. Each scenario here is one where a requirement has nothing to judge."""

import pytest

from conformance.bindings.python import PythonBinding
from conformance.engine import kernel_run
from conformance.engine.connection import Connection
from conformance.bindings.base import KERNEL_PROTOCOL
from conformance.reference.kernel import ReferenceKernel
from conformance.engine.scenario import from_vector


def _passes(doc: dict) -> set[str]:
    with Connection(lambda: PythonBinding("k", KERNEL_PROTOCOL, 10.0, factory=ReferenceKernel)) as connection:
        result = kernel_run.case_result("t", "t", from_vector(doc), connection)
    assert result.error is None, result.error
    return {f.requirement for f in result.findings if f.passed}


def _doc(providers: list[dict], models: list[dict] | None = None, **setup) -> dict:
    models = models or [{"id": "m", "context_window": 1000, "reserved_output": 0, "system_overhead": 0}]
    return {"id": "kernel/test/vacuity", "title": "t", "requirements": [], "origin": {"tool": "test"},
            "setup": {"models": models, "primary_model": models[0]["id"], "providers": providers, **setup},
            "turns": [{"assemble": {"session_id": "01JDTESTSESSION0000000001", "turn_id": "01JDTESTTURN00000000000001",
                                    "model": models[0]["id"]}}]}


def _provider(name: str, **capabilities) -> dict:
    return {"name": name, "capabilities": {"default_token_budget": 100, "stability": "STABILITY_STATIC", **capabilities}}


@pytest.mark.parametrize("requirement, doc", [
    # no provider to ask, to order, to configure or to render
    ("K-FIRE-EACH-TURN", _doc([])),
    ("K-DECLARATION-ORDER", _doc([_provider("only")])),
    ("KC-CONFIGURE", _doc([])),
    ("K-PROMPT-BOUNDARIES", _doc([_provider("quiet")])),  # it contributed nothing: no boundary to look for
    # no compactor in the chain
    ("K-HISTORY-TO-COMPACTOR", _doc([_provider("plain")])),
    ("K-COMPACTOR-BUDGET", _doc([_provider("plain")])),
    # caps that fit the routing chain but not a declared model outside it: warning or not, both are accepted
    ("KC-BUDGET-SUM-WARN", _doc([_provider("p")], models=[
        {"id": "big", "context_window": 1000, "reserved_output": 0, "system_overhead": 0},
        {"id": "side", "context_window": 50, "reserved_output": 0, "system_overhead": 0}])),
])
def test_nothing_to_judge_is_no_pass(requirement, doc):
    assert requirement not in _passes(doc)


def test_the_same_scenarios_do_judge_what_they_can():
    """The control: a provider that contributes is judged on what it did."""
    doc = _doc([{**_provider("a"), "script": [{"append": [{"label": "A", "text": "a"}]}]},
                {**_provider("b"), "script": [{"append": [{"label": "B", "text": "b"}]}]}])
    assert {"K-FIRE-EACH-TURN", "K-DECLARATION-ORDER", "K-PROMPT-BOUNDARIES", "KC-CONFIGURE"} <= _passes(doc)
