"""The HTML report (`--html FILE`): one self-contained page per certification.

It holds the verdict, each failure with what was expected beside what was
observed and the command that reproduces it, the rulings involved, and every
requirement grouped under the spec anchor it comes from. The page is built
from the jinja2 templates in reports/templates with autoescaping on: failure
messages quote what an untrusted implementation sent. Nothing is loaded from
the network, so the file can be archived as a CI artifact and opened offline.
"""

from __future__ import annotations

import re
from functools import lru_cache

import jinja2

from conformance.data import catalog as catalog_mod
from conformance.data import paths
from conformance.data.catalog import spec_url
from conformance.engine.results import ERROR, FAIL, NOT_TESTED, XFAIL
from conformance.reports.verdict import Report, implementation_name, plural

TEMPLATES = paths.PACKAGE / "reports" / "templates"
# How the checks word a mismatch: "<what>: expected X, got Y" or "<what was seen>, expected X".
_EXPECTED_GOT = re.compile(r"^(?P<what>.*?)\bexpected (?P<expected>.+?), got (?P<observed>.+)$", re.DOTALL)
_SEEN_EXPECTED = re.compile(r"^(?P<observed>.+), expected (?P<expected>.+)$", re.DOTALL)
_ALTERNATIVES = "none of the accepted behaviours holds"


@lru_cache(maxsize=None)
def environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def side_by_side(message: str) -> list[tuple[str | None, str]]:
    """(expected, observed) pairs from a failure message; expected is None where the message states only
    what was seen (the requirement above it says what was expected)."""
    if message.startswith(_ALTERNATIVES):  # each alternative holds its own mismatches: one cell, unsplit
        return [("one of the behaviours the rulings accept", message)]
    rows = []
    for part in message.split("; "):
        match = _EXPECTED_GOT.match(part)
        if match:
            rows.append((match["what"] + match["expected"], match["what"] + match["observed"]))
            continue
        match = _SEEN_EXPECTED.match(part)
        rows.append((match["expected"], match["observed"]) if match else (None, part))
    return rows


def to_html(report: Report) -> str:
    return environment().get_template("report.html.j2").render(**_context(report))


def _context(report: Report) -> dict:
    catalog = catalog_mod.load()
    impl = report.implementation
    cases = {c.id: c for c in report.cases}
    failures = [_failure(r, report, cases) for r in report.requirements if r.status in (FAIL, ERROR, XFAIL)]
    failing_rulings = {rid for f in failures for case in f["cases"] for rid in case["rulings"]}
    applied = [rid for rid in catalog.rulings if any(rid in c.rulings for c in report.cases)]
    requirements, case_counts = report.counts(), report.case_counts()
    return {
        "suite_version": report.suite_version, "spec_revision": report.spec_revision, "role": report.role,
        "implementation": implementation_name(impl), "binding": report.binding,
        "verdict": report.verdict, "details": report.details(), "partial": report.filtered, "seed": report.seed,
        "seconds": f"{report.seconds:.1f}", "cases_run": plural(len(report.cases), "case"),
        "counts": [(s, requirements.get(s, 0), case_counts.get(s, 0)) for s in sorted({*requirements, *case_counts})],
        "failures": failures,
        "errored": [{"id": c.id, "error": c.error, "rerun": report.rerun(c)} for c in report.errored_cases],
        "unattributed": report.unattributed, "stale": report.stale,
        # The rulings a failing case applied are what a dispute is about; the others are folded away.
        "rulings": [_ruling(catalog.rulings[rid]) for rid in applied if rid in failing_rulings],
        "other_rulings": [_ruling(catalog.rulings[rid]) for rid in applied if rid not in failing_rulings],
        "groups": _groups(report),
    }


def _failure(r, report: Report, cases: dict) -> dict:
    by_case: dict[str, list] = {}
    for case_id, finding in r.failures:
        by_case.setdefault(case_id, []).append(finding)
    shown = [*by_case, *(c for c in r.errors if c not in by_case)]
    shown += [c for c in r.cases if report.status_of(cases[c]) == XFAIL and c not in shown] if r.status == XFAIL else []
    return {"id": r.id, "level": r.requirement.level, "status": r.status, "summary": r.requirement.summary,
            "anchor": r.requirement.anchor, "url": spec_url(r.requirement.anchor),
            "cases": [_case(cases[case_id], by_case.get(case_id, []), report, r.id) for case_id in shown]}


def _case(case, findings: list, report: Report, requirement: str) -> dict:
    rows = [{"where": f.where, "expected": expected, "observed": observed}
            for f in findings for expected, observed in side_by_side(f.message)]
    baselined = [why for why in report.xfailed.get(case.id, ()) if why.startswith(requirement + ":")]
    return {"id": case.id, "title": case.title, "rulings": list(case.rulings), "rows": rows,
            "error": case.error if not findings and not baselined else None, "baselined": baselined,
            "rerun": report.rerun(case)}


def _ruling(ruling) -> dict:
    return {"id": ruling.id, "question": ruling.question, "ruling": ruling.ruling, "applies": ruling.applies,
            "anchors": [{"anchor": a, "url": spec_url(a)} for a in ruling.anchors]}


def _groups(report: Report) -> list[dict]:
    groups: dict[str, list] = {}
    for r in report.requirements:
        groups.setdefault(r.requirement.anchor, []).append({
            "id": r.id, "level": r.requirement.level, "status": r.status, "summary": r.requirement.summary,
            "blocking": r.requirement.blocking and r.requirement.testable, "cases": len(r.cases),
            "why": r.why_unexercised or ("" if r.requirement.testable else "not testable: " + r.requirement.reason)
            if r.status == NOT_TESTED or r.why_unexercised else ""})
    return [{"anchor": anchor, "url": spec_url(anchor), "rows": rows} for anchor, rows in groups.items()]
