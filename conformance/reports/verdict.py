"""From case results to a status per requirement and a verdict.

A requirement fails when any case fails it, errors when a case that
exercises it errored, passes when it was checked and never failed, is
skipped when every case citing it was skipped, and is not tested otherwise.

The verdict says no more than was checked:
- not conformant: a MUST or MUST NOT failed or errored (a baselined failure
  included: it is known, not fixed), or a case errored;
- incomplete: nothing failed, but a testable MUST or MUST NOT that applies was
  never exercised;
- conformant: every testable MUST and MUST NOT was exercised and held, except
  those the verdict line names: the ones that need another binding, an
  optional feature or manifest, and the ones about a behaviour the
  implementation never showed;
- no verdict: a partial run (a -k filter, a replayed vector), which says
  nothing about conformance.
SHOULD failures are warnings. A baseline turns a listed failure into xfail
(and lets the exit code be 0), and reports a listed entry that now passes as
stale.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance import __version__
from conformance.catalog import Catalog, Requirement
from conformance.engine.results import ERROR, FAIL, NOT_TESTED, PASS, SKIP, XFAIL, CaseResult, Finding

CONFORMANT, NOT_CONFORMANT, INCOMPLETE, NO_VERDICT = "conformant", "not conformant", "incomplete", "no verdict"
_PRECEDENCE = (FAIL, ERROR, XFAIL, PASS, SKIP)


@dataclass
class RequirementResult:
    requirement: Requirement
    status: str
    cases: list[str] = field(default_factory=list)
    failures: list[tuple[str, Finding]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    needs: list[str] = field(default_factory=list)  # skipped: what would let its cases run

    @property
    def id(self) -> str:
        return self.requirement.id

    @property
    def why_unexercised(self) -> str | None:
        """For a blocking requirement nothing judged: why, when that does not make the run incomplete."""
        if self.status == SKIP:
            return "needs " + " or ".join(self.needs) if self.needs else "does not apply"
        if self.status == NOT_TESTED and self.requirement.exercised_when:
            return f"judged only when {self.requirement.exercised_when}, which it never did"
        return None


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
    filtered: str | None = None   # a partial run (a -k filter, one replayed vector): which part

    def _blocking(self, *statuses: str) -> list[RequirementResult]:
        return [r for r in self.requirements if r.requirement.blocking and r.status in statuses]

    @property
    def blocking_failures(self) -> list[RequirementResult]:
        return self._blocking(FAIL, ERROR)

    @property
    def known_failures(self) -> list[RequirementResult]:
        return self._blocking(XFAIL)

    @property
    def warnings(self) -> list[RequirementResult]:
        return [r for r in self.requirements if not r.requirement.blocking and r.status in (FAIL, ERROR)]

    @property
    def errored_cases(self) -> list[CaseResult]:
        return [c for c in self.cases if c.error]

    @property
    def unexercised(self) -> list[RequirementResult]:
        """Testable MUSTs and MUST NOTs that apply and were never judged, with no reason the verdict accepts."""
        return [r for r in self._blocking(NOT_TESTED, SKIP) if r.requirement.testable and r.why_unexercised is None]

    @property
    def named(self) -> list[RequirementResult]:
        """MUSTs and MUST NOTs not exercised for a reason the verdict line states."""
        return [r for r in self._blocking(NOT_TESTED, SKIP)
                if r.requirement.testable and r.why_unexercised not in (None, "does not apply")]

    @property
    def verdict(self) -> str:
        if self.filtered is not None:
            return NO_VERDICT
        if self.blocking_failures or self.known_failures or self.errored_cases:
            return NOT_CONFORMANT
        return INCOMPLETE if self.unexercised else CONFORMANT

    def details(self) -> list[str]:
        """What qualifies the verdict: what failed, what was not exercised and why."""
        verdict = self.verdict
        if verdict == NO_VERDICT:
            return [f"a partial run ({self.filtered}) certifies nothing"]
        if verdict == NOT_CONFORMANT:
            return [text for count, text in (
                (len(self.blocking_failures), f"{_n(self.blocking_failures, 'MUST')} failing"),
                (len(self.known_failures), f"{_n(self.known_failures, 'known failure')}, baselined"),
                (len(self.errored_cases), f"{_n(self.errored_cases, 'case')} errored")) if count]
        if verdict == INCOMPLETE:
            return ["never exercised: " + ", ".join(r.id for r in self.unexercised)]
        return [f"over {self.binding}"] + [f"not exercised: {r.id} ({r.why_unexercised})" for r in self.named]

    def verdict_line(self) -> str:
        details = self.details()
        return self.verdict + (f" ({'; '.join(details)})" if details else "")

    @property
    def exit_code(self) -> int:
        """0 when conformant, or when only baselined failures stand in the way (regression gating)."""
        if self.verdict == CONFORMANT:
            return 0
        if self.verdict == NO_VERDICT:
            return 1 if any(c.status in (FAIL, ERROR) for c in self.cases) else 0
        gated = self.verdict == NOT_CONFORMANT and not self.blocking_failures and not self.errored_cases \
            and not self.unexercised
        return 0 if gated else 1

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
          seed: int | None = None, filtered: str | None = None) -> Report:
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
            elif status == SKIP and case.needs and case.needs not in result.needs:
                result.needs.append(case.needs)
            statuses.append(status)
        result.status = next((s for s in _PRECEDENCE if s in statuses), NOT_TESTED)
        if result.status == SKIP and any(requirement.id in c.requirements and not c.skipped for c in cases):
            result.status = NOT_TESTED  # a case that applies cited it, and found nothing to judge
        results.append(result)
    stale = [_describe(e) for i, e in enumerate(expected) if i not in used
             and any(r.id == e.get("requirement") for r in results)]
    return Report(role, binding, implementation, catalog.spec_revision, results, cases, seconds, seed, stale,
                  filtered=filtered)


def _n(items: list, noun: str) -> str:
    return f"{len(items)} {noun}{'s' if len(items) != 1 else ''}"


def _listed(expected: list[dict], requirement: str, case: str) -> int | None:
    for i, entry in enumerate(expected):
        if entry.get("requirement") == requirement and entry.get("case", case) == case:
            return i
    return None


def _describe(entry: dict) -> str:
    return entry["requirement"] + (f" in {entry['case']}" if entry.get("case") else "")
