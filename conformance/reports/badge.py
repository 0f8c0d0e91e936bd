"""A badge: a shields.io endpoint JSON and a standalone SVG."""

from __future__ import annotations

from xml.sax.saxutils import escape

from conformance.reports.verdict import CONFORMANT, Report


def _message(report: Report) -> tuple[str, str]:
    passed = sum(1 for r in report.requirements if r.status == "pass")
    tested = sum(1 for r in report.requirements if r.status not in ("not-tested", "skip"))
    if report.verdict == CONFORMANT:
        return f"conformant ({passed}/{tested})", "brightgreen" if not report.warnings else "yellowgreen"
    return f"not conformant ({len(report.blocking_failures)} failing)", "red"


def endpoint(report: Report) -> dict:
    message, color = _message(report)
    return {"schemaVersion": 1, "label": f"ctxconf {report.role}", "message": message, "color": color}


_HEX = {"brightgreen": "#4c1", "yellowgreen": "#a4a61d", "red": "#e05d44"}


def svg(report: Report) -> str:
    label, (message, color) = f"ctxconf {report.role}", _message(report)
    left, right = 7 * len(label) + 10, 7 * len(message) + 10
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + right}" height="20" role="img" '
            f'aria-label="{escape(label)}: {escape(message)}">'
            f'<rect width="{left}" height="20" fill="#555"/><rect x="{left}" width="{right}" height="20" fill="{_HEX[color]}"/>'
            f'<g fill="#fff" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11">'
            f'<text x="5" y="14">{escape(label)}</text><text x="{left + 5}" y="14">{escape(message)}</text></g></svg>\n')
