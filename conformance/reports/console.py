"""The console summary: one line per requirement, failures under it, the verdict last."""

from __future__ import annotations

import sys
from typing import TextIO

from conformance.engine.results import ERROR, FAIL, NOT_TESTED, PASS, SKIP, XFAIL
from conformance.reports.verdict import CONFORMANT, Report

_MARK = {PASS: "pass ", FAIL: "FAIL ", ERROR: "ERROR", SKIP: "skip ", XFAIL: "xfail", NOT_TESTED: "  -  "}


def _color(text: str, code: str, stream: TextIO) -> str:
    return f"\033[{code}m{text}\033[0m" if getattr(stream, "isatty", lambda: False)() else text


def print_report(report: Report, stream: TextIO = sys.stdout, verbose: bool = False) -> None:
    impl = report.implementation
    name = f"{impl.get('name', '?')} {impl.get('version', '')}".strip()
    print(f"ctxconf {report.suite_version}: {report.role} certification of {name} over {report.binding}", file=stream)
    for case in report.cases:
        if case.id.startswith("property/"):
            print(f"  property tests: {case.source} (rerun with --seed to reproduce)", file=stream)
    for r in report.requirements:
        if r.status == NOT_TESTED and not verbose and not r.requirement.normative:
            continue
        mark = _MARK[r.status]
        if r.status in (FAIL, ERROR):
            mark = _color(mark, "31" if r.requirement.blocking else "33", stream)
        note = f"  ({len(r.cases)} case{'s' if len(r.cases) != 1 else ''})" if r.cases else \
            ("  (not testable: " + r.requirement.reason + ")" if not r.requirement.testable else "")
        print(f"  {mark} {r.id:<32} {r.requirement.level:<8} {r.requirement.summary[:70]}{note}", file=stream)
        for case_id, finding in r.failures[: 3 if not verbose else None]:
            print(f"          {case_id} [{finding.where}]: {finding.message}", file=stream)
        if len(r.failures) > 3 and not verbose:
            print(f"          ... and {len(r.failures) - 3} more (see the JSON report)", file=stream)
        for case_id in r.errors[:2]:
            print(f"          {case_id}: error (see below)", file=stream)
    errored = report.errored_cases
    if errored:
        print("\ncases that errored (the implementation crashed, hung or broke the harness protocol):", file=stream)
        for case in errored:
            first = (case.error or "").splitlines()
            print(f"  {case.id}: {first[0] if first else ''}", file=stream)
            for line in first[1:12 if not verbose else None]:
                print(f"      {line}", file=stream)
    for entry in report.stale:
        print(f"  stale baseline entry (now passes): {entry}", file=stream)
    cases, reqs = report.case_counts(), report.counts()
    print(f"\n{len(report.cases)} cases: " + ", ".join(f"{n} {s}" for s, n in sorted(cases.items())) +
          f"; {len(report.requirements)} requirements: " + ", ".join(f"{n} {s}" for s, n in sorted(reqs.items())) +
          f"; {report.seconds:.1f}s", file=stream)
    if report.warnings:
        print("warnings (SHOULD): " + ", ".join(r.id for r in report.warnings), file=stream)
    line = f"verdict: {report.verdict.upper()}" + "".join(f"\n  {d}" for d in report.details())
    print(_color(line, "32" if report.verdict == CONFORMANT else "31", stream), file=stream)
