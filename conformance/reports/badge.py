"""A badge: a shields.io endpoint JSON and a standalone SVG."""

from __future__ import annotations

from html import escape  # not xml.sax.saxutils, which imports urllib and http for nothing here

from conformance.engine.results import PASS
from conformance.reports.verdict import CONFORMANT, INCOMPLETE, NOT_CONFORMANT, Report


def _message(report: Report) -> tuple[str, str]:
    verdict = report.verdict
    if verdict == CONFORMANT:
        passed = sum(1 for r in report.requirements if r.status == PASS)
        named = len(report.named)
        return (f"conformant over {report.binding} ({passed} passed)"
                + (f"; {named} MUST{'s' * (named != 1)} not exercised" if named else ""),
                "brightgreen" if not report.warnings and not named else "yellowgreen")
    if verdict == NOT_CONFORMANT:
        failing, known = len(report.blocking_failures), len(report.known_failures)
        return (f"not conformant ({failing} failing" + (f", {known} known" if known else "") + ")"
                if failing or not known else f"not conformant ({known} known failures)"), "red"
    if verdict == INCOMPLETE:
        return f"incomplete ({len(report.unexercised)} MUST not exercised)", "orange"
    return f"no verdict (partial run: {report.filtered})", "lightgrey"


def endpoint(report: Report) -> dict:
    message, color = _message(report)
    return {"schemaVersion": 1, "label": f"ctxconf {report.role}", "message": message, "color": color}


_HEX = {"brightgreen": "#4c1", "yellowgreen": "#a4a61d", "orange": "#fe7d37", "red": "#e05d44", "lightgrey": "#9f9f9f"}


def svg(report: Report) -> str:
    """The badge; its title (a tooltip) gives the verdict line and each failing MUST with its spec anchor."""
    label, (message, color) = f"ctxconf {report.role}", _message(report)
    left, right = 7 * len(label) + 10, 7 * len(message) + 10
    title = "\n".join([report.verdict_line()] + [f"{r.id} ({r.requirement.anchor})"
                                                  for r in report.blocking_failures + report.known_failures])
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + right}" height="20" role="img" '
            f'aria-label="{escape(label)}: {escape(message)}"><title>{escape(title)}</title>'
            f'<rect width="{left}" height="20" fill="#555"/><rect x="{left}" width="{right}" height="20" fill="{_HEX[color]}"/>'
            f'<g fill="#fff" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11">'
            f'<text x="5" y="14">{escape(label)}</text><text x="{left + 5}" y="14">{escape(message)}</text></g></svg>\n')
