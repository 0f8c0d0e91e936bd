"""Legal choices the newest provider checks once failed (brief T28): a reconfigured reader is a new input and
a firing is the same only with the same prior chain (R-EVERY-FIRING-WHOLE), the firing after a schema probe is
not judged by whether it fits (R-COMPACTOR-MUST-FIT), the same summary of the same chain is no template
(R-SUMMARIZE-EVIDENCE), and an assertion that finds what an invariant found adds no second finding."""

from collections import Counter

from conformance.data import provider_cases
from conformance.data.manifest import load as load_manifest
from conformance.data.provider_cases import Step
from conformance.engine.config_probes import ConfigProbe
from conformance.engine.provider_checks import Checker
from conformance.engine.provider_driver import ProviderTranscript, StepRecord
from conformance.reference.compactor import Compactor
from conformance.wire import tokens
from tests.conftest import MANIFESTS, certify_provider
from tests.test_provider_counting import _compactor_checker, _failure

READER_TEXT = "# Notes\n\nUse tabs."


def _section(provider: str, text: str) -> dict:
    content = [{"text": {"text": text}}]
    return {"provider": provider, "label": provider.upper(), "content": content,
            "tokens": tokens.count_with("words", content)[0], "stability": "STABILITY_STATIC", "truncated": False}


def _reader_checker() -> Checker:
    transcript = ProviderTranscript(None, {"stability": "STABILITY_STATIC"}, models=dict(provider_cases.SUITE_MODELS))
    return Checker(transcript, load_manifest(MANIFESTS / "filereader.yaml"))


def _firing(prior: list[dict]) -> StepRecord:
    record = StepRecord(Step("contribute", {}, {}, 1), source_text=READER_TEXT)
    record.request = {"token_budget": 100, "model_target": {"id": "suite-model"}, "files_touched": [],
                      "prior_sections": prior}
    return record


def _repeat_failures(checker: Checker, firings: list[tuple[list[dict], bool]]) -> list[str]:
    """The P-FULL-CHAIN failures of firings given as (prior chain, whether it contributed), a None firing
    standing for a Configure."""
    for firing in firings:
        if firing is None:
            checker.check(StepRecord(Step("configure", {}, {}, 1), result={}))
            continue
        prior, contributed = firing
        checker.check_repeated_firing(_firing(prior), [_section("filereader", READER_TEXT)] if contributed else [],
                                      "here")
    return [f.message for f in checker.findings if f.requirement == "P-FULL-CHAIN" and not f.passed]


def test_a_firing_is_the_same_input_only_with_the_same_prior_chain():
    first, holds_its_text = [_section("a", "first firing")], [_section("agents-md", READER_TEXT)]
    assert _repeat_failures(_reader_checker(), [(first, True), (holds_its_text, False)]) == []
    assert len(_repeat_failures(_reader_checker(), [(first, True), (holds_its_text, False), (first, False)])) == 1


def test_a_configure_makes_the_reader_a_new_input():
    first = [_section("a", "first firing")]
    assert _repeat_failures(_reader_checker(), [(first, True), None, (first, False)]) == []


def test_the_firing_after_a_schema_probe_is_not_judged_by_whether_it_fits():
    checker, record = _compactor_checker(_failure("invalid_request", "INVALID_ARGUMENT"), 5)
    assert checker.gave_up(record)  # the same failure, after no probe, gives up on an over-budget chain
    record.probe = ConfigProbe("no config at all", None)
    checker.check_failure(record, "here")
    assert checker.gave_up(record) == "" and not [f for f in checker.findings if f.requirement == "C-CHAIN-FITS"]


def test_a_compactor_is_judged_by_whether_it_fits_only_while_a_configure_it_took_stands():
    checker, record = _compactor_checker(_failure("invalid_request", "INVALID_ARGUMENT"), 5)
    configure = StepRecord(Step("configure", {}, {}, 0))
    for outcome, judged in (({"failure": _failure("invalid_request", "INVALID_ARGUMENT")}, False),
                            ({"result": {}}, True)):
        checker.check(StepRecord(configure.step, **outcome))
        assert bool(checker.gave_up(record)) is judged
    checker.configured = False  # a fresh process that no Configure reached
    assert checker.gave_up(record) == ""


def _reduce(checker: Checker, prior: list[dict], line: str) -> None:
    """A reduction of prior into one section of the compactor's own holding one line."""
    record = StepRecord(Step("contribute", {}, {}, 1))
    record.request = {"model_target": {"id": "suite-model"}}
    checker.note_reduction(record, prior, [_section("compactor", line)], 20)


def _compactor() -> Checker:
    transcript = ProviderTranscript(None, {"compactor": True}, models=dict(provider_cases.SUITE_MODELS))
    return Checker(transcript, load_manifest(MANIFESTS / "compactor.yaml"))


def test_the_same_summary_of_the_same_chain_is_no_template_but_of_another_chain_is():
    chain = [_section("rules", "Use make for every build, and run make test before each commit. " * 4)]
    other = [_section("style", "Functions stay short and are named for what they return, always. " * 4)]
    same = _compactor()
    for _ in range(2):
        _reduce(same, chain, "rules: make builds and tests")
    assert same.reductions == [True, True]
    template = _compactor()
    for prior in (chain, other):
        _reduce(template, prior, "the context, summarized")
    assert template.reductions == [False, False]


def test_a_rewritten_history_is_one_finding_per_requirement_per_step(provider_vectors, tmp_path):
    vectors = [v for v in provider_vectors if v.id == "provider/compactor/history-rewrite-is-text"]
    [result] = certify_provider(Compactor, "compactor", vectors, tmp_path)
    judged = Counter((f.requirement, f.where) for f in result.findings if f.requirement.startswith("C-REWRITTEN"))
    assert sorted(judged.values()) == [1, 1]
