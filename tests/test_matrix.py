"""`ctxconf matrix FILE.yaml` (issue 14): the bundled demo is itself a test (every entry states the verdict it
must get), the side taken on each ruling is read honestly, and a bad file is exit 2 naming file and field."""

import json

import pytest

from conformance.data import catalog as catalog_mod
from conformance.commands.matrix import DEMO
from conformance.reports import matrix_report
from tests.conftest import ctxconf


@pytest.fixture(scope="session")
def demo(tmp_path_factory, run_once):
    """The demo matrix run once per pytest run (in whichever pytest-xdist worker first needs it), its files
    and its run read by the tests below."""
    def run_demo():
        out = tmp_path_factory.mktemp("matrix")
        return out, ctxconf("matrix", str(DEMO), "--html", str(out / "m.html"), "--markdown", str(out / "m.md"),
                            "--json", str(out / "m.json"), cwd=out, timeout=600)
    out, run = run_once("tests/test_matrix.py demo", run_demo)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    return out, run


def test_the_demo_gets_the_verdict_each_entry_expects(demo):
    out, run = demo
    data = json.loads((out / "m.json").read_text())
    verdicts = {i["name"]: (i["verdict"], i["as_expected"]) for i in data["implementations"]}
    assert verdicts["reference kernel"] == ("conformant", True)
    assert verdicts["PerSectionBudget"] == ("not conformant", True)
    assert verdicts["IgnoresBudget"] == ("not conformant", True)
    assert len(verdicts) == 8 and all(ok for _, ok in verdicts.values())
    assert "[5/8] PerSectionBudget (kernel over python): not conformant (as expected)" in run.stderr
    for name in ("m.html", "m.md", "m.json"):
        assert f"wrote {out / name}" in run.stdout


def test_each_requirement_and_ruling_shows_the_side_each_implementation_took(demo):
    out, _ = demo
    data = json.loads((out / "m.json").read_text())
    budget = next(r for r in data["requirements"]["kernel"] if r["id"] == "K-BUDGET-REJECT")
    assert budget["status"]["reference kernel"] == "pass" and budget["status"]["PerSectionBudget"] == "fail"
    assert "IgnoresBudget" not in budget["status"]  # a provider has no column among the kernel's requirements
    rulings = {r["id"]: r["sides"] for r in data["rulings"]["kernel"]}
    assert rulings["R-BUDGET-PER-PROVIDER"]["reference kernel"]["side"] == "accepted"  # both accepted
    assert rulings["R-BUDGET-PER-PROVIDER"]["PerSectionBudget"]["side"] == "fails"
    isolation = rulings["R-ERROR-ISOLATION"]  # both accepted: which alternative is not in the reports
    assert isolation["FailsTurnOnUnsettledFailures"]["side"] == isolation["reference kernel"]["side"] == "accepted"
    assert isolation["AbortsOnAnyError"]["side"] == "fails"
    assert "K-ERR-" in isolation["AbortsOnAnyError"]["evidence"]
    markdown = (out / "m.md").read_text()
    assert "| **K-BUDGET-REJECT** | MUST | pass | pass | pass | pass | fail |" in markdown
    page = (out / "m.html").read_text()
    assert "<style>" in page and "<link" not in page and " src=" not in page
    assert "which one the reports do not say" in page


def _case(status="pass", rulings=("R-PLACEMENT",), requirements=("K-BUDGET-REJECT",), failures=()):
    return {"id": "kernel/x", "status": status, "rulings": list(rulings), "requirements": list(requirements),
            "failures": list(failures)}


@pytest.mark.parametrize("cases, side", [
    ([], "not observed"),
    ([_case(rulings=())], "not observed"),
    ([_case(status="skip")], "not observed"),
    ([_case(status="error")], "not observed"),
    # a failure on another requirement cuts the vector's own expectations short: no judgement of the ruling
    ([_case(status="fail", failures=[{"requirement": "K-PRIOR-SECTIONS", "message": "m"}])], "not observed"),
    ([_case(status="fail", failures=[{"requirement": "K-BUDGET-REJECT", "message": "m"}]), _case()], "fails"),
    ([_case()], "follows"),
])
def test_the_side_taken_is_read_off_the_cases_that_apply_the_ruling_and_never_guessed(cases, side):
    ruling = catalog_mod.load().rulings["R-PLACEMENT"]  # strict: the one side
    assert matrix_report.side(ruling, {"cases": cases}).side == side
    both = catalog_mod.load().rulings["R-ERROR-ISOLATION"]
    expected = "accepted" if side == "follows" else side
    assert matrix_report.side(both, {"cases": [dict(c, rulings=["R-ERROR-ISOLATION"] if c["rulings"] else [])
                                               for c in cases]}).side == expected


def test_a_verdict_other_than_the_expected_one_is_exit_1(tmp_path):
    (tmp_path / "m.yaml").write_text("properties: false\nimplementations:\n"
                                     "  - {name: ref, role: kernel, binding: python, "
                                     "target: 'conformance.reference.kernel:create', expect: conformant}\n")
    run = ctxconf("matrix", "m.yaml", cwd=tmp_path)
    assert run.returncode == 1, run.stderr[-2000:]
    assert "[1/1] ref (kernel over python): no verdict (NOT as expected: conformant)" in run.stderr
    assert json.loads((tmp_path / "ctxconf-matrix.json").read_text())["implementations"][0]["as_expected"] is False


KERNEL = "{name: k, role: kernel, binding: python, target: 'conformance.reference.kernel:create'}"


@pytest.mark.parametrize("text, field, message", [
    ("title: x\n", "(top level)", "'implementations' is a required property"),
    ("implementations: []\n", "implementations", "should be non-empty"),
    ("implementations:\n  - {name: k, role: kernel, binding: carrier-pigeon, target: x}\n",
     "implementations[0].binding", "is not one of"),
    ("implementations:\n  - {name: p, role: provider, binding: python, target: 'a:b'}\n",
     "implementations[0]", "'manifest' is a required property"),
    ("implementations:\n  - {name: k, role: kernel, binding: python, target: 'a:b', manifest: m.yaml}\n",
     "implementations[0].manifest", "only a provider takes a manifest"),
    ("implementations:\n  - {name: k, role: kernel, binding: plugin, target: './p'}\n",
     "implementations[0].binding", "go-plugin launches providers"),
    (f"implementations:\n  - {KERNEL}\n  - {KERNEL}\n", "implementations[1].name", "the name 'k' is used twice"),
    ("implementations:\n  - {name: p, role: provider, binding: python, target: 'a:b', manifest: nowhere.yaml}\n",
     "implementations[0].manifest", "no such file"),
    ("implementations:\n  - {name: k, role: kernel, binding: python, target: 'no_such_module:create'}\n",
     "implementations[0] (k)", "no_such_module"),
    ("implementations: [\n", "", "not valid YAML"),
])
def test_a_bad_matrix_file_is_exit_2_naming_the_file_and_the_field(tmp_path, text, field, message):
    (tmp_path / "m.yaml").write_text(text)
    run = ctxconf("matrix", "m.yaml", cwd=tmp_path)
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stderr.startswith(f"ctxconf: error: m.yaml: {field}: " if field else "ctxconf: error: m.yaml: ")
    assert message in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "ctxconf-matrix.html").exists()
