"""The command line as a user meets it: exit codes, reports, clear errors."""

import json
import xml.etree.ElementTree as ET

import yaml

from conformance.data import schemas
from tests.conftest import REFERENCE_SHIM, ctxconf


def test_kernel_default_certifies_the_reference_kernel(tmp_path):
    run = ctxconf("kernel", "--report", str(tmp_path / "r.json"), "--junit", str(tmp_path / "j.xml"),
                  "--markdown", str(tmp_path / "s.md"), "--badge", str(tmp_path / "badge"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "verdict: CONFORMANT" in run.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    assert schemas.problems("report.json", report) == []
    assert report["verdict"] == "conformant" and report["role"] == "kernel" and report["binding"] == "python"
    assert {r["status"] for r in report["requirements"]} <= {"pass", "skip", "not-tested"}
    suite = ET.parse(tmp_path / "j.xml").getroot()
    assert suite.get("failures") == "0" and int(suite.get("tests")) == len(report["cases"])
    assert "conformant" in (tmp_path / "s.md").read_text()
    assert json.loads((tmp_path / "badge" / "badge.json").read_text())["color"] in ("brightgreen", "yellowgreen")
    assert (tmp_path / "badge" / "badge.svg").read_text().startswith("<svg")


def test_kernel_over_stdio_names_the_binding(tmp_path):
    run = ctxconf("kernel", "--stdio", REFERENCE_SHIM, "--profile", "ci", "--report", str(tmp_path / "r.json"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads((tmp_path / "r.json").read_text())["binding"] == "stdio"


def test_a_failing_kernel_exits_1_and_names_the_requirement(tmp_path):
    run = ctxconf("kernel", "--python", "conformance.proofs.kernel_mutants:PerSectionBudget", "--no-properties",
                  "--report", str(tmp_path / "r.json"))
    assert run.returncode == 1
    assert "FAIL  K-BUDGET-REJECT" in run.stdout and "verdict: NO VERDICT" in run.stdout  # vectors only
    report = json.loads((tmp_path / "r.json").read_text())
    assert "K-BUDGET-REJECT" in report["summary"]["blocking_failures"]


def test_should_failures_are_warnings_not_blockers():
    run = ctxconf("kernel", "--python", "conformance.proofs.kernel_mutants:NoStabilityWarning", "--no-properties")
    assert run.returncode == 0 and "warnings (SHOULD): KC-STABILITY-ORDER-WARN" in run.stdout


def test_baseline_turns_listed_failures_into_xfail_and_reports_stale_entries(tmp_path):
    baseline = tmp_path / "baseline.yaml"
    baseline.write_text(yaml.safe_dump({"expected_failures": [
        {"requirement": "K-BUDGET-REJECT", "reason": "known"},
        {"requirement": "K-SCOPE-LOG", "reason": "fixed long ago"}]}))
    run = ctxconf("kernel", "--python", "conformance.proofs.kernel_mutants:PerSectionBudget", "--no-properties",
                  "--baseline", str(baseline), "--report", str(tmp_path / "r.json"))
    report = json.loads((tmp_path / "r.json").read_text())
    statuses = {r["id"]: r["status"] for r in report["requirements"]}
    assert statuses["K-BUDGET-REJECT"] == "xfail"
    assert report["stale_baseline"] == ["K-SCOPE-LOG"]
    assert "stale baseline entry" in run.stdout


def test_bad_usage_exits_2_with_a_message():
    run = ctxconf("kernel", "--python", "no.such.module:create")
    assert run.returncode == 2 and "cannot import" in run.stderr and "Traceback" not in run.stderr
    run = ctxconf("kernel", "--stdio", "no-such-program-anywhere --flag")
    assert run.returncode == 2 and "no such executable" in run.stderr
    run = ctxconf("kernel", "-k", "no-case-has-this-id")
    assert run.returncode == 2 and "--filter" in run.stderr
    assert ctxconf("kernel", "--python", "x:y", "--stdio", "z").returncode == 2


def test_a_bad_vector_file_exits_2_naming_file_and_field(tmp_path):
    folder = tmp_path / "kernel" / "broken"
    folder.mkdir(parents=True)
    (folder / "typo.yaml").write_text(yaml.safe_dump({
        "id": "kernel/broken/typo", "title": "t", "requirements": ["K-TOKEN-BUDGET"],
        "setup": {"models": [{"id": "m", "context_window": 10, "reserved_output": 1, "system_overhead": 1}],
                  "primary_model": "m", "providers": [{"name": "a", "capabilities": {"stabilty": "STABILITY_STATIC"}}]},
        "turns": [{"assemble": {"session_id": "s", "turn_id": "t", "model": "m"},
                   "expect": {"K-TOKEN-BUDGET": {"requests": {"a": {"token_budget": 1}}}}}]}))
    run = ctxconf("kernel", "--vectors", str(tmp_path))
    assert run.returncode == 2
    assert "typo.yaml" in run.stderr and "setup.providers[0].capabilities" in run.stderr and "stabilty" in run.stderr
    assert "Traceback" not in run.stderr
