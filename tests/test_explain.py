"""`ctxconf explain ID` (issue 14): a requirement, a ruling or a vector with its evidence, and a command
that runs just that evidence; an unknown id is exit 2 with close matches."""

import shlex

import yaml

from conformance.data import paths
from conformance.commands import explain
from tests.conftest import ctxconf


def _citing(requirement: str) -> set[str]:
    """The vectors citing a requirement, read from the files themselves rather than through the suite."""
    found = set()
    for path in paths.VECTORS.rglob("*.yaml"):
        doc = yaml.safe_load(path.read_text())
        if requirement in doc["requirements"]:
            found.add(doc["id"])
    return found


def _command(text: str) -> list[str]:
    [line] = [line for line in text.splitlines() if line.strip().startswith("ctxconf kernel -k")
              or line.strip().startswith("ctxconf provider -k")]
    return shlex.split(line)


def test_a_requirement_names_its_anchor_rulings_vectors_mutants_and_a_command_running_them():
    text = explain.explain("K-BUDGET-REJECT")
    assert text.startswith("K-BUDGET-REJECT  MUST  (kernel")
    assert ("https://github.com/pluggableharness/agent/blob/main/docs/specifications/context/data-types.md"
            "#budget-mechanics") in text
    assert "R-BUDGET-PER-PROVIDER" in text and "Does a provider's budget bound" in text  # a ruling, with its question
    assert "PerSectionBudget (kernel)" in text and "RejectsAtBudget (kernel)" in text  # its mutants
    assert "invariant checks" in text
    argv = _command(text)
    assert argv[:2] == ["ctxconf", "kernel"]
    selected = set(argv[3::2])
    assert argv[2::2] == ["-k"] * len(selected)
    assert selected == _citing("K-BUDGET-REJECT") and len(selected) >= 3
    for vector in selected:
        assert f"  {vector}: " in text


def test_a_ruling_names_its_decision_its_vectors_and_the_variants_that_prove_the_freedoms():
    text = explain.explain("R-TOKENS-RECOUNT")
    assert "both accepted" in text and "decision: " in text
    assert "KeepsStatedFigures (kernel)" in text and "RejectsOverstatedFigures (kernel)" in text
    assert "BlocksJoinedBySpace" not in text  # a variant granted by another ruling
    argv = _command(text)
    assert all(case.startswith("kernel/") for case in argv[3::2])


def test_a_vector_names_what_it_judges_and_how_to_replay_it():
    text = explain.explain("provider/budget/file-fits-whole")
    assert "P-WITHIN-BUDGET MUST NOT" in text and "IgnoresBudget (provider)" in text
    assert _command(text) == ["ctxconf", "provider", "-k", "provider/budget/file-fits-whole"]
    assert "ctxconf replay " in text and "file-fits-whole.yaml" in text


def test_the_command_runs_the_evidence_it_names():
    run = ctxconf("explain", "K-BUDGET-REJECT")
    assert run.returncode == 0, run.stderr
    certify = ctxconf(*_command(run.stdout)[1:])
    assert certify.returncode == 0, certify.stdout + certify.stderr
    assert f"{len(_citing('K-BUDGET-REJECT'))} cases: " in certify.stdout
    assert "pass  K-BUDGET-REJECT" in certify.stdout


def test_an_unknown_id_is_exit_2_with_close_matches_and_no_traceback():
    run = ctxconf("explain", "K-BUDGET-REJCT")
    assert run.returncode == 2 and run.stdout == ""
    assert "no requirement, ruling or vector has the id 'K-BUDGET-REJCT'" in run.stderr
    assert "did you mean K-BUDGET-REJECT" in run.stderr and "Traceback" not in run.stderr
    lower = ctxconf("explain", "r-error-isolation")
    assert lower.returncode == 2 and "did you mean R-ERROR-ISOLATION" in lower.stderr
