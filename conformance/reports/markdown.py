"""A Markdown summary that fits a CI step summary."""

from __future__ import annotations

from conformance.engine.results import ERROR, FAIL
from conformance.reports.verdict import CONFORMANT, NO_VERDICT, Report


def to_markdown(report: Report) -> str:
    impl = report.implementation
    icon = {CONFORMANT: "✅", NO_VERDICT: "➖"}.get(report.verdict, "❌")
    lines = [f"## {icon} ctxconf {report.role}: {report.verdict}", "", *[f"- {d}" for d in report.details()], "",
             f"{impl.get('name', '?')} {impl.get('version', '')} over **{report.binding}**, "
             f"ctxconf {report.suite_version}, {len(report.cases)} cases in {report.seconds:.1f}s.", "",
             "| status | count |", "|---|---|"]
    lines += [f"| {status} | {n} |" for status, n in sorted(report.counts().items())]
    problems = [r for r in report.requirements if r.status in (FAIL, ERROR)]
    if problems:
        lines += ["", "| requirement | level | status | first failure |", "|---|---|---|---|"]
        for r in problems:
            first = r.failures[0] if r.failures else None
            text = f"`{first[0]}`: {first[1].message}" if first else f"errored in {', '.join(r.errors[:3])}"
            lines.append(f"| {r.id} | {r.requirement.level} | {r.status} | {text.replace('|', '/')[:300]} |")
    return "\n".join(lines) + "\n"
