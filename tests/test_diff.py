"""`ctxconf diff A.json B.json` (issue 14): two real reports, the reference kernel's and a mutant's, and
hand-edited copies for what a run rarely shows; bad input is exit 2 naming the file and the field."""

import copy
import json

import pytest

from conformance.reports import diff
from tests.conftest import ctxconf

MUTANT = "conformance.proofs.kernel_mutants:PerSectionBudget"


@pytest.fixture(scope="session")
def reports(tmp_path_factory, run_once):
    """The reference's and the mutant's reports on one case, certified once per pytest run."""
    folder = run_once("tests/test_diff.py reports", lambda: _reports(tmp_path_factory.mktemp("diff")))
    return folder / "reference.json", folder / "mutant.json"


def _reports(folder):
    for name, target in (("reference", []), ("mutant", ["--python", MUTANT])):
        run = ctxconf("kernel", "-k", "kernel/budget/budget-covers-all-own-sections", *target, "--report",
                  str(folder / f"{name}.json"))
        assert run.returncode == (0 if name == "reference" else 1), run.stderr
    return folder


def test_a_mutant_against_the_reference_shows_the_requirement_the_case_and_the_new_failures(reports):
    reference, mutant = reports
    run = ctxconf("diff", str(reference), str(mutant))
    assert run.returncode == 1, run.stderr
    assert "K-BUDGET-REJECT                                  pass -> fail" in run.stdout
    assert "kernel/budget/budget-covers-all-own-sections     pass -> fail" in run.stdout
    new = run.stdout.split("new failures (in B, not in A):\n")[1]
    assert new.startswith("  K-BUDGET-REJECT  kernel/budget/budget-covers-all-own-sections [turn 1, agents]: "
                          "its sections count 10")
    assert "gone failures" not in run.stdout
    back = ctxconf("diff", str(mutant), str(reference))  # the fix: the same failures, gone
    assert back.returncode == 1 and "gone failures (in A, not in B):" in back.stdout
    assert "new failures" not in back.stdout and "fail -> pass" in back.stdout


def test_identical_runs_are_exit_0_even_between_two_implementations(reports, tmp_path):
    reference, _ = reports
    same = ctxconf("diff", str(reference), str(reference))
    assert same.returncode == 0 and "no difference in verdict, statuses or failures" in same.stdout
    other = json.loads(reference.read_text())
    other["implementation"] = {"name": "someone-elses-kernel", "version": "2.0"}
    (tmp_path / "other.json").write_text(json.dumps(other))
    run = ctxconf("diff", str(reference), str(tmp_path / "other.json"))
    assert run.returncode == 0, run.stdout
    assert "someone-elses-kernel 2.0 over python" in run.stdout
    # A lone surrogate is valid JSON, and no terminal encoding can print it: escaped, never a traceback.
    other["implementation"]["name"] = "odd\ud800name"
    (tmp_path / "odd.json").write_text(json.dumps(other))
    run = ctxconf("diff", str(reference), str(tmp_path / "odd.json"))
    assert run.returncode == 0 and "odd\\ud800name" in run.stdout and "Traceback" not in run.stderr, run.stderr


def test_a_case_error_and_a_changed_verdict_are_differences(reports):
    a = diff.load(reports[0])
    b = copy.deepcopy(a)
    b["cases"][0]["error"] = "the shim exited with status 3\ntraceback..."
    b["verdict"] = "not conformant"
    found = diff.compare(a, b)
    assert found.exit_code == 1 and found.verdict_changed
    assert [(c.id, c.before, c.after) for c in found.errors] == [
        (a["cases"][0]["id"], "(no error)", "the shim exited with status 3")]
    assert "verdict: no verdict -> not conformant" in diff.to_text(found)


def test_markdown_holds_the_changes_in_tables(reports):
    run = ctxconf("diff", *map(str, reports), "--markdown")
    assert run.returncode == 1
    assert run.stdout.startswith("## ⚠️ ctxconf diff: 1 requirement changed status; 1 case changed status; ")
    assert "| requirement | `K-BUDGET-REJECT` | pass | fail |" in run.stdout
    assert "| new | K-BUDGET-REJECT | `kernel/budget/budget-covers-all-own-sections` [turn 1, agents] | its" in run.stdout


@pytest.mark.parametrize("content, expected", [
    (None, "missing.json: cannot read: No such file or directory"),
    ("not json", "bad.json: not a JSON report: Expecting value"),
    ('{"suite": {"name": "ctxconf"}}', "bad.json (not a ctxconf JSON report): suite: 'version' is a required property"),
    ('[1, 2]', "bad.json (not a ctxconf JSON report): (top level): [1, 2] is not of type 'object'"),
])
def test_bad_input_is_exit_2_naming_the_file_and_the_field(reports, tmp_path, content, expected):
    path = tmp_path / ("missing.json" if content is None else "bad.json")
    if content is not None:
        path.write_text(content)
    run = ctxconf("diff", str(reports[0]), str(path))
    assert run.returncode == 2 and expected in run.stderr, run.stderr
    assert "Traceback" not in run.stderr and run.stdout == ""


def test_reports_of_two_roles_do_not_compare(reports, tmp_path):
    provider = json.loads(reports[0].read_text())
    provider["role"] = "provider"
    (tmp_path / "provider.json").write_text(json.dumps(provider))
    run = ctxconf("diff", str(reports[0]), str(tmp_path / "provider.json"))
    assert run.returncode == 2 and "provider.json: role: is a provider report" in run.stderr
