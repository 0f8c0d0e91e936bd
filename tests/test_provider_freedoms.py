"""Provider behaviours the spec's text allows that an earlier reading of the suite failed: an eager
reader whose source goes away, reductions that keep something other than a prefix, the truncated
flag on summaries and selections, token figures kept from an earlier answer, and configuration
cases with nothing to show. Each test runs the old expectation (written out here) to show the
variant was failed by it, then the bundled vectors to show it passes now, and shows the mutants of
the same requirement still caught."""

import json
from pathlib import Path

import pytest
import yaml

from conformance.data import manifest as manifest_mod
from conformance.data import catalog as catalog_mod
from conformance.data import paths
from conformance.engine import provider_checks
from conformance.engine.results import NOT_TESTED, PASS, SKIP
from conformance.proofs import provider_mutants, provider_variants
from conformance.reference.filereader import FileReader
from conformance.reports.verdict import CONFORMANT, build
from conformance.data.vectors import Vector
from conformance.wire import tokens
from conformance.wire.pb.pluggableharness.common.v1 import common_pb2
from tests.conftest import MANIFESTS, certify_provider, failed_requirements

CONVENTIONS = ("# Conventions\n\nUse four spaces for indentation in every Python file of this repository.\n\n"
               "Run make test before every commit; the CI runs the same target.\n\n"
               "Commit messages use the imperative mood and stay under seventy characters.\n\n"
               "Never commit secrets; the pre-commit hook scans for them.\n")


def inline(doc: dict) -> Vector:
    return Vector(doc["id"], doc["title"], tuple(doc["requirements"]), tuple(doc.get("rulings", ())), (), doc,
                  Path("inline.yaml"))


def bundled(provider_vectors, vector_id: str) -> list[Vector]:
    return [v for v in provider_vectors if v.id == vector_id]


def findings(results, requirement: str) -> list:
    return [f for r in results for f in r.findings if f.requirement == requirement]


def report_of(results):
    return build(catalog_mod.load(), catalog_mod.PROVIDER_ROLES, "provider", results, "python", {}, 0.0)


def variant(name: str):
    return provider_variants.VARIANTS[name]


def mutant(name: str):
    return provider_mutants.MUTANTS[name]


# --- an eager reader and a source that goes away (R-EAGER-SOURCE) -------------------------------

OLD_VANISHED = {"id": "provider/old/source-deleted", "title": "the expectation before R-EAGER-SOURCE",
                "requirements": ["P-SOURCE-UNAVAILABLE"], "applies_to": "file-reader",
                "files": {"CLAUDE.md": "# Conventions\n\nUse tabs.\n"},
                "steps": [{"configure": {}}, {"contribute": {"token_budget": 1000}}, {"delete": "CLAUDE.md"},
                          {"contribute": {"token_budget": 1000},
                           "expect": {"P-SOURCE-UNAVAILABLE": {"fails": {"category": "source_unavailable"}}}}]}
VANISHED = "provider/errors/source-deleted-mid-session"


def test_an_eager_reader_was_failed_and_is_now_certified_with_source_unavailable_named(provider_vectors, tmp_path):
    eager = variant("EagerReader")
    assert failed_requirements(certify_provider(eager, "filereader", [inline(OLD_VANISHED)], tmp_path / "old")) \
        == {"P-SOURCE-UNAVAILABLE"}
    results = certify_provider(eager, "filereader", provider_vectors, tmp_path / "new")
    assert failed_requirements(results) == set()
    assert findings(results, "P-SOURCE-UNAVAILABLE") == [], "an eager answer earns no pass"
    report = report_of(results)
    assert report.verdict == CONFORMANT
    status = {r.id: r for r in report.requirements}["P-SOURCE-UNAVAILABLE"]
    assert status.status == NOT_TESTED and "reads its source at call time" in status.why_unexercised
    assert "P-SOURCE-UNAVAILABLE" in {r.id for r in report.named}


def test_a_reader_that_rereads_when_files_touched_names_its_file_is_judged_where_it_rereads(provider_vectors,
                                                                                          tmp_path):
    results = certify_provider(variant("RereadsWhenTouched"), "filereader", bundled(provider_vectors, VANISHED),
                               tmp_path)
    judged = {f.where.split(" (")[0]: f.passed for f in findings(results, "P-SOURCE-UNAVAILABLE")}
    assert judged == {"step 7": True, "step 9": True}, "steps 4 to 6 served what it read before: nothing to judge"


@pytest.mark.parametrize("name, step", [("SilentWhenSourceVanishes", "step 4"),
                                        ("PlaceholderWhenSourceVanishes", "step 4"),
                                        ("VanishedIsUnknown", "step 4"), ("StaysUnavailable", "step 9")])
def test_a_reader_that_answers_a_vanished_source_wrongly_is_caught(name, step, provider_vectors, tmp_path):
    results = certify_provider(mutant(name), "filereader", bundled(provider_vectors, VANISHED), tmp_path)
    failed = [f.where for f in findings(results, "P-SOURCE-UNAVAILABLE") if not f.passed]
    assert failed and failed[0].startswith(step), failed


# --- reductions other than a prefix (R-SELF-REDUCE-CONTRIBUTES, R-TRUNCATED-UNIT) --------------

OLD_REDUCED = {"id": "provider/old/over-budget", "title": "the expectation before R-SELF-REDUCE-CONTRIBUTES was read",
               "requirements": ["P-SELF-REDUCE", "P-TRUNCATED-FLAG"], "applies_to": "file-reader",
               "files": {"CONVENTIONS.md": CONVENTIONS},
               "steps": [{"configure": {}}, {"contribute": {"token_budget": 60}, "expect": {
                   "P-SELF-REDUCE": {"own_sections": {"min": 1}, "own_text_contains": ["Conventions"]}}}]}
REDUCED = "provider/budget/file-over-budget-reduced"


@pytest.mark.parametrize("name", ["KeepsLastParagraphs", "KeepsLongestParagraphs", "SummarizingReader",
                                  "SummarizingReaderFlagsIt"])
def test_a_reader_that_keeps_something_other_than_a_prefix_was_failed_and_now_passes(name, provider_vectors,
                                                                                   tmp_path):
    reader = variant(name)
    assert "P-SELF-REDUCE" in failed_requirements(
        certify_provider(reader, "filereader", [inline(OLD_REDUCED)], tmp_path / "old"))
    results = certify_provider(reader, "filereader", bundled(provider_vectors, REDUCED), tmp_path / "new")
    assert failed_requirements(results) == set()
    judged = findings(results, "P-SELF-REDUCE")
    # at 5 only the heading fits, which a reader may keep with its paragraph (R-SELF-REDUCE-CONTRIBUTES)
    assert [f.passed for f in judged if not f.where.startswith("at ")] == [True] * 3, "judged at 103, 60 and 32"
    assert all(f.passed for f in judged) and len(judged) > 3, "and at every budget the first step sweeps"


@pytest.mark.parametrize("name", ["GivesUpWhenOverBudget", "EmptySectionWhenOverBudget",
                                  "BudgetExceededWhenOverBudget"])
def test_a_reader_that_gives_up_is_still_caught(name, provider_vectors, tmp_path):
    results = certify_provider(mutant(name), "filereader", bundled(provider_vectors, REDUCED), tmp_path)
    assert "P-SELF-REDUCE" in failed_requirements(results)


def section(text: str, truncated: bool, label: str = "S") -> dict:
    return {"label": label, "content": [{"text": {"text": text}}], "truncated": truncated}


@pytest.mark.parametrize("texts, flag, failing", [
    # the whole source, in one section or one per paragraph: false
    (["# Conventions\n\n" + CONVENTIONS.split("\n\n", 1)[1]], False, False),
    ([p for p in CONVENTIONS.split("\n\n")], False, False),
    ([CONVENTIONS], True, True),
    # a verbatim piece cut inside a line, with or without a mark of the cut: true
    (["# Conventions\n\nUse four spaces for"], False, True),
    (["# Conventions\n\nUse four spaces for …"], False, True),
    (["# Conventions\n\nUse four spaces for [truncated]"], False, True),
    (["# Conventions\n\nUse four spaces for (cut)"], True, False),
    (["#"], False, True),
    (["#"], True, False),
    # whole lines, consecutive or from several places: either
    (["# Conventions\n\nUse four spaces for indentation in every Python file of this repository."], False, False),
    (["Use four spaces for indentation in every Python file of this repository.\n\n"
      "Never commit secrets; the pre-commit hook scans for them."], False, False),
    (["Use four spaces for indentation in every Python file of this repository.\n\n"
      "Never commit secrets; the pre-commit hook scans for them."], True, False),
    # words of its own, a summary: either
    (["In short, about conventions, indentation, tests and secrets."], False, False),
    (["In short, about conventions, indentation, tests and secrets."], True, False),
    (["Topics:\nindentation\ntests\nsecrets"], False, False),
    # whole sentences, one per section or a run of them inside a line: either; cut at a comma, a semicolon or
    # inside a sentence: true
    (["Run make test before every commit;", "the CI runs the same target."], False, True),
    (["Run make test before every commit; the CI runs the same target."], False, False),
    # lines of its own around what it took are set aside, at either end, a repeated heading among them
    (["File: CONVENTIONS.md\nUse four spaces for"], False, True),
    (["Use four spaces for\n(end of CONVENTIONS.md, which goes on)"], False, True),
    (["# Conventions\n# Conventions\n\nUse four spaces for"], False, True),
    (["File: CONVENTIONS.md\n" + CONVENTIONS + "End of CONVENTIONS.md."], True, True),
    (["File: CONVENTIONS.md\n" + CONVENTIONS + "End of CONVENTIONS.md."], False, False),
    (["File: CONVENTIONS.md\n# Conventions\n\nUse four spaces for indentation in every Python file of this "
      "repository."], False, False),
    # a line of its own between two pieces is set aside too: whole paragraphs, its heading, then a cut
    (["# Conventions\n\nUse four spaces for indentation in every Python file of this repository.\n\n"
      "## (continued)\n\nRun make test"], False, True),
    (["# Conventions\n\n## Part 2\n\nUse four spaces for indentation in every Python file of this "
      "repository."], False, False),
    # a cut mark closed by a full stop, or two of them, marks a cut
    (["# Conventions\n\nUse four spaces for [...]."], False, True),
    (["# Conventions\n\nUse four spaces for … [truncated]"], False, True),
    # served without its heading markers: the whole says false, a piece cut inside a sentence says true,
    # a run of whole lines either
    (["Conventions\n\n" + CONVENTIONS.split("\n\n", 1)[1]], True, True),
    (["Conventions\n\n" + CONVENTIONS.split("\n\n", 1)[1]], False, False),
    (["Conventions\n\nUse four spaces for"], False, True),
    (["Conventions\n\nUse four spaces for indentation in every Python file of this repository."], False, False),
])
def test_truncated_follows_what_the_text_settles_and_accepts_what_it_leaves_open(texts, flag, failing):
    own = [section(t, flag, f"S{i}") for i, t in enumerate(texts)]
    assert bool(provider_checks._truncation_problems(own, CONVENTIONS)) is failing


TWO_SENTENCES = "Use tabs. Never use spaces for indentation.\n\nRun make test before every commit, then push.\n"


@pytest.mark.parametrize("text, failing", [
    ("Use tabs.", False), ("Never use spaces for indentation.", False),  # a whole sentence, inside a line
    ("Use tabs. Never use spaces", True),                                # a sentence cut short
    ("Run make test before every commit,", True),                        # cut at a comma
    ("Never use spaces for indentation. Run make test before every commit, then push.", False),
])
def test_a_sentence_is_a_unit_a_reader_may_return_whole_and_a_piece_of_one_is_cut(text, failing):
    assert bool(provider_checks._truncation_problems([section(text, False)], TWO_SENTENCES)) is failing


def compactor_section(provider: str, label: str, text: str, truncated: bool) -> dict:
    return {"provider": provider, "label": label, "content": [{"text": {"text": text}}], "truncated": truncated}


HANDED = [compactor_section("claude-md", "Rules", "Run make test before every commit. Use black.", False),
          compactor_section("agents-md", "Auth", "The auth package validates sessions. Never log", True)]


@pytest.mark.parametrize("written, failing", [
    # kept whole in its place: false where the original said false, either where it said true
    (compactor_section("claude-md", "Rules", "Run make test before every commit. Use black.", True), True),
    (compactor_section("claude-md", "Rules", "Summary:\nRun make test before every commit. Use black.", True), True),
    (compactor_section("claude-md", "Rules", "Run make test before every commit. Use black.", False), False),
    (compactor_section("agents-md", "Auth", "The auth package validates sessions. Never log", False), False),
    (compactor_section("agents-md", "Auth", "The auth package validates sessions. Never log", True), False),
    # a verbatim piece of it cut inside a sentence: true; a whole sentence, or words of its own: either
    (compactor_section("claude-md", "Rules", "Run make test before", False), True),
    (compactor_section("claude-md", "Rules", "Run make test before", True), False),
    (compactor_section("claude-md", "Rules", "Run make test before every commit.", False), False),
    (compactor_section("claude-md", "Rules", "Summary of Rules: Run make test …", False), False),
    # kept whole with a bracketed note of its own after it: still whole
    (compactor_section("claude-md", "Rules", "Run make test before every commit. Use black.\n[kept]", True), True),
    (compactor_section("claude-md", "Rules", "Run make test before every commit. Use black.\n[kept]", False), False),
])
def test_a_compactors_flag_is_judged_against_the_section_it_stands_in_the_place_of(written, failing):
    assert bool(provider_checks._compactor_truncation_problems([written], HANDED)) is failing


def test_a_compactors_sections_that_hold_the_original_whole_between_them_are_not_cuts():
    halves = [compactor_section("claude-md", "Rules", "Run make test before", False),
              compactor_section("claude-md", "Rules", "every commit. Use black.", False)]
    assert provider_checks._compactor_truncation_problems(halves, HANDED) == []
    assert provider_checks._compactor_truncation_problems([{**halves[0], "truncated": True}, halves[1]], HANDED)


def test_a_compactors_section_of_its_own_is_not_judged():
    merged = compactor_section("compactor", "Compacted context", "Run make test before", False)
    assert provider_checks._compactor_truncation_problems([merged], HANDED) is None


@pytest.mark.parametrize("held_whole", [True, False])
def test_a_stripped_whole_may_say_truncated_only_under_a_budget_too_small_for_the_file(held_whole):
    source = "+++\ntitle = 'x'\n+++\n\nUse make.\n"
    stripped, written = [section("Use make.", True)], [section(source, True)]
    assert bool(provider_checks._truncation_problems(stripped, source, (), held_whole)) is held_whole
    assert provider_checks._truncation_problems(written, source, (), held_whole)  # the file as written: never


@pytest.mark.parametrize("name", ["NeverTruncated", "AlwaysTruncated", "MarksTheCutInTheText", "SectionPerClause",
                                  "FramesItsCutUnflagged", "FramesTheWholeAsTruncated"])
def test_the_truncated_mutants_are_still_caught(name, provider_vectors, tmp_path):
    vectors = [v for v in provider_vectors if v.id.startswith("provider/budget/file-")]
    assert "P-TRUNCATED-FLAG" in failed_requirements(certify_provider(mutant(name), "filereader", vectors, tmp_path))


@pytest.mark.parametrize("name", ["CompactorFlagsWhatItKeeps", "CompactorCutsUnflagged"])
def test_the_compactor_truncated_mutants_are_caught(name, provider_vectors, tmp_path):
    vectors = bundled(provider_vectors, "provider/compactor/truncated-says-what-it-did")
    assert failed_requirements(certify_provider(mutant(name), "compactor", vectors, tmp_path)) == {"P-TRUNCATED-FLAG"}


# --- token figures kept from an earlier answer (R-KEPT-COUNTS) ----------------------------------

def test_a_figure_is_judged_only_where_it_was_given_or_is_wrong():
    """A right figure passes when the process was given it, in this firing or an earlier one; a right one it
    was never seen given gives no finding; a wrong one fails, asked for or not (R-KEPT-COUNTS)."""
    from conformance.data.provider_cases import SUITE_MODELS, Step
    from conformance.engine.provider_driver import ProviderTranscript, Served, StepRecord

    content = [{"text": {"text": "Use tabs."}}]
    right = {"label": "S", "content": content, "tokens": tokens.count_with("words", content)[0]}
    wrong = {**right, "tokens": right["tokens"] + 1}
    record = StepRecord(Step("contribute", {}, {}, 0))
    record.request = {"model_target": {"id": "suite-model"}}
    for served, own, expected in (({("Use tabs.", "suite-model")}, [right], [True]), (set(), [right], []),
                                  ({("Use tabs.", "other-model")}, [right], []), (set(), [wrong], [False]),
                                  ({("Use tabs.", "suite-model")}, [wrong], [False])):
        checker = provider_checks.Checker(ProviderTranscript(None, {}, models=dict(SUITE_MODELS), served=Served(served)),
                                          None)
        checker.check_tokens(own, record, "step 1")
        assert [f.passed for f in checker.findings] == expected, (served, own)


def test_an_eager_reader_replaying_its_section_is_judged_by_the_figure_it_was_given(provider_vectors, tmp_path):
    """The replays carry the figure CountTokens gave the process on the firing that counted it: they pass."""
    results = certify_provider(variant("EagerReader"), "filereader",
                               bundled(provider_vectors, "provider/chain/repeated-firings"), tmp_path)
    assert [(f.where.split(" (")[0], f.passed) for f in findings(results, "P-TOKENS-COUNTTOKENS")] == \
        [("step 2", True), ("step 3", True), ("step 4", True)]


OLD_COUNTS_DOWN = {"id": "provider/old/count-tokens-down", "title": "the expectation before R-KEPT-COUNTS",
                   "requirements": ["P-TOKENS-COUNTTOKENS"],
                   "steps": [{"configure": {}}, {"contribute": {"token_budget": 5}}, {"count_tokens": "fail"},
                             {"contribute": {"token_budget": 5}, "expect": {"P-TOKENS-COUNTTOKENS": {
                                 "one_of": [{"fails": {}}, {"own_sections": {"max": 0}}]}}}]}


def test_a_reader_stating_kept_figures_while_counttokens_is_down_was_failed_and_now_passes(provider_vectors,
                                                                                         tmp_path):
    keeper = variant("KeepsCounts")
    assert failed_requirements(certify_provider(keeper, "filereader", [inline(OLD_COUNTS_DOWN)], tmp_path / "old")) \
        == {"P-TOKENS-COUNTTOKENS"}
    down = bundled(provider_vectors, "provider/errors/count-tokens-unavailable")
    assert failed_requirements(certify_provider(keeper, "filereader", down, tmp_path / "new")) == set()
    for name in ("EstimatesWhenCountTokensFails", "EstimatesTokens", "EstimatesAtSmallBudgets", "StaleFigure"):
        assert "P-TOKENS-COUNTTOKENS" in failed_requirements(
            certify_provider(mutant(name), "filereader", provider_vectors, tmp_path / name)), name


# --- configuration cases with nothing to show ----------------------------------------------------

def test_a_schema_with_no_required_field_skips_the_case_instead_of_passing_its_control(provider_vectors, tmp_path):
    from conformance.reference.compactor import Compactor
    results = certify_provider(Compactor, "compactor",
                               bundled(provider_vectors, "provider/errors/configure-rejects-missing-required-field"),
                               tmp_path)
    assert [r.status for r in results] == [SKIP] and findings(results, "P-CONFIGURE-REQUIRED-FIELD") == []
    named = {r.id: r.why_unexercised for r in report_of(results).named}
    assert "config_schema" in named["P-CONFIGURE-REQUIRED-FIELD"]


def _manifest(tmp_path: Path, **fields) -> str:
    doc = {"name": "filereader", "kind": "generic", "config": {"root": "${workdir}", "path": "${source}"}, **fields}
    (tmp_path / "generic.yaml").write_text(yaml.safe_dump(doc))
    return str(tmp_path / "generic.yaml")


@pytest.mark.parametrize("bad_config, runs", [({"root": "${workdir}", "path": "nowhere.md"}, True), (None, False)])
def test_a_generic_provider_with_a_bad_config_is_put_to_the_missing_source_case(bad_config, runs, provider_vectors,
                                                                               tmp_path, monkeypatch):
    fields = {"bad_config": bad_config} if bad_config else {}
    manifest = manifest_mod.load(Path(_manifest(tmp_path, **fields)))
    monkeypatch.setattr(manifest_mod, "load", lambda path: manifest)
    results = certify_provider(FileReader, "generic", bundled(provider_vectors,
                                                              "provider/errors/configure-rejects-missing-source"),
                               tmp_path / "cases")
    assert [r.status for r in results] == ([PASS] if runs else [SKIP])
    assert bool(findings(results, "P-CONFIGURE-REJECT")) is runs


# --- what an outsider reads: the schemas ------------------------------------------------------------

def test_the_producer_category_is_the_wire_enum():
    wire = json.loads((paths.SCHEMAS / "wire.json").read_text())["$defs"]
    assert wire["ProducerRef"]["properties"]["category"] == {"$ref": "#/$defs/Category"}
    assert wire["Category"]["enum"] == list(common_pb2.Category.keys())
