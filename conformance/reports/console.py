"""The console summary: one line per requirement, its failures under it (each
with the spec anchor, the rulings involved and a command that reruns the
case), the cases that errored, the files written, and the verdict last."""

from __future__ import annotations

import shutil
import sys
import textwrap
from typing import TextIO

from conformance.engine.results import ERROR, FAIL, NOT_TESTED, PASS, SKIP, XFAIL, CaseResult
from conformance.reports.verdict import CONFORMANT, Report, RequirementResult, implementation_name, plural

_MARK = {PASS: "pass ", FAIL: "FAIL ", ERROR: "ERROR", SKIP: "skip ", XFAIL: "xfail", NOT_TESTED: "  -  "}
_SHOWN = 3  # failing cases shown per requirement without -v
_INDENT = " " * 10


def _tty(stream: TextIO) -> bool:
    return getattr(stream, "isatty", lambda: False)()


def _color(text: str, code: str, stream: TextIO) -> str:
    return f"\033[{code}m{text}\033[0m" if _tty(stream) else text


def _wrap(text: str, first: str, rest: str, stream: TextIO) -> str:
    """Wrapped to the terminal's width on a terminal; one long line in a log, which its viewer wraps."""
    if not _tty(stream):
        return first + text
    width = max(shutil.get_terminal_size().columns, len(first) + 30)
    return textwrap.fill(text, width, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False)


def print_report(report: Report, stream: TextIO = sys.stdout, verbose: bool = False,
                 written: list[str] = ()) -> None:
    def out(text: str = "") -> None:
        print(text, file=stream)

    impl = report.implementation
    name = implementation_name(impl)
    out(f"ctxconf {report.suite_version}: {report.role} certification of {name} over {report.binding}")
    if report.filtered:
        out(f"  partial run ({report.filtered}): no verdict")
    for case in report.cases:
        if case.id.startswith("property/"):
            out(f"  property tests: {case.source} (rerun with --seed to reproduce)")
    if report.never_started is not None:  # one cause, said once, not once per requirement and case
        out(f"\nno case ran: the implementation never started.\n{report.cases[0].error}")
        written = ()
        report_lines = False
    else:
        report_lines = True
    for r in report.requirements if report_lines else ():
        if r.status == NOT_TESTED and not verbose and not r.requirement.normative:
            continue
        _requirement(r, report, out, stream, verbose)
    errored = report.errored_cases if report_lines else []
    if errored:
        out("\ncases that errored (the implementation crashed, hung or broke the harness protocol):")
        for case in errored:
            lines = (case.error or "").splitlines() or [""]
            out(f"  {case.id}: {lines[0]}")
            for line in lines[1:12 if not verbose else None]:
                out(f"      {line}")
            _rerun(case, report, out)
    for case_id, finding in report.unattributed:
        out(f"  {case_id}: a failure cites {finding.requirement}, which the catalog does not have (a defect of "
            f"the suite; please report it): {finding.message}")
    for entry in report.stale:
        out(f"  stale baseline entry (now passes): {entry}")
    cases, reqs = report.case_counts(), report.counts()
    out(f"\n{plural(len(report.cases), 'case')}: " + ", ".join(f"{n} {s}" for s, n in sorted(cases.items())) +
        f"; {plural(len(report.requirements), 'requirement')}: " +
        ", ".join(f"{n} {s}" for s, n in sorted(reqs.items())) + f"; {report.seconds:.1f}s")
    if report.warnings and report_lines:
        out("warnings (SHOULD): " + ", ".join(r.id for r in report.warnings))
    for path in written:
        out(f"wrote {path}")
    line = f"verdict: {report.verdict.upper()}" + "".join(f"\n  {d}" for d in report.details())
    out(_color(line, "32" if report.verdict == CONFORMANT else "31", stream))


def _requirement(r: RequirementResult, report: Report, out, stream: TextIO, verbose: bool) -> None:
    mark = _MARK[r.status]
    if r.status in (FAIL, ERROR):
        mark = _color(mark, "31" if r.requirement.blocking else "33", stream)
    ran = len(r.cases) - len(r.skipped)
    if r.cases:
        note = f"  ({plural(ran, 'case')}, {len(r.skipped)} skipped)" if r.skipped and ran else \
            f"  ({len(r.skipped)} skipped)" if r.skipped else f"  ({plural(ran, 'case')})"
    else:
        note = "  (not testable: " + r.requirement.reason + ")" if not r.requirement.testable else ""
    head = f"  {mark} {r.id:<32} {r.requirement.level:<8} "
    out(_wrap(r.requirement.summary + note, head, " " * 50, stream))  # 50: the width of head without colour
    if r.status in (FAIL, ERROR, XFAIL) or verbose:
        out(f"{_INDENT}spec: {r.requirement.anchor}")
    by_case: dict[str, list] = {}
    for case_id, finding in r.failures:
        by_case.setdefault(case_id, []).append(finding)
    cases = {c.id: c for c in report.cases}
    shown = list(by_case.items()) if verbose else list(by_case.items())[:_SHOWN]
    for case_id, findings in shown:
        case = cases[case_id]
        if case.rulings:
            out(f"{_INDENT}{case_id} (rulings: {', '.join(case.rulings)})")
        for finding in findings:
            where = f"{case_id} [{finding.where}]" if finding.where else case_id
            out(_wrap(f"{where}: {finding.message}", _INDENT, _INDENT + "  ", stream))
        _rerun(case, report, out)
    if len(by_case) > len(shown):
        out(f"{_INDENT}... and {plural(len(by_case) - len(shown), 'more case')}: "
            + ", ".join(list(by_case)[len(shown):]) + " (-v shows their failures)")
    for case_id in r.errors[:2]:
        out(f"{_INDENT}{case_id}: error (see below)")


def _rerun(case: CaseResult, report: Report, out) -> None:
    command = report.rerun(case)
    if command:
        out(f"{_INDENT}  rerun: {command}")
