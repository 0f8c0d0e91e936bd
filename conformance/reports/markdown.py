"""A Markdown summary that fits a CI step summary: the verdict, the counts, and
each failing requirement with its anchor, rulings and a command that reruns it."""

from __future__ import annotations

from conformance.engine.results import ERROR, FAIL, XFAIL
from conformance.reports.verdict import CONFORMANT, NO_VERDICT, Report, implementation_name


MESSAGE_ROOM = 400  # characters of a failure's message in a table cell; the rerun command is never cut


def cell(text: str) -> str:
    """Text that stays inside one Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(report: Report) -> str:
    impl = report.implementation
    icon = {CONFORMANT: "✅", NO_VERDICT: "➖"}.get(report.verdict, "❌")
    lines = [f"## {icon} ctxconf {report.role}: {report.verdict}", "", *[f"- {d}" for d in report.details()], "",
             f"{implementation_name(impl)} over **{report.binding}**, "
             f"ctxconf {report.suite_version}, {len(report.cases)} case{'s' * (len(report.cases) != 1)} "
             f"in {report.seconds:.1f}s." + (f" Partial run: {report.filtered}." if report.filtered else ""), "",
             "| status | requirements | cases |", "|---|---|---|"]
    requirements, cases = report.counts(), report.case_counts()
    lines += [f"| {s} | {requirements.get(s, 0)} | {cases.get(s, 0)} |" for s in sorted({*requirements, *cases})]
    problems = [r for r in report.requirements if r.status in (FAIL, ERROR, XFAIL)]
    if problems:
        by_id = {c.id: c for c in report.cases}
        lines += ["", "| requirement | level | status | spec | first failure |", "|---|---|---|---|---|"]
        for r in problems:
            if r.failures:
                case = by_id[r.failures[0][0]]
                message = r.failures[0][1].message
                message = message if len(message) <= MESSAGE_ROOM else message[:MESSAGE_ROOM - 3] + "..."
                text = f"`{case.id}`: {message}"
                text += f" (rulings: {', '.join(case.rulings)})" if case.rulings else ""
                rerun = report.rerun(case)
                text += f"<br>rerun: `{rerun}`" if rerun else ""  # whole: a command cut short reruns nothing
            elif r.errors:
                text = f"errored in {', '.join(r.errors[:3])}"
            else:
                text = "baselined: " + "; ".join(w for c in r.cases for w in report.xfailed.get(c, ())
                                                  if w.startswith(r.id + ":"))
            lines.append(f"| {r.id} | {r.requirement.level} | {r.status} | `{r.requirement.anchor}` | {cell(text)} |")
    return "\n".join(lines) + "\n"
