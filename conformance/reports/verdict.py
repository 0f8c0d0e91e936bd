"""From case results to a status per requirement and a verdict.

A requirement fails when any case fails it, errors when a case that
exercises it errored, passes when it was checked and never failed. The
verdict is conformant only when no MUST / MUST NOT failed or errored and no
case errored; SHOULD failures are warnings. An expected-failures baseline
turns a listed failure into xfail and reports a listed entry that now passes
as stale.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance import __version__
from conformance.catalog import Catalog, Requirement
from conformance.engine.results import ERROR, FAIL, NOT_TESTED, PASS, SKIP, XFAIL, CaseResult, Finding

CONFORMANT, NOT_CONFORMANT = "conformant", "not conformant"
_PRECEDENCE = (FAIL, ERROR, XFAIL, PASS, SKIP)


@dataclass
class RequirementResult:
    requirement: Requirement
    status: str
    cases: list[str] = field(default_factory=list)
    failures: list[tuple[str, Finding]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.requirement.id


@dataclass
class Report:
    role: str
    binding: str
    implementation: dict
    spec_revision: str
    requirements: list[RequirementResult]
    cases: list[CaseResult]
    seconds: float
    seed: int | None = None
    stale: list[str] = field(default_factory=list)
    suite_version: str = __version__

    @property
    def blocking_failures(self) -> list[RequirementResult]:
        return [r for r in self.requirements if r.requirement.blocking and r.status in (FAIL, ERROR)]

    @property
    def warnings(self) -> list[RequirementResult]:
        return [r for r in self.requirements if not r.requirement.blocking and r.status in (FAIL, ERROR)]

    @property
    def errored_cases(self) -> list[CaseResult]:
        return [c for c in self.cases if c.status == ERROR]

    @property
    def verdict(self) -> str:
        return NOT_CONFORMANT if self.blocking_failures or self.errored_cases else CONFORMANT

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.requirements:
            out[r.status] = out.get(r.status, 0) + 1
        return out

    def case_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.cases:
            out[c.status] = out.get(c.status, 0) + 1
        return out


def build(catalog: Catalog, roles: tuple[str, ...], role: str, cases: list[CaseResult], binding: str,
          implementation: dict, seconds: float, baseline: list[dict] | None = None,
          seed: int | None = None) -> Report:
    expected = baseline or []
    results = []
    used: set[int] = set()
    for requirement in catalog.for_roles(roles):
        result = RequirementResult(requirement, NOT_TESTED)
        statuses = []
        for case in cases:
            status = case.status_for(requirement.id)
            if status is None:
                continue
            result.cases.append(case.id)
            if status == FAIL:
                for finding in case.failures(requirement.id):
                    listed = _listed(expected, requirement.id, case.id)
                    if listed is None:
                        result.failures.append((case.id, finding))
                    else:
                        used.add(listed)
                status = FAIL if any(c == case.id for c, _ in result.failures) else XFAIL
            elif status == ERROR:
                result.errors.append(case.id)
            statuses.append(status)
        result.status = next((s for s in _PRECEDENCE if s in statuses), NOT_TESTED)
        results.append(result)
    stale = [_describe(e) for i, e in enumerate(expected) if i not in used
             and any(r.id == e.get("requirement") for r in results)]
    return Report(role, binding, implementation, catalog.spec_revision, results, cases, seconds, seed, stale)


def _listed(expected: list[dict], requirement: str, case: str) -> int | None:
    for i, entry in enumerate(expected):
        if entry.get("requirement") == requirement and entry.get("case", case) == case:
            return i
    return None


def _describe(entry: dict) -> str:
    return entry["requirement"] + (f" in {entry['case']}" if entry.get("case") else "")
