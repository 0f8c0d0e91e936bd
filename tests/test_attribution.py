"""The judge names the rule a wrong chain breaks: a kernel's fault is charged from the judgment itself,
not re-derived from what the kernel kept (kernel_checks only reads `Judgment.broken`)."""

import pytest

from conformance.engine.kernel_judge import judge_failure, judge_reply
from conformance.engine.scenario import FakeProvider, Model
from conformance.wire import tokens

FORMULA = Model("formula", 1000, 0, 0)
TOKENIZER = Model("tokenized", 1000, 0, 0, count_tokens=True)
FAKE = FakeProvider("p", {"default_token_budget": 100})


def section(text: str, figure: int | None = None, label: str = "notes", model: Model = FORMULA) -> dict:
    content = [{"text": {"text": text}}]
    return {"provider": "p", "label": label, "content": content,
            "tokens": model.count(content) if figure is None else figure,
            "stability": "STABILITY_UNSPECIFIED", "truncated": False}


def broken(judgment, observed: list[dict]) -> list[str]:
    assert not any(o.matches(observed) for o in judgment.outcomes), "a chain a conforming kernel may hold"
    found = judgment.broken(observed)
    assert all(m.why for m in found if m.requirement != judgment.blame), "each misreading says why"
    return [m.requirement for m in found]


def test_keeping_a_reply_over_budget_by_its_stated_figures_breaks_budget_reject():
    kept = section("a" * 40)                                  # 10 tokens, stated 10
    assert broken(judge_reply(FAKE, [], {"sections": [kept]}, 5, FORMULA), [kept]) == ["K-BUDGET-REJECT"]


def test_dropping_a_reply_exactly_at_its_budget_breaks_budget_reject():
    exact = section("a" * 40)
    judgment = judge_reply(FAKE, [], {"sections": [exact]}, 10, FORMULA)
    assert broken(judgment, []) == ["K-BUDGET-REJECT"]
    assert "exactly its budget" in judgment.broken([])[0].why


@pytest.mark.parametrize("model, rule", [(FORMULA, "K-COUNT-FALLBACK-FORMULA"), (TOKENIZER, "K-COUNT-RESOLUTION")])
def test_the_right_sections_with_a_wrong_figure_break_the_count_rule(model, rule):
    offered = section("x" * 100, model=model)
    judgment = judge_reply(FAKE, [], {"sections": [offered]}, 50, model)
    assert broken(judgment, [{**offered, "tokens": offered["tokens"] + 3}]) == [rule]


def test_dropping_a_reply_only_the_formula_counts_over_budget_breaks_count_resolution():
    offered = section("x" * 100, model=TOKENIZER)             # the tokenizer counts 21, the formula 25
    assert tokens.fallback_count(offered["content"]) > 23 >= TOKENIZER.count(offered["content"])
    assert broken(judge_reply(FAKE, [], {"sections": [offered]}, 23, TOKENIZER), []) == ["K-COUNT-RESOLUTION"]


def test_dropping_a_reply_the_tokenizer_counts_exactly_at_budget_charges_the_count_and_names_the_other_reading():
    # Dropped, though the tokenizer counts exactly the budget and only the formula counts more: a kernel that
    # compares with >= and one that counts with the formula both do this. The count is charged; both are named.
    offered = section("x" * 100, model=TOKENIZER)
    counted = TOKENIZER.count(offered["content"])
    assert tokens.fallback_count(offered["content"]) > counted
    [reading] = judge_reply(FAKE, [], {"sections": [offered]}, counted, TOKENIZER).broken([])
    assert reading.requirement == "K-COUNT-RESOLUTION" and "K-BUDGET-REJECT" in reading.why


def test_an_unlabeled_section_may_be_dropped_relabelled_or_kept_as_it_is():
    unlabeled = section("a" * 40, label="")
    judgment = judge_reply(FAKE, [], {"sections": [unlabeled]}, 50, FORMULA)
    assert [o.matches(c) for o in judgment.outcomes[1:] for c in ([], [unlabeled], [{**unlabeled, "label": "x"}])
            ].count(True) >= 3  # R-MISSING-LABEL; the first outcome is the reply refused whole
    assert judgment.may_fail_turn


def test_a_content_fault_beside_a_budget_fault_is_charged_with_it():
    image = {**section("a" * 40), "label": "pic", "content": [{"image": {"mime_type": "image/png", "data": "AA=="}}]}
    big = section("a" * 40)
    judgment = judge_reply(FAKE, [], {"sections": [image, big]}, 5, FORMULA)
    assert broken(judgment, [image, big]) == ["K-NON-TEXT-REJECT", "K-BUDGET-REJECT"]


def test_keeping_any_of_a_reply_it_had_to_discard_whole_is_the_scope_rule_alone():
    foreign = {**section("a" * 40, label=""), "provider": "other"}
    assert broken(judge_reply(FAKE, [], {"sections": [foreign]}, 50, FORMULA), [foreign]) == ["K-SCOPE-DISCARD"]


def test_a_failed_call_whose_prior_section_comes_back_recounted_breaks_the_count_rule():
    prior = [section("a" * 40)]
    judgment = judge_failure("p", prior, {"code": "UNAVAILABLE"}, FORMULA)
    assert broken(judgment, [{**prior[0], "tokens": 99}]) == ["K-COUNT-FALLBACK-FORMULA"]
