"""The coverage matrix: for each requirement, the vectors that assert on it
and whether an invariant check reports on it. A testable MUST / MUST NOT /
SHOULD with no vector is a gap."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from conformance.data import vectors as vectors_mod
from conformance.data.catalog import Catalog, Requirement
from conformance.engine import kernel_checks, provider_checks

CHECKED = kernel_checks.COVERS | provider_checks.COVERS


@dataclass(frozen=True)
class Row:
    requirement: Requirement
    vectors: tuple[str, ...]
    checked: bool


def build(catalog: Catalog, root: Path | None = None) -> list[Row]:
    cited: dict[str, list[str]] = {}
    for role in ("kernel", "provider"):
        for vector in vectors_mod.load_dir(role, catalog, root):
            for rid in vector.requirements:
                cited.setdefault(rid, []).append(vector.id)
    return [Row(r, tuple(cited.get(r.id, ())), r.id in CHECKED) for r in catalog.requirements.values()]


def gaps(rows: list[Row], roles: tuple[str, ...]) -> list[str]:
    return [f"{row.requirement.id} ({row.requirement.level}, {row.requirement.binds}) has no vector"
            for row in rows if row.requirement.binds in roles and row.requirement.testable
            and row.requirement.normative and not row.requirement.retired and not row.vectors]


def render(rows: list[Row]) -> str:
    lines = [f"{'requirement':<32} {'level':<9} {'binds':<19} {'vectors':>7}  {'check':<5}  status"]
    for row in rows:
        r = row.requirement
        if not r.testable:
            status = "not testable: " + r.reason
        elif not r.normative:
            status = "MAY (no obligation)"
        else:
            status = "ok" if row.vectors else "GAP"
        lines.append(f"{r.id:<32} {r.level:<9} {r.binds:<19} {len(row.vectors):>7}  {'yes' if row.checked else '-':<5}  {status}")
    normative = [row for row in rows if row.requirement.normative and row.requirement.testable]
    covered = sum(1 for row in normative if row.vectors)
    lines.append(f"\n{covered}/{len(normative)} testable MUST/MUST NOT/SHOULD requirements have vectors; "
                 f"{sum(1 for row in rows if row.checked)} are also checked by invariants")
    return "\n".join(lines)
