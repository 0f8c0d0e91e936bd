"""The rough edges a newcomer hits (issue 25): each test fails on the old behaviour."""

import io
import subprocess
import sys
from pathlib import Path

from conformance.data import catalog as catalog_mod
from conformance.engine.results import ERROR, FAIL, CaseResult, Finding
from conformance.reports.markdown import to_markdown
from conformance.reports.verdict import Report, RequirementResult
from tests.conftest import ROOT, ctxconf

SHIM = ROOT / "runners" / "python" / "stdio_shim.py"


def _report(results, cases=(), **extra) -> Report:
    return Report("kernel", "python", {"name": "k", "version": "1", "language": "py"}, "rev", list(results),
                  list(cases), 0.1, **extra)


def test_a_may_is_never_listed_among_the_warnings(catalog):
    may, should = catalog.requirements["K-MAY-SMALLER-BUDGET"], catalog.requirements["KC-STABILITY-ORDER-WARN"]
    report = _report([RequirementResult(may, ERROR), RequirementResult(should, FAIL)])
    assert [r.id for r in report.warnings] == ["KC-STABILITY-ORDER-WARN"]


def test_the_markdown_keeps_a_rerun_command_whole_after_a_long_message(catalog, tmp_path):
    vector = tmp_path / ("v" * 80 + ".yaml")
    vector.write_text("")
    case = CaseResult("kernel/x", "x", source=str(vector),
                      findings=[Finding("K-BUDGET-REJECT", False, "m" * 2000, "turn 1")])
    result = RequirementResult(catalog.requirements["K-BUDGET-REJECT"], FAIL, ["kernel/x"],
                               failures=[("kernel/x", case.findings[0])])
    row = next(line for line in to_markdown(_report([result], [case], rerun_options=["--python", "m:f"])).splitlines()
               if line.startswith("| K-BUDGET-REJECT"))
    assert row.count("`") % 2 == 0 and row.endswith("--python m:f` |"), row[-120:]


def test_the_stdio_shim_explains_itself_instead_of_a_traceback():
    for args, code in ((["--help"], 0), ([], 2), (["no-colon"], 2)):
        run = subprocess.run([sys.executable, str(SHIM), *args], capture_output=True, text=True, timeout=30)
        assert run.returncode == code and "usage: stdio_shim.py MODULE:FACTORY" in run.stdout + run.stderr
        assert "Traceback" not in run.stderr


def test_a_matrix_entry_that_cannot_start_could_not_run_and_fails_the_matrix(tmp_path):
    matrix = tmp_path / "m.yaml"
    matrix.write_text("title: t\nimplementations:\n  - {name: ghost, role: kernel, binding: stdio, "
                      "target: \"python does-not-exist.py\", expect: not conformant}\n")
    run = ctxconf("matrix", str(matrix), "--json", str(tmp_path / "m.json"), "--markdown", str(tmp_path / "m.md"),
                  "--html", str(tmp_path / "m.html"), cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    assert "ghost (kernel over stdio): could not run (every case errored)" in run.stderr
    assert "| ghost | kernel | stdio | could not run |" in (tmp_path / "m.md").read_text()


def test_paths_in_a_matrix_target_resolve_against_the_matrix_file(tmp_path):
    (tmp_path / "sub").mkdir()
    shim = tmp_path / "sub" / "shim.py"
    shim.write_text(SHIM.read_text())
    matrix = tmp_path / "sub" / "m.yaml"
    matrix.write_text("title: t\nproperties: false\nimplementations:\n  - {name: ref, role: kernel, binding: stdio, "
                      f"target: \"{sys.executable} shim.py conformance.reference.kernel:create\"}}\n")
    run = ctxconf("matrix", str(matrix), "--json", str(tmp_path / "m.json"), "--markdown", str(tmp_path / "m.md"),
                  "--html", str(tmp_path / "m.html"), cwd=tmp_path)
    assert "could not run" not in run.stderr, run.stderr


def test_a_broken_pipe_ends_quietly():
    for command in ("requirements", "explain K-BUDGET-REJECT"):
        shell = f"{sys.executable} -m conformance {command} | head -1"
        run = subprocess.run(shell, shell=True, capture_output=True, text=True, timeout=60, cwd=ROOT,
                             env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
        assert "Traceback" not in run.stderr and "BrokenPipeError" not in run.stderr, run.stderr


def test_argument_errors_name_the_option_and_the_command():
    bad_number = ctxconf("kernel", "--timeout", "abc")
    assert bad_number.returncode == 2 and "argument --timeout: expected a number of seconds, got 'abc'" in bad_number.stderr
    unknown = ctxconf("kernel", "--frobnicate")
    assert unknown.returncode == 2 and "ctxconf kernel: error: unrecognized arguments: --frobnicate" in unknown.stderr
    assert "usage: ctxconf kernel" in unknown.stderr


def test_an_output_that_cannot_be_written_is_refused_before_the_run(tmp_path):
    run = ctxconf("kernel", "--report", "/proc/ctxconf-cannot-be-here.json", timeout=30)
    assert run.returncode == 2 and "--report: cannot write /proc/ctxconf-cannot-be-here.json" in run.stderr
    assert "[1/" not in run.stderr, "refused before any case ran"


def test_the_trace_file_gets_its_wrote_line(tmp_path):
    trace = tmp_path / "t.jsonl"
    run = ctxconf("kernel", "--no-properties", "-k", "kernel/budget/budget-covers", "--trace", str(trace))
    assert f"wrote {trace}" in run.stdout and trace.is_file()


def test_an_implementation_that_never_starts_gets_one_clear_error_and_the_verdict_names_it():
    run = ctxconf("kernel", "--stdio", f"{sys.executable} /nonexistent-ctxconf-shim.py", "--no-properties")
    assert run.returncode == 1
    assert run.stdout.count("can't open file") == 2, run.stdout  # the error once, and the verdict's cause
    assert "  ERROR " not in run.stdout and "cases that errored" not in run.stdout
    assert "the implementation never started: the implementation closed its stdout" in run.stdout.split("verdict:")[1]


def test_the_self_test_says_each_subject_as_it_finishes():
    run = ctxconf("selftest", "-k", "JoinedBySpace", timeout=300)
    lines = [line for line in run.stderr.splitlines() if line.startswith("[")]
    assert run.returncode == 0 and len(lines) == 2 and lines[-1].startswith("[2/2] clean "), run.stderr


def test_a_property_run_says_which_scenario_it_is_on(monkeypatch):
    from conformance.bindings.base import KERNEL_PROTOCOL
    from conformance.bindings.python import PythonBinding
    from conformance.commands.funnel import run_cases
    from conformance.engine.connection import Connection
    from conformance.properties.runner import PropertyRun
    from conformance.reference.kernel import ReferenceKernel
    from conformance.reports import progress

    heard: list[str] = []
    with Connection(lambda: PythonBinding("t", KERNEL_PROTOCOL, 10.0, factory=ReferenceKernel)) as connection:
        [case] = run_cases("kernel", connection, [], PropertyRun(profile="ci", examples=5), Path("."),
                           on_progress=heard.append)
    assert case.status == "pass" and heard == [f"scenario {n} of 5" for n in range(1, 6)]
    # In a log (no terminal), a line at most every UPDATE_EVERY seconds.
    monkeypatch.setattr(progress, "UPDATE_EVERY", 0.0)
    shown = progress.RunProgress(3)
    shown.console.file = io.StringIO()
    shown.update("scenario 7 of 60")
    assert shown.console.file.getvalue() == "[1/3]   scenario 7 of 60\n"


def test_a_self_test_told_to_stop_stops_at_once_and_leaves_nothing_running(tmp_path):
    """SIGTERM in the middle of a parallel self-test: the subjects not started are dropped (the pool would run
    them all before it closed) and the workers stop theirs, so the command ends at once, exit 143."""
    import os
    import signal
    import time
    from tests.conftest import processes_under
    command = [sys.executable, "-m", "conformance", "selftest", "-k", "Reader", "--jobs", "2"]
    run = subprocess.Popen(command, cwd=tmp_path, stderr=subprocess.PIPE, text=True,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.stderr.readline().startswith("[1/")  # a subject done, others running and waiting
    run.send_signal(signal.SIGTERM)
    stopped = time.monotonic()
    assert run.wait(timeout=60) == 143 and time.monotonic() - stopped < 20
    deadline = time.monotonic() + 5
    while processes_under(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_under(tmp_path) == []


def test_a_case_whose_only_failure_the_whole_run_may_withdraw_is_shown_waiting():
    # A compactor's C-SUMMARIZE warning in one case stands only if no case of the run summarized
    # (R-SUMMARIZE-EVIDENCE): its progress line may not say fail while the report may say pass.
    from conformance.engine.provider_checks import SUMMARY_WHERE, judge_over_run, pending_over_run
    from conformance.reports import progress
    truncated_only = CaseResult("provider/compactor/a", "t", findings=[
        Finding("C-CHAIN-FITS", True), Finding("C-SUMMARIZE", False, "none summarized", f"step 2: {SUMMARY_WHERE}")])
    summarized = CaseResult("provider/compactor/b", "t", findings=[Finding("C-SUMMARIZE", True, "", SUMMARY_WHERE)])
    also_broken = CaseResult("provider/compactor/c", "t", findings=[*truncated_only.findings,
                                                                    Finding("C-CHAIN-FITS", False, "over")])
    shown = progress.RunProgress(3, pending_over_run)
    shown.console.file = io.StringIO()
    for case in (truncated_only, summarized, also_broken):
        shown.finished(case)
    lines = shown.console.file.getvalue().splitlines()
    assert lines[0].startswith("[1/3] wait  provider/compactor/a") and "settled when the run is judged" in lines[0]
    assert lines[1].startswith("[2/3] pass ") and lines[2].startswith("[3/3] fail ")
    judge_over_run([truncated_only, summarized, also_broken])
    assert truncated_only.status == "pass" and also_broken.status == "fail"
