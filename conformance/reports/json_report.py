"""The JSON report (schema: schemas/report.json)."""

from __future__ import annotations

from conformance.reports.verdict import Report


def to_json(report: Report) -> dict:
    return {
        "suite": {"name": "ctxconf", "version": report.suite_version, "spec_revision": report.spec_revision},
        "implementation": report.implementation,
        "role": report.role,
        "binding": report.binding,
        "verdict": report.verdict,
        "verdict_details": report.details(),
        "filtered": report.filtered,
        "seed": report.seed,
        "requirements": [{
            "id": r.id, "level": r.requirement.level, "binds": r.requirement.binds,
            "anchor": r.requirement.anchor, "status": r.status, "cases": r.cases, "skipped_cases": r.skipped,
            "failures": [{"case": case, "where": f.where, "message": f.message} for case, f in r.failures],
            **({"reason": r.requirement.reason} if not r.requirement.testable else {}),
        } for r in report.requirements],
        "cases": [{
            "id": c.id, "title": c.title, "status": report.status_of(c), "seconds": round(c.seconds, 4),
            "requirements": list(c.requirements), "rulings": list(c.rulings), "source": c.source,
            **({"error": c.error} if c.error else {}), **({"skipped": c.skipped} if c.skipped else {}),
            **({"expected_failure": report.xfailed[c.id]} if c.id in report.xfailed else {}),
            **({"counterexample": c.counterexample} if c.counterexample else {}),
            **({"rerun": report.rerun(c)} if report.rerun(c) else {}),
            "failures": [{"requirement": f.requirement, "where": f.where, "message": f.message}
                         for f in c.findings if not f.passed],
        } for c in report.cases],
        "stale_baseline": report.stale,
        "unattributed_failures": [{"case": case, "requirement": f.requirement, "message": f.message}
                                  for case, f in report.unattributed],
        "summary": {
            "requirements": report.counts(), "cases": report.case_counts(),
            "blocking_failures": [r.id for r in report.blocking_failures],
            "known_failures": [r.id for r in report.known_failures],
            "unexercised": [r.id for r in report.unexercised],
            "not_exercised": [{"id": r.id, "why": r.why_unexercised} for r in report.named],
            "warnings": [r.id for r in report.warnings],
            "errored_cases": [c.id for c in report.errored_cases],
            "seconds": round(report.seconds, 3),
        },
    }
