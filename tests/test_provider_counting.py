"""The kernel the suite plays for a provider resolves CountTokens by the model named, and the checks judge a
section's figure and its budget by what it was given (R-COUNT-FOR-THE-TARGET, R-COUNT-WHOLE-SECTION,
R-COUNT-WITHOUT-MODEL-REF); a compactor may not fail instead of fitting a chain (R-COMPACTOR-MUST-FIT)."""

import pytest
import yaml

from conformance.data import vectors as vectors_mod
from conformance.bindings.base import CallFailed
from conformance.data import provider_cases
from conformance.data.provider_cases import Step, case_models
from conformance.engine.provider_checks import Checker, Counting
from conformance.engine.provider_driver import ProviderTranscript, Served, StepRecord, SuiteKernel
from conformance.proofs import provider_mutants, provider_variants
from conformance.data.schemas import InputError
from conformance.wire import tokens
from tests.conftest import MANIFESTS, certify_provider

TWO_BLOCKS = [{"text": {"text": "first part"}}, {"text": {"text": "second part, longer than the first"}}]


def _ask(kernel, content, model=None):
    request = {"content": content, **({"model_ref": {"provider": "", "id": model}} if model is not None else {})}
    return kernel("CountTokens", None, request)


def test_the_kernel_counts_for_the_model_named_and_falls_back_without_one():
    kernel = SuiteKernel({**provider_cases.SUITE_MODELS, "target": "thirds"})
    text = [{"text": {"text": "Café résumé naïve — 漢字"}}]
    words, thirds, plain = (_ask(kernel, text, m) for m in ("suite-model", "target", "suite-plain-model"))
    assert words == {"count": tokens.count_with("words", text)[0], "exact": True}
    assert thirds == {"count": tokens.count_with("thirds", text)[0], "exact": True} and thirds != words
    assert plain == _ask(kernel, text) == _ask(kernel, text, "") == {"count": tokens.fallback_count(text), "exact": False}
    assert kernel("CountTokens", None, {"content": text, "model_ref": {"provider": "anthropic", "id": "target"}}) == thirds
    with pytest.raises(CallFailed) as missing:
        _ask(kernel, text, "gpt-unknown")
    assert missing.value.code == "NOT_FOUND"
    assert ("Café résumé naïve — 漢字", "target") in kernel.served and ("Café résumé naïve — 漢字", "") in kernel.served


def test_the_tokenizers_count_the_whole_text_so_per_block_sums_differ():
    for tokenizer in ("words", "thirds", "none"):
        whole = tokens.count_with(tokenizer, TWO_BLOCKS)[0]
        assert whole == tokens.count_with(tokenizer, [{"text": {"text": tokens.text_of(TWO_BLOCKS)}}])[0]
        assert whole != sum(tokens.count_with(tokenizer, [b])[0] for b in TWO_BLOCKS), tokenizer
    single = [TWO_BLOCKS[1]]
    assert tokens.count_with("words", single)[0] == tokens.suite_tokenizer_count(single)  # the kernel side's, on one block


def test_a_model_given_two_tokenizers_is_exit_2():
    doc = {"steps": [{"contribute": {"model_target": {"id": "m", "tokenizer": "thirds"}}},
                     {"contribute": {"model_target": {"id": "m", "tokenizer": "none"}}}]}
    with pytest.raises(InputError, match=r"steps\[1\].contribute.model_target.tokenizer"):
        case_models(doc, "v.yaml")
    with pytest.raises(InputError, match="suite-model"):
        case_models({"steps": [{"contribute": {"model_target": {"id": "suite-model", "tokenizer": "thirds"}}}]})
    assert case_models({"steps": [{"contribute": {"model_target": {"id": "m", "tokenizer": "none"}}},
                                  {"contribute": {"model_target": {"id": "m"}}}]})["m"] == "none"


def _record(section: dict, model: str = "suite-model", budget: int = 100) -> StepRecord:
    record = StepRecord(Step("contribute", {}, {}, 0))
    record.request = {"model_target": {"id": model}, "prior_sections": [], "token_budget": budget}
    return record


def _section(content, figure):
    return {"label": "L", "content": content, "tokens": figure}


@pytest.mark.parametrize("model, tokenizer", [("suite-model", "words"), ("other", "thirds"), ("plain", "none")])
def test_a_figure_is_judged_by_what_the_provider_was_given(model, tokenizer):
    models = {**provider_cases.SUITE_MODELS, "other": "thirds", "plain": "none"}
    counting = Counting(ProviderTranscript(None, models=models, served=Served()))
    truth, fallback = tokens.count_with(tokenizer, TWO_BLOCKS)[0], tokens.fallback_count(TWO_BLOCKS)
    text = tokens.text_of(TWO_BLOCKS)
    record = _record({}, model)
    assert counting.figure_problem(record, _section(TWO_BLOCKS, truth)) is None  # right, never seen given
    counting.served.add((text, model))
    assert counting.figure_problem(record, _section(TWO_BLOCKS, truth)) == ""
    per_block = sum(tokens.count_with(tokenizer, [b])[0] for b in TWO_BLOCKS)
    assert "sum of its blocks" in counting.figure_problem(record, _section(TWO_BLOCKS, per_block))
    if tokenizer != "none":
        assert "CountTokens gives" in counting.figure_problem(record, _section(TWO_BLOCKS, fallback))
        counting.served.add((text, ""))  # asked without a model_ref: the fallback it was given is its figure
        assert counting.figure_problem(record, _section(TWO_BLOCKS, fallback)) == ""
        assert counting.measure(record, _section(TWO_BLOCKS, fallback)) == fallback
    assert counting.measure(record, _section(TWO_BLOCKS, 1)) == truth  # a figure nobody gave: the kernel's count


def test_another_models_count_is_named_as_such():
    counting = Counting(ProviderTranscript(None, models={**provider_cases.SUITE_MODELS, "t": "thirds"},
                                           served=Served({("first partsecond part, longer than the first", "suite-model")})))
    problem = counting.figure_problem(_record({}, "t"), _section(TWO_BLOCKS, tokens.count_with("words", TWO_BLOCKS)[0]))
    assert "its count on model 'suite-model'" in problem


@pytest.mark.parametrize("name", ["CountsForFixedModel", "StatesExactWhenServedInexact", "StatesUnservedFallback",
                                  "SumsPerBlockCounts", "CachesCountsByLabel"])
def test_each_counting_mutant_fails_the_figure_rule_on_the_vectors(name, provider_vectors, tmp_path):
    results = certify_provider(getattr(provider_mutants, name), "filereader", provider_vectors, tmp_path)
    assert {f.requirement for r in results for f in r.failures()} == {"P-TOKENS-COUNTTOKENS"}


@pytest.mark.parametrize("name", ["OmitsModelRef", "NamesModelProvider", "BlockPerParagraph"])
def test_the_counting_freedoms_pass(name, provider_vectors, tmp_path):
    results = certify_provider(getattr(provider_variants, name), "filereader", provider_vectors, tmp_path)
    assert not [f for r in results for f in r.failures()] and not [r.error for r in results if r.error]


def _compactor_checker(failure: dict, budget: int, counting_off: bool = False, prior_text: str = "x " * 80):
    transcript = ProviderTranscript(None, {"compactor": True}, models=dict(provider_cases.SUITE_MODELS))
    checker = Checker(transcript, None)
    checker.configured = True  # a Configure earlier in the case took its config
    record = StepRecord(Step("contribute", {}, {}, 1), counting_off=counting_off)
    content = [{"text": {"text": prior_text}}]
    record.request = {"model_target": {"id": "suite-model"}, "token_budget": budget,
                      "prior_sections": [{"provider": "p", "label": "P", "content": content,
                                          "tokens": tokens.count_with("words", content)[0]}]}
    record.failure = failure
    return checker, record


def _failure(category: str, code: str) -> dict:
    return {"code": code, "message": "m", "details": [],
            "context_error": {"category": f"CONTEXT_ERROR_CATEGORY_{category.upper()}", "message": "m",
                              "retryable": False}}


@pytest.mark.parametrize("failure, budget, counting_off, prior, gives_up", [
    (_failure("budget_exceeded", "FAILED_PRECONDITION"), 20, False, "x " * 80, True),
    (_failure("unknown", "INTERNAL"), 20, False, "x " * 80, True),
    (_failure("invalid_request", "INVALID_ARGUMENT"), 5, False, "x " * 80, True),
    (_failure("invalid_request", "INVALID_ARGUMENT"), 0, False, "x " * 80, False),   # R-UNSERVABLE-REQUEST
    (_failure("budget_exceeded", "FAILED_PRECONDITION"), 0, False, "x " * 80, True),
    (_failure("unknown", "INTERNAL"), 20, True, "x " * 80, False),                  # CountTokens was down
    (_failure("unknown", "INTERNAL"), 20, False, "fits", False),                     # nothing to compact
])
def test_a_compactor_that_fails_instead_of_fitting_an_over_budget_chain(failure, budget, counting_off, prior, gives_up):
    checker, record = _compactor_checker(failure, budget, counting_off, prior)
    assert bool(checker.gave_up(record)) is gives_up
    checker.check_failure(record, "here")
    assert [f.passed for f in checker.findings if f.requirement == "C-CHAIN-FITS"] == ([False] if gives_up else [])


def test_the_compactor_that_gives_up_is_caught_and_the_one_refusing_zero_is_not(provider_vectors, tmp_path):
    given_up = certify_provider(provider_mutants.CompactorGivesUpWhenOverBudget, "compactor", provider_vectors,
                                tmp_path / "a")
    assert "provider/compactor/compacts-rather-than-refuses" in {r.id for r in given_up if r.failures("C-CHAIN-FITS")}
    refusing = certify_provider(provider_variants.CompactorRefusesZeroBudget, "compactor", provider_vectors,
                                tmp_path / "b")
    assert not [f for r in refusing for f in r.failures()] and not [r.error for r in refusing if r.error]
