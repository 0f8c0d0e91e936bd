"""Every output tells the same truth as the exit code, and a run is one a
person can follow: progress, the files written, and for each failure its
anchor, rulings and a command that reruns exactly that case."""

import json
import re
import shlex
import xml.etree.ElementTree as ET

import pytest
import yaml

from tests.conftest import MANIFESTS, ctxconf

MUTANT = "conformance.proofs.kernel_mutants:PerSectionBudget"  # fails K-BUDGET-REJECT and K-COMPACTOR-BUDGET


def _outputs(tmp_path, *args: str):
    run = ctxconf(*args, "--report", str(tmp_path / "r.json"), "--junit", str(tmp_path / "j.xml"),
                  "--markdown", str(tmp_path / "m.md"), "--badge", str(tmp_path / "badge"))
    return _read(tmp_path, run)


def _read(tmp_path, run):
    """The run and what _outputs() had it write: report, JUnit root, Markdown, badge."""
    report = json.loads((tmp_path / "r.json").read_text())
    suite = ET.parse(tmp_path / "j.xml").getroot()
    badge = json.loads((tmp_path / "badge" / "badge.json").read_text())
    return run, report, suite, (tmp_path / "m.md").read_text(), badge


@pytest.fixture(scope="session")
def mutant_outputs(tmp_path_factory, run_once):
    """The folder and the run of MUTANT's vectors with every output written: certified once per pytest run,
    for the tests that read them."""
    def certify():
        folder = tmp_path_factory.mktemp("mutant-outputs")
        return folder, _outputs(folder, "kernel", "--python", MUTANT, "--no-properties")[0]
    return run_once("tests/test_outputs.py mutant outputs", certify)


@pytest.fixture(scope="session")
def property_run(tmp_path_factory, run_once):
    """The folder and the run of the reference kernel's property test alone (`-k property`, ci profile) run
    there with its report: run once per pytest run, for the tests that read the report or the folder."""
    def certify():
        folder = tmp_path_factory.mktemp("property-run")
        return folder, ctxconf("kernel", "-k", "property", "--profile", "ci", "--report", str(folder / "r.json"),
                               cwd=folder)
    return run_once("tests/test_outputs.py property run", certify)


def test_a_baselined_failure_is_xfail_in_every_output(tmp_path):
    baseline = tmp_path / "baseline.yaml"
    # Everything the mutant declares it may fail, so that whatever the property run finds is listed.
    baseline.write_text(yaml.safe_dump([{"requirement": r, "reason": f"tracked in #1{i}"} for i, r in enumerate(
        ["K-BUDGET-REJECT", "K-COMPACTOR-BUDGET", "K-BUDGET-VALIDATE", "K-TRUNCATED-NOT-ENOUGH"])]))
    run, report, suite, md, badge = _outputs(tmp_path, "kernel", "--python", MUTANT, "--profile", "ci",
                                             "--baseline", str(baseline), "--counterexamples", str(tmp_path / "cx"))
    assert run.returncode == 0, run.stdout + run.stderr  # regression gating...
    assert "verdict: NOT CONFORMANT" in run.stdout       # ...but never certified
    xfailed = [c for c in report["cases"] if c["status"] == "xfail"]
    assert xfailed and not [c for c in report["cases"] if c["status"] == "fail"]
    assert all("tracked in #1" in " ".join(c["expected_failure"]) for c in xfailed)
    assert suite.get("failures") == "0" and suite.get("errors") == "0"
    skipped = [e for e in suite.iter("skipped") if "expected failure (baseline)" in e.get("message")]
    assert len(skipped) == len(xfailed)
    assert "| xfail |" in md and "K-BUDGET-REJECT" in md
    known = len(report["summary"]["known_failures"])
    assert known >= 2 and badge["message"] == f"not conformant ({known} known failures)" and badge["color"] == "red"


def test_a_case_errored_beside_a_baselined_failure_stays_an_error():
    from conformance.data import catalog as catalog_mod
    from conformance.engine.results import CaseResult, Finding
    from conformance.reports import junit
    from conformance.reports.verdict import build

    case = CaseResult("kernel/x", "x", findings=[Finding("K-BUDGET-REJECT", False, "kept")], error="crashed")
    report = build(catalog_mod.load(), catalog_mod.KERNEL_ROLES, "kernel", [case], "stdio", {}, 0.0,
                   baseline=[{"requirement": "K-BUDGET-REJECT", "reason": "known"}])
    assert report.status_of(case) == "error" and report.exit_code == 1
    assert ET.fromstring(junit.to_xml(report).split("\n", 1)[1]).get("errors") == "1"


def test_a_misspelt_requirement_id_is_refused_when_the_check_makes_its_finding():
    from conformance.engine.results import Finding, UnknownRequirement

    with pytest.raises(UnknownRequirement, match="K-SCOPE-DISCARDS"):
        Finding("K-SCOPE-DISCARDS", False, "kept")


def test_a_failure_citing_no_requirement_of_the_role_is_never_conformant():
    from conformance.data import catalog as catalog_mod
    from conformance.engine.results import CaseResult, Finding
    from conformance.reports.verdict import NOT_CONFORMANT, build

    ids = [r.id for r in catalog_mod.load().for_roles(catalog_mod.KERNEL_ROLES) if r.testable]
    held = CaseResult("kernel/all", "all", findings=[Finding(i, True) for i in ids])
    astray = CaseResult("kernel/x", "x", findings=[Finding("P-RPCS", False, "a provider's requirement")])
    report = build(catalog_mod.load(), catalog_mod.KERNEL_ROLES, "kernel", [held, astray], "stdio", {}, 0.0)
    assert report.verdict == NOT_CONFORMANT and report.exit_code == 1
    assert "citing no requirement of the role" in report.verdict_line()


@pytest.mark.parametrize("options, scope", [(["-k", "kernel/budget/"], "-k 'kernel/budget/'"),
                                            (["--no-properties"], "--no-properties")])
def test_a_partial_run_says_so_in_every_output(tmp_path, options, scope):
    run, report, suite, md, badge = _outputs(tmp_path, "kernel", *options)
    assert run.returncode == 0 and "verdict: NO VERDICT" in run.stdout and scope in run.stdout
    assert report["filtered"] == scope and report["verdict"] == "no verdict"
    assert suite.find("properties/property[@name='partial']").get("value") == scope
    assert f"Partial run: {scope}" in md
    assert badge["message"] == f"no verdict (partial run: {scope})" and badge["color"] == "lightgrey"


def test_k_matches_the_property_tests_id(property_run):
    folder, run = property_run
    assert run.returncode == 0, run.stdout + run.stderr
    assert [c["id"] for c in json.loads((folder / "r.json").read_text())["cases"]] == [
        "property/kernel/generated-scenarios"]


def test_a_failure_names_anchor_and_rulings_and_its_rerun_command_reproduces_it(mutant_outputs, tmp_path):
    folder, run = mutant_outputs
    run, report, suite, md, _ = _read(folder, run)
    assert run.returncode == 1
    assert "spec: context/data-types.md#budget-mechanics" in run.stdout
    assert "(rulings: R-BUDGET-PER-PROVIDER)" in run.stdout
    failure = next(e for e in suite.iter("failure") if "K-BUDGET-REJECT" in e.get("message"))
    assert "context/data-types.md#budget-mechanics" in failure.text and "rerun: ctxconf replay" in failure.text
    assert "`context/data-types.md#budget-mechanics`" in md and "rerun: `ctxconf replay" in md
    assert "K-BUDGET-REJECT (context/data-types.md#budget-mechanics)" in (folder / "badge" / "badge.svg").read_text()
    [line] = [line for line in run.stdout.splitlines() if "rerun:" in line
              and "budget-covers-all-own-sections" in line]
    command = shlex.split(line.split("rerun: ", 1)[1])
    assert command[:2] == ["ctxconf", "replay"] and MUTANT in command
    rerun = ctxconf(*command[1:], "--report", str(tmp_path / "again.json"))
    again = json.loads((tmp_path / "again.json").read_text())
    assert rerun.returncode == 1 and [c["id"] for c in again["cases"]] == ["kernel/budget/budget-covers-all-own-sections"]
    assert "K-BUDGET-REJECT" in again["summary"]["blocking_failures"]


def test_summaries_are_whole_and_the_files_written_are_listed(mutant_outputs):
    from conformance.data import catalog as catalog_mod

    folder, run = mutant_outputs
    summary = catalog_mod.load().requirements["K-BUDGET-REJECT"].summary
    assert summary in run.stdout
    for name in ("r.json", "j.xml", "m.md", "badge/badge.json", "badge/badge.svg"):
        assert f"wrote {folder / name}" in run.stdout
    assert not re.search(r"\b1 cases", run.stdout)


def test_progress_is_reported_case_by_case_on_stderr(tmp_path):
    run = ctxconf("kernel", "-k", "kernel/budget/")
    lines = [line for line in run.stderr.splitlines() if line.startswith("[")]
    assert lines and lines[0].startswith("[1/") and "kernel/budget/" in lines[0]
    assert len(lines) == int(lines[0].split("/")[1].split("]")[0])


def test_a_property_failure_is_shown_whole_with_its_counterexample_and_rerun(tmp_path):
    mutant = "conformance.proofs.kernel_mutants:AlphabeticalOrder"
    run = ctxconf("kernel", "--python", mutant, "-k", "property", "--profile", "ci",
                  "--counterexamples", str(tmp_path / "cx"))
    assert run.returncode == 1, run.stdout + run.stderr
    assert "see the JSON report" not in run.stdout
    [written] = [line.split("wrote ", 1)[1] for line in run.stdout.splitlines() if line.startswith("wrote ")]
    assert written.startswith(str(tmp_path / "cx")) and written.endswith(".yaml")
    assert f"rerun: ctxconf replay {written} --python {mutant}" in run.stdout


@pytest.mark.parametrize("options, named", [
    (["--timeout", "-1"], "--timeout"), (["--timeout", "nan"], "--timeout"), (["--timeout", "inf"], "--timeout"),
    (["--examples", "0"], "--examples"), (["--vectors", "/no/such/dir"], "--vectors"),
    (["--counterexamples", "{file}"], "--counterexamples"), (["--badge", "{file}"], "--badge"),
    (["--report", "{file}/r.json"], "--report"), (["--junit", "{folder}"], "--junit"),
    (["--env", "NAME=VALUE"], "--env")])
def test_bad_options_exit_2_naming_the_option(tmp_path, options, named):
    (tmp_path / "file").write_text("")
    options = [o.format(file=tmp_path / "file", folder=tmp_path) for o in options]
    run = ctxconf("kernel", *options)
    assert run.returncode == 2 and named in run.stderr and "Traceback" not in run.stderr


@pytest.mark.parametrize("entry, field", [({"requirement": "K-DOES-NOT-EXIST"}, "[0].requirement"),
                                          ({"requirement": "P-WITHIN-BUDGET"}, "[0].requirement"),
                                          ({"requirement": "K-BUDGET-REJECT", "case": "kernel/budget/typo"}, "[0].case")])
def test_a_baseline_entry_naming_nothing_known_exits_2(tmp_path, entry, field):
    baseline = tmp_path / "baseline.yaml"
    baseline.write_text(yaml.safe_dump([entry]))
    run = ctxconf("kernel", "--baseline", str(baseline))
    assert run.returncode == 2 and str(baseline) in run.stderr and field in run.stderr


def test_no_hypothesis_folder_is_left_in_the_working_directory(property_run):
    folder, run = property_run  # run in `folder`
    assert run.returncode == 0 and not (folder / ".hypothesis").exists()


def test_help_is_written_for_the_role():
    kernel = ctxconf("kernel", "--help").stdout
    assert "ctxconf-kernel/1" in kernel and "ctxconf-provider/1" not in kernel and "--callback" not in kernel
    provider = ctxconf("provider", "--help").stdout
    assert "ctxconf-provider/1" in provider and "ctxconf-kernel/1" not in provider and "--callback" in provider


def test_a_first_line_that_is_not_json_keeps_the_shims_stderr(tmp_path):
    shim = tmp_path / "shim.py"
    shim.write_text("import sys\nprint('starting up', flush=True)\n"
                    "print('config file missing: /etc/kernel.toml', file=sys.stderr, flush=True)\n"
                    "sys.stdin.read()\n")
    run = ctxconf("kernel", "--stdio", f"python3 {shim}", "-k", "kernel/budget/exactly")
    assert "not JSON" in run.stdout + run.stderr
    assert "config file missing" in run.stdout + run.stderr


def test_the_provider_reference_rerun_names_its_manifest(tmp_path):
    run = ctxconf("provider", "--python", "conformance.proofs.provider_mutants:IgnoresBudget",
                  "--manifest", str(MANIFESTS / "filereader.yaml"), "--no-properties")
    assert run.returncode == 1
    line = next(line for line in run.stdout.splitlines() if "rerun:" in line)
    assert f"--manifest {MANIFESTS / 'filereader.yaml'}" in line


def test_a_replay_accepts_a_baseline_that_names_other_cases(tmp_path):
    from conformance.data import paths
    baseline = tmp_path / "baseline.yaml"
    baseline.write_text(yaml.safe_dump([{"requirement": "KC-STABILITY-ORDER-WARN",
                                         "case": "kernel/config/dynamic-before-static-warned-not-reordered"}]))
    vector = paths.VECTORS / "kernel/budget/exactly-at-budget-kept.yaml"
    run = ctxconf("replay", str(vector), "--baseline", str(baseline))
    assert run.returncode == 0, run.stderr
