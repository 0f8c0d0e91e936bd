"""Verdicts a user can trust: spec-legal behaviour is never failed, and a
fault is charged to the one requirement whose observable it broke.

The self-test proves this wholesale (tests/test_selftest.py). These tests pin
down the situations that once went wrong, one by one, so that a regression
names itself."""

import sys

import pytest

from conformance.data import manifest as manifest_mod
from conformance.data import catalog as catalog_mod
from conformance.bindings.base import KERNEL_PROTOCOL, PROVIDER_PROTOCOL
from conformance.bindings.grpc_provider import GrpcProviderBinding
from conformance.bindings.python import PythonBinding
from conformance.engine import kernel_run, provider_run
from conformance.engine.connection import Connection
from conformance.engine.scenario import from_vector
from conformance.properties.runner import PropertyRun, kernel_property
from conformance.proofs import kernel_mutants, kernel_variants, provider_mutants, provider_variants
from conformance.reference.kernel import ReferenceKernel
from conformance.reports.verdict import build
from tests.conftest import MANIFESTS, RUNNERS, certify_provider, certify_python, failed_requirements

SERVER = f"{sys.executable} {RUNNERS / 'grpc_provider_server.py'}"


# --- three false verdicts users reported ------------------------------------------------------

def test_blocks_on_separate_lines_are_not_a_kernel_cut(kernel_vectors):
    variant = kernel_variants.VARIANTS["BlocksOnSeparateLines"]
    assert failed_requirements(certify_python(variant, kernel_vectors)) == set()
    with Connection(lambda: PythonBinding("v", KERNEL_PROTOCOL, 10.0, factory=variant)) as connection:
        generated = kernel_property(connection, PropertyRun(profile="ci"))
    assert generated.status == "pass", [f.message for f in generated.failures()][:2]


def test_an_error_at_budget_zero_contributes_nothing_and_exceeds_nothing(provider_vectors, tmp_path):
    results = certify_provider(provider_variants.RefusesZeroBudget, "filereader", provider_vectors, tmp_path)
    assert failed_requirements(results) == set()
    step = next(r for r in results if r.id == "provider/budget/tiny-budgets-respected")
    assert not [f for f in step.findings if f.requirement == "P-WITHIN-BUDGET" and "step 4" in f.where], \
        "nothing to judge against the budget in an error"
    assert any(f.requirement == "P-ERROR-CODE" and f.passed for f in step.findings), "the error itself is judged"


@pytest.mark.parametrize("binding", ["python", "grpc"])
def test_an_error_info_instead_of_a_context_error_fails_only_the_detail(binding, provider_vectors, tmp_path):
    mutant = provider_mutants.MUTANTS["ErrorInfoInsteadOfContextError"]
    if binding == "grpc":
        command = f"{SERVER} {mutant.__module__}:{mutant.__name__}"
        opener = lambda: GrpcProviderBinding(tmp_path, 10.0, command=command)
    else:
        opener = lambda: PythonBinding("m", PROVIDER_PROTOCOL, 10.0, factory=mutant)
    manifest = manifest_mod.load(MANIFESTS / "filereader.yaml")
    with Connection(opener) as connection:
        results = provider_run.run_vectors(connection, provider_vectors, manifest, tmp_path / "cases")
    report = build(catalog_mod.load(), catalog_mod.PROVIDER_ROLES, "provider", results, binding, {}, 0.0)
    status = {r.id: r.status for r in report.requirements}
    assert {r for r, s in status.items() if s == "fail"} == {"P-CONTEXT-ERROR-FIELDS", "P-ERROR-CATEGORIZED"}
    for right in ("P-ERROR-CODE", "P-ERROR-NOT-UNKNOWN", "P-TOKENS-COUNTTOKENS", "P-SOURCE-UNAVAILABLE",
                  "P-CONFIGURE-REJECT"):
        assert status[right] == "pass", right
    vanished = next(r for r in results if r.id == "provider/errors/source-deleted-mid-session")
    assert any(f.requirement == "P-SOURCE-UNAVAILABLE" and f.passed and f.where.startswith("step 7")
               for f in vanished.findings), "the steps after a failed one still run and are judged"


# --- one fault, one requirement ---------------------------------------------------------------

# Each mutant, on the golden vectors, fails exactly these requirements; the comment says what
# it was charged with before the cascade was removed.
KERNEL_CASCADES = {
    # 15 more: every expectation written for providers called in order
    "AlphabeticalOrder": {"K-DECLARATION-ORDER", "KC-NO-REORDER"},
    # requests never sent were charged to every field they should have carried
    "SessionStartOnly": {"K-FIRE-EACH-TURN"},
    # every chain and diagnostic the failed turn no longer had
    "FailsTurnOnBudget": {"K-BUDGET-NO-TURN-FAIL"},
    "ScopeViolationFailsTurn": {"K-SCOPE-NO-FAIL"},
    # an unchanged over-budget chain let through was a missing diagnostic (K-NO-SILENT-FALLBACK)
    "CompactorUnchecked": {"K-COMPACTOR-BUDGET"},
}
PROVIDER_CASCADES = {
    # K-CONTEXT-ERROR-FIELDS, P-ERROR-CODE and P-SOURCE-UNAVAILABLE, for want of a category
    "UncategorizedFailures": {"P-ERROR-CATEGORIZED"},
    # the form of an error it never raised
    "SilentWhenSourceVanishes": {"P-SOURCE-UNAVAILABLE"},
    # P-ERROR-CODE too, for the same code
    "UnknownAsUNKNOWN": {"P-ERROR-NOT-UNKNOWN"},
    # P-FULL-CHAIN and P-OWN-SECTIONS-ONLY, since nothing fits a budget of 0
    "ZeroDefaultBudget": {"P-CAP-DEFAULT-BUDGET"},
}


@pytest.mark.parametrize("name", sorted(KERNEL_CASCADES))
def test_a_kernel_fault_is_charged_once(name, kernel_vectors):
    assert failed_requirements(certify_python(kernel_mutants.MUTANTS[name], kernel_vectors)) == KERNEL_CASCADES[name]


@pytest.mark.parametrize("name", sorted(PROVIDER_CASCADES))
def test_a_provider_fault_is_charged_once(name, provider_vectors, tmp_path):
    mutant = provider_mutants.MUTANTS[name]
    results = certify_provider(mutant, mutant.manifest, provider_vectors, tmp_path)
    assert failed_requirements(results) == PROVIDER_CASCADES[name]


def _scenario(providers: list[dict], turns: int = 1) -> dict:
    return {"id": "kernel/test/scenario", "title": "t", "requirements": [], "setup": {
        "models": [{"id": "m", "context_window": 100000, "reserved_output": 0, "system_overhead": 0}],
        "primary_model": "m", "providers": providers},
        "turns": [{"assemble": {"session_id": "01JDTESTSESSION0000000001", "turn_id": f"01JDTESTTURN{i:014d}",
                                "model": "m", "new_messages": [{"role": "user", "text": f"message {i}"}]}}
                  for i in range(turns)]}


def _failures(factory, doc: dict) -> dict[str, list[str]]:
    with Connection(lambda: PythonBinding("k", KERNEL_PROTOCOL, 10.0, factory=factory)) as connection:
        result = kernel_run.case_result("t", "t", from_vector(doc), connection)
    assert result.error is None, result.error
    found: dict[str, list[str]] = {}
    for finding in result.failures():
        found.setdefault(finding.requirement, []).append(finding.message)
    return found


def test_a_rewrite_applied_against_the_rules_is_charged_once_not_to_every_later_request():
    over_budget_compactor = {"name": "first", "capabilities": {"default_token_budget": 3, "compactor": True,
                                                               "stability": "STABILITY_DYNAMIC"},
                             "script": [{"append": [{"label": "Summary", "text": "far more than three tokens here"}],
                                         "rewritten_history": [{"role": "user", "text": "the summary"}]}]}
    second = {"name": "second", "capabilities": {"default_token_budget": 100, "compactor": True,
                                                 "stability": "STABILITY_DYNAMIC"}}
    doc = _scenario([over_budget_compactor, second])
    assert _failures(ReferenceKernel, doc) == {}
    assert set(_failures(kernel_mutants.MUTANTS["CompactorUnchecked"], doc)) == {"K-COMPACTOR-BUDGET"}
    # R-COMPACTOR-OVER-BUDGET: its chain rejected, the rewrite may still apply; nothing after it is charged either
    assert _failures(kernel_variants.VARIANTS["AppliesRewriteOfRejectedCompactor"], doc) == {}


def test_later_turns_of_a_session_that_went_wrong_are_judged_by_the_invariants_alone(kernel_vectors):
    # CarriesAnotherSessionsChain breaks the first request of a turn; the vectors' expectations for that
    # session's later turns (assembled tokens, calls) were written for a kernel that had not.
    failed = failed_requirements(certify_python(kernel_mutants.MUTANTS["CarriesAnotherSessionsChain"], kernel_vectors))
    assert failed == {"K-PRIOR-SECTIONS"}


def test_a_text_is_found_where_it_first_appears_escaped_not_where_a_verbatim_copy_appears_later():
    """A JSON-rendering kernel writes a newline block as \\n inside a string; the newline that ends the line comes
    later. Taking that later, verbatim one skipped the next block and failed a conforming kernel (K-NO-KERNEL-CUT)."""
    from conformance.engine import prompt_text
    prompt = '{"section": "notes", "text": ["\\n", "E\\ud8a3\\udfd5"]}\n{"section": "other", "text": ["x"]}'
    newline = prompt_text.find(prompt, "\n", prompt.index("notes"))
    assert newline == (prompt.index("\\n"), prompt.index("\\n") + 2)
    assert prompt_text.find(prompt, "E\U00038fd5", newline[1]) is not None
    assert prompt_text.find(prompt, "other") == (prompt.index("other"), prompt.index("other") + 5)  # plain: verbatim


@pytest.mark.parametrize("written, text", [('"caf\\u00E9"', "café"), ('"a\\u000Ab"', "a\nb"),
                                           ('"\\uD83D\\uDE00"', "😀"), ('"\\ud83d\\ude00"', "😀")])
def test_any_json_unicode_escape_is_found_in_either_case(written, text):
    """JSON encoders differ in what they escape and how: .NET writes every non-ASCII character as an upper-case
    \\uXXXX, and any may write a control character so (the JsonUpperCaseEscapes variant certifies clean)."""
    from conformance.engine import prompt_text
    assert prompt_text.find(written, text) == (1, len(written) - 1)


# --- sections that must hold: what gives them reason to change (R-STATIC-SECTION-HOLDS) ---------------------------

def _inline(doc: dict):
    from pathlib import Path
    from conformance.data.vectors import Vector
    return [Vector(doc["id"], doc["title"], tuple(doc["requirements"]), tuple(doc.get("rulings", ())), (), doc,
                   Path("inline.yaml"))]


def _holding_failures(factory, vectors, tmp_path) -> list[str]:
    results = certify_provider(factory, factory.manifest, vectors, tmp_path)
    assert failed_requirements(results) <= {"P-STATIC-SECTION-HOLDS", "P-SECTION-STABILITY-DECLARED"}
    return [f"{f.where}: {f.message}" for r in results for f in r.failures()]


@pytest.mark.parametrize("name, step, what", [
    ("CountsItsFirings", "step 3", "on the very same request"),
    ("StampsItsTurn", "step 4", "whose request differed only in its turn id and the kernel's history_tokens"),
    ("StampsTheKernelFigures", "step 4", "the kernel's history_tokens and the kernel's assembled_tokens_last_turn"),
])
def test_a_static_section_that_moves_with_no_reason_is_caught_where_it_first_moves(name, step, what, provider_vectors,
                                                                                    tmp_path):
    vector = [v for v in provider_vectors if v.id == "provider/chain/static-section-holds-across-turns"]
    failures = _holding_failures(provider_mutants.MUTANTS[name], vector, tmp_path)
    assert failures and failures[0].startswith(f"{step} (contribute)") and what in failures[0], failures


def test_a_fixture_edit_leaves_what_a_reader_serves_unjudged_until_the_next_configure(tmp_path):
    """RereadsWhenTouched serves what it read at Configure until a firing touches its file: after an edit, one
    request is answered with the old text and then the new, which is R-EAGER-SOURCE's freedom, not a move."""
    status = lambda words: {"provider": "status", "label": "Git status", "stability": "STABILITY_DYNAMIC",  # noqa: E731
                            "text": words}
    firing = lambda words, **more: {"contribute": {"token_budget": 1000, "prior_sections": [status(words)], **more}}  # noqa: E731
    doc = {"id": "provider/test/edited", "title": "t", "requirements": [], "applies_to": "file-reader",
           "files": {"CONTEXT.md": "# Old\n\nThe old rule.\n"},
           "steps": [{"configure": {}}, firing("On main."), firing("On main."),
                     {"write": {"CONTEXT.md": "# New\n\nThe new rule.\n"}}, firing("On main."),
                     firing("On main.", files_touched=["CONTEXT.md"]), firing("Po nbjo.")]}
    assert _holding_failures(provider_variants.VARIANTS["RereadsWhenTouched"], _inline(doc), tmp_path) == []
    # Before the edit the same firings judge: a stamp of the turn is caught at the second, and nowhere after it.
    failures = _holding_failures(provider_mutants.MUTANTS["StampsItsTurn"], _inline(doc), tmp_path)
    assert [f.split(":")[0] for f in failures] == ["step 3 (contribute)"]


def test_a_summary_may_be_worded_anew_only_where_there_was_something_to_reduce(tmp_path):
    """Over its budget a reader's summary may differ each time: RewordsItsSummary, never steady, is not judged,
    where SummarizingReader, the same each time, is judged and passes. With room for its file whole a reader has
    nothing to word anew: a count of its firings is caught there."""
    text = "# Rules\n\n" + "\n\n".join(f"Rule {i}: keep every module small and documented." for i in range(6)) + "\n"

    def doc(budget: int) -> list:
        def firing(words: str) -> dict:
            return {"contribute": {"token_budget": budget, "prior_sections": [
                {"provider": "status", "label": "Git status", "stability": "STABILITY_DYNAMIC", "text": words}]}}
        return _inline({"id": "provider/test/reworded", "title": "t", "requirements": [], "applies_to": "file-reader",
                        "files": {"RULES.md": text},
                        "steps": [{"configure": {}}, firing("On main."), firing("On main."), firing("Po nbjo.")]})

    def judged(factory, budget: int) -> list[bool]:
        results = certify_provider(factory, factory.manifest, doc(budget), tmp_path)
        return [f.passed for r in results for f in r.findings if f.requirement == "P-STATIC-SECTION-HOLDS"]

    assert judged(provider_variants.VARIANTS["RewordsItsSummary"], 30) == []
    assert judged(provider_variants.VARIANTS["SummarizingReader"], 30) == [True]
    assert judged(provider_mutants.MUTANTS["CountsItsFirings"], 1000) == [False, False]
