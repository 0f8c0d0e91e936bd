"""The comparison matrix: several implementations' JSON reports side by side,
as HTML, Markdown and JSON (`ctxconf matrix`).

For every requirement, each implementation's status. For every ruling, the
side each implementation took, read off the cases that apply the ruling and
nothing else:
- fails: a case applying the ruling failed a requirement that case judges.
  That is the side the ruling rejects, or another fault showing in the same
  case; the evidence quotes the failure, and the matrix claims no more;
- follows (strict ruling), or accepted (both-accepted or lenient ruling): a
  case applying it passed, and none fails. Where a ruling accepts several
  behaviours, the reports do not say which one the implementation took, and
  the matrix says so rather than guess;
- not observed: no case applying it ran to a judgement (none ran, all were
  skipped or errored, or they failed only on other requirements, after which
  the vector's own expectations are not evaluated).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance.data import catalog as catalog_mod
from conformance.data.catalog import spec_url
from conformance.engine.results import Status
from conformance.reports.html import environment
from conformance.reports.markdown import cell
from conformance.reports.verdict import Exit, implementation_name, plural

FOLLOWS, ACCEPTED, FAILS, NOT_OBSERVED = "follows", "accepted", "fails", "not observed"
SIDE_TEXT = {FOLLOWS: "took the ruling's side (the one behaviour it accepts)",
             ACCEPTED: "took an accepted side; which of the accepted behaviours: not observed",
             FAILS: "failed a case applying it: the side the ruling rejects, or another fault in that case",
             NOT_OBSERVED: "not observed"}


@dataclass
class Column:
    """One implementation of the matrix: its entry's name and its report."""
    name: str
    report: dict
    target: str = ""
    expect: str | None = None

    @property
    def role(self) -> str:
        return self.report["role"]

    @property
    def ran(self) -> bool:
        """False when no case of it ran to an end (every one errored or was skipped): it could not run, and
        no verdict of it, expected or not, says anything."""
        return any(c["status"] not in ("error", "skip") for c in self.report["cases"])

    @property
    def as_expected(self) -> bool | None:
        if not self.ran:
            return False
        return None if self.expect is None else self.report["verdict"] == self.expect

    @property
    def outcome(self) -> str:
        return self.report["verdict"] if self.ran else "could not run"


@dataclass
class Side:
    side: str
    evidence: str = ""


@dataclass
class Matrix:
    title: str
    columns: list[Column]
    requirements: dict[str, list[dict]] = field(default_factory=dict)  # role: rows
    rulings: dict[str, list[dict]] = field(default_factory=dict)

    @property
    def exit_code(self) -> Exit:
        """FAILED when an implementation got a verdict other than the one its entry expects, or could not run."""
        return Exit.FAILED if any(c.as_expected is False for c in self.columns) else Exit.OK

    def roles(self) -> list[str]:
        return [role for role in ("kernel", "provider") if any(c.role == role for c in self.columns)]

    def of(self, role: str) -> list[Column]:
        return [c for c in self.columns if c.role == role]


def build(title: str, columns: list[Column]) -> Matrix:
    catalog = catalog_mod.load()
    matrix = Matrix(title, columns)
    for role in matrix.roles():
        mine = matrix.of(role)
        statuses = [{r["id"]: r for r in c.report["requirements"]} for c in mine]
        ids = list(dict.fromkeys(rid for by_id in statuses for rid in by_id))
        matrix.requirements[role] = [_requirement_row(catalog.requirements.get(rid), rid, by_ids=statuses)
                                     for rid in ids]
        applied = [rid for rid in catalog.rulings if any(rid in case.get("rulings", ()) for c in mine
                                                         for case in c.report["cases"])]
        matrix.rulings[role] = [_ruling_row(catalog.rulings[rid], mine) for rid in applied]
    return matrix


def _requirement_row(requirement, rid: str, by_ids: list[dict]) -> dict:
    cells = [by_id[rid]["status"] if rid in by_id else "not-applicable" for by_id in by_ids]
    anchor = requirement.anchor if requirement else by_ids[0].get(rid, {}).get("anchor", "")
    return {"id": rid, "level": requirement.level if requirement else "", "anchor": anchor,
            "url": spec_url(anchor) if anchor else "", "summary": requirement.summary if requirement else "",
            "cells": cells, "differs": len(set(cells)) > 1}


def side(ruling, report: dict) -> Side:
    """The side one implementation took on one ruling, from the cases of its report that apply it."""
    applying = [c for c in report["cases"] if ruling.id in c.get("rulings", ()) and c["status"] != Status.SKIP]
    for case in applying:
        own = [f for f in case.get("failures", ()) if f["requirement"] in case["requirements"]]
        if own:
            return Side(FAILS, f"{case['id']}: {own[0]['requirement']}: {own[0]['message']}")
    passed = [c["id"] for c in applying if c["status"] == Status.PASS]
    if passed:
        return Side(FOLLOWS if ruling.applies == "strict" else ACCEPTED,
                    f"{plural(len(passed), 'case')} applying it passed: {', '.join(passed[:3])}"
                    + (", ..." if len(passed) > 3 else ""))
    if not applying:
        return Side(NOT_OBSERVED, "no case applying it ran")
    return Side(NOT_OBSERVED, "the cases applying it errored, or failed only on other requirements: "
                + ", ".join(c["id"] for c in applying[:3]))


def _ruling_row(ruling, columns: list[Column]) -> dict:
    sides = [side(ruling, c.report) for c in columns]
    return {"id": ruling.id, "applies": ruling.applies, "question": ruling.question, "ruling": ruling.ruling,
            "anchors": [{"anchor": a, "url": spec_url(a)} for a in ruling.anchors],
            "cells": sides, "differs": len({s.side for s in sides}) > 1}


def _who(column: Column) -> dict:
    impl, report = column.report.get("implementation", {}), column.report
    return {"name": column.name, "role": column.role, "binding": report["binding"], "target": column.target,
            "implementation": implementation_name(impl),
            "verdict": column.outcome, "verdict_details": report.get("verdict_details", []),
            "expect": column.expect, "as_expected": column.as_expected}


def to_json(matrix: Matrix) -> dict:
    return {
        "title": matrix.title,
        "implementations": [_who(c) for c in matrix.columns],
        "requirements": {role: [{"id": row["id"], "level": row["level"], "anchor": row["anchor"],
                                 "status": dict(zip([c.name for c in matrix.of(role)], row["cells"]))}
                                for row in rows] for role, rows in matrix.requirements.items()},
        "rulings": {role: [{"id": row["id"], "applies": row["applies"],
                            "sides": {c.name: {"side": s.side, "evidence": s.evidence}
                                      for c, s in zip(matrix.of(role), row["cells"])}}
                           for row in rows] for role, rows in matrix.rulings.items()},
        "reports": {c.name: c.report for c in matrix.columns},
    }


def to_markdown(matrix: Matrix) -> str:
    out = [f"## {matrix.title}", "", "| implementation | role | binding | verdict | expected |", "|---|---|---|---|---|"]
    for c in matrix.columns:
        mark = "" if c.expect is None else (" ✅" if c.as_expected else " ❌")
        out.append(f"| {cell(c.name)} | {c.role} | {c.report['binding']} | {c.outcome} | "
                   f"{c.expect or ''}{mark} |")
    for role in matrix.roles():
        names = [cell(c.name) for c in matrix.of(role)]
        out += ["", f"### {role}: requirements", "", "| requirement | level | " + " | ".join(names) + " |",
                "|---|---|" + "---|" * len(names)]
        out += [f"| {'**' + row['id'] + '**' if row['differs'] else row['id']} | {row['level']} | "
                + " | ".join(row["cells"]) + " |" for row in matrix.requirements[role]]
        out += ["", f"### {role}: rulings", "", "| ruling | applies | " + " | ".join(names) + " |",
                "|---|---|" + "---|" * len(names)]
        out += [f"| {row['id']} | {row['applies']} | " + " | ".join(s.side for s in row["cells"]) + " |"
                for row in matrix.rulings[role]]
    out += ["", "Rulings: *follows* is the one behaviour a strict ruling accepts; *accepted* is one of the "
            "behaviours a ruling accepts, which one not observed; *fails* is a failure in a case applying the "
            "ruling (the rejected side, or another fault in that case); *not observed* is no judgement either way. Bold requirements differ between implementations."]
    return "\n".join(out) + "\n"


def to_html(matrix: Matrix) -> str:
    first = matrix.columns[0].report
    return environment().get_template("matrix.html.j2").render(
        title=matrix.title, suite_version=first["suite"]["version"], spec_revision=first["suite"]["spec_revision"],
        columns=[_who(c) for c in matrix.columns], roles=matrix.roles(), names=lambda role: [c.name for c in
                                                                                          matrix.of(role)],
        requirements=matrix.requirements, rulings=matrix.rulings, side_text=SIDE_TEXT)
