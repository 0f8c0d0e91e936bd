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

import shlex
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path

from conformance import __version__
from conformance.data.catalog import Catalog, Requirement
from conformance.engine.results import ERROR, FAIL, NOT_TESTED, PASS, SKIP, XFAIL, CaseResult, Finding, Spelled, Status



class Exit(IntEnum):
    """The exit codes of every ctxconf command."""
    OK = 0          # conformant, identical, as expected, or nothing found by a partial run
    FAILED = 1      # what the command judges did not hold
    USAGE = 2       # bad input: an option, a file or a field, named in the message


class Verdict(Spelled):
    """What a run certifies."""
    CONFORMANT = "conformant"
    NOT_CONFORMANT = "not conformant"
    INCOMPLETE = "incomplete"
    NO_VERDICT = "no verdict"


CONFORMANT, NOT_CONFORMANT, INCOMPLETE, NO_VERDICT = Verdict
NOT_STARTED = "could not start the implementation:"  # how a case that no implementation served begins (Connection)
_PRECEDENCE = (FAIL, ERROR, XFAIL, PASS, SKIP)


@dataclass
class RequirementResult:
    requirement: Requirement
    status: Status
    cases: list[str] = field(default_factory=list)
    failures: list[tuple[str, Finding]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    needs: list[str] = field(default_factory=list)  # skipped: what would let its cases run
    skipped: list[str] = field(default_factory=list)  # the cases among `cases` that did not run

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
    filtered: str | None = None   # a partial run (-k, --no-properties, a replayed vector): its scope
    xfailed: dict[str, list[str]] = field(default_factory=dict)  # case id: the baseline reasons for its failures
    unattributed: list[tuple[str, Finding]] = field(default_factory=list)  # failures citing no requirement of the role
    rerun_options: list[str] | None = None  # the target options, for a command that reruns one case

    def status_of(self, case: CaseResult) -> str:
        """A case's status once the baseline is applied: every failure listed makes it xfail (an error stays)."""
        if case.id in self.xfailed and case.status == FAIL:
            return ERROR if case.error else XFAIL
        return case.status

    def rerun(self, case: CaseResult) -> str | None:
        """A command that reruns exactly this case against the same target, when it has a file to replay."""
        if self.rerun_options is None or not case.replayable:
            return None
        path = Path(case.replayable)
        if path.is_relative_to(Path.cwd()):
            path = path.relative_to(Path.cwd())
        return shlex.join(["ctxconf", "replay", str(path), *self.rerun_options])

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
        """The SHOULD and SHOULD NOT requirements that failed: a MAY is a freedom, never a warning."""
        return [r for r in self.requirements if r.requirement.level in ("SHOULD", "SHOULD NOT")
                and r.status in (FAIL, ERROR)]

    @property
    def failed_cases(self) -> list[CaseResult]:
        return [c for c in self.cases if self.status_of(c) == FAIL]

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
    def verdict(self) -> Verdict:
        if self.filtered is not None:
            return NO_VERDICT
        if self.blocking_failures or self.known_failures or self.errored_cases or self.unattributed:
            return NOT_CONFORMANT
        return INCOMPLETE if self.unexercised else CONFORMANT

    @property
    def never_started(self) -> str | None:
        """When no case ran because the implementation never started: the cause, from the first case."""
        if not self.cases or not all(NOT_STARTED in (c.error or "").partition("\n")[0] for c in self.cases):
            return None
        cause = " ".join(line.strip() for line in self.cases[0].error.partition(NOT_STARTED)[2].splitlines())
        return cause if len(cause) <= 300 else cause[:297] + "..."

    def details(self) -> list[str]:
        """What qualifies the verdict: what failed, what was not exercised and why."""
        verdict = self.verdict
        if self.never_started is not None:
            return [f"the implementation never started: {self.never_started}"]
        if verdict == NO_VERDICT:
            return [f"partial run ({self.filtered}): certifies nothing"]
        if verdict == NOT_CONFORMANT:
            return [text for count, text in (
                (len(self.blocking_failures), f"{plural(len(self.blocking_failures), 'MUST')} failing"
                 + (" or errored" if any(r.status == ERROR for r in self.blocking_failures) else "")),
                (len(self.known_failures), f"{plural(len(self.known_failures), 'known failure')}, baselined"),
                (len(self.errored_cases), f"{plural(len(self.errored_cases), 'case')} errored"),
                (len(self.unattributed), f"{plural(len(self.unattributed), 'failure')} citing no requirement of the role "
                 "(a defect of the suite)")) if count]
        if verdict == INCOMPLETE:
            return ["never exercised: " + ", ".join(r.id for r in self.unexercised)]
        return [f"over {self.binding}"] + [f"not exercised: {r.id} ({r.why_unexercised})" for r in self.named]

    def verdict_line(self) -> str:
        details = self.details()
        return self.verdict + (f" ({'; '.join(details)})" if details else "")

    @property
    def exit_code(self) -> Exit:
        """OK when conformant, or when only baselined failures stand in the way (regression gating)."""
        if self.verdict == CONFORMANT:
            return Exit.OK
        broken = self.blocking_failures or self.errored_cases or self.unattributed
        if self.verdict == NO_VERDICT:
            return Exit.FAILED if broken else Exit.OK  # a partial run fails on what it found, not on what it left out
        gated = self.verdict == NOT_CONFORMANT and not broken and not self.unexercised
        return Exit.OK if gated else Exit.FAILED

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.requirements:
            out[r.status] = out.get(r.status, 0) + 1
        return out

    def case_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.cases:
            out[self.status_of(c)] = out.get(self.status_of(c), 0) + 1
        return out


def build(catalog: Catalog, roles: tuple[str, ...], role: str, cases: list[CaseResult], binding: str,
          implementation: dict, seconds: float, baseline: list[dict] | None = None,
          seed: int | None = None, filtered: str | None = None, rerun_options: list[str] | None = None) -> Report:
    expected = baseline or []
    results = []
    used: set[int] = set()
    reasons: dict[str, list[str]] = {}  # case id: why its baselined failures are expected
    verdicts = [case.statuses() for case in cases]
    for requirement in catalog.for_roles(roles):
        result = RequirementResult(requirement, NOT_TESTED)
        statuses = []
        for case, of_case in zip(cases, verdicts):
            status = of_case.get(requirement.id)
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
                        reasons.setdefault(case.id, []).append(f"{requirement.id}: "
                                                               f"{expected[listed].get('reason') or 'baselined'}")
                status = FAIL if any(c == case.id for c, _ in result.failures) else XFAIL
            elif status == ERROR:
                result.errors.append(case.id)
            elif status == SKIP:
                result.skipped.append(case.id)
                if case.needs and case.needs not in result.needs:
                    result.needs.append(case.needs)
            statuses.append(status)
        result.status = next((s for s in _PRECEDENCE if s in statuses), NOT_TESTED)
        if result.status == SKIP and any(requirement.id in c.requirements and not c.skipped for c in cases):
            result.status = NOT_TESTED  # a case that applies cited it, and found nothing to judge
        results.append(result)
    stale = [_describe(e) for i, e in enumerate(expected) if i not in used
             and any(r.id == e.get("requirement") for r in results)]
    known = {r.id for r in results}
    unattributed = [(c.id, f) for c in cases for f in c.failures() if f.requirement not in known]
    failing_unlisted = {c for r in results for c, _ in r.failures} | {c for c, _ in unattributed}
    xfailed = {case: why for case, why in reasons.items() if case not in failing_unlisted}
    return Report(role, binding, implementation, catalog.spec_revision, results, cases, seconds, seed, stale,
                  filtered=filtered, xfailed=xfailed, unattributed=unattributed, rerun_options=rerun_options)


def implementation_name(implementation: dict) -> str:
    """How every output names an implementation: its name and version, as its hello gave them."""
    return f"{implementation.get('name', '?')} {implementation.get('version', '')}".strip()


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def _listed(expected: list[dict], requirement: str, case: str) -> int | None:
    for i, entry in enumerate(expected):
        if entry.get("requirement") == requirement and entry.get("case", case) == case:
            return i
    return None


def _describe(entry: dict) -> str:
    return entry["requirement"] + (f" in {entry['case']}" if entry.get("case") else "")
