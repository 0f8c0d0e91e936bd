"""What checking produces: findings, per-case results and their statuses.

A finding is one observation about one requirement, passed or failed. A case
result gathers a case's findings, or the harness error that cut it short.
Errors of the implementation are values here, never exceptions that escape.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache


class Spelled(str, Enum):
    """An enum whose value is how every report spells it, in JSON and in text alike."""

    def __str__(self) -> str:
        return self.value


class Status(Spelled):
    """The status of a case, or of a requirement over a run."""
    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    SKIP = "skip"
    XFAIL = "xfail"
    NOT_TESTED = "not-tested"


PASS, FAIL, ERROR, SKIP, XFAIL, NOT_TESTED = (Status.PASS, Status.FAIL, Status.ERROR, Status.SKIP, Status.XFAIL,
                                              Status.NOT_TESTED)


class UnknownRequirement(ValueError):
    """A check cited a requirement ID the catalog does not have: a defect of the suite, never a pass."""


@lru_cache(maxsize=1)
def _catalog_ids() -> frozenset[str]:
    from conformance.data import catalog  # the catalog is data; loaded once, on the first finding
    return frozenset(catalog.load().requirements)


def suite_defect(what: str, error: str | None = None) -> str:
    """A case error for an exception in the suite's own code (after the implementation's `error`, if any):
    the run still ends with a report, the verdict is never conformant, and the traceback is there to report."""
    return (f"{error}\n" if error else "") + f"ctxconf failed while {what} (a defect of the suite, not of the " \
        f"implementation; please report it with this traceback):\n{traceback.format_exc(limit=12)}"


@dataclass(frozen=True)
class Finding:
    """One observation about one requirement of the catalog: an ID it does not have is refused on the spot."""
    requirement: str
    passed: bool
    message: str = ""
    where: str = ""

    def __post_init__(self) -> None:
        if self.requirement not in _catalog_ids():
            raise UnknownRequirement(f"a check cites {self.requirement!r}, which is not in the catalog")


@dataclass(frozen=True)
class HarnessProblem:
    """What an implementation did that breaks the harness protocol rather than the spec: its case errors."""
    message: str
    where: str = ""


def split_harness(found: list) -> tuple[list[Finding], str | None]:
    """The findings, and the harness problems among them (failing nothing in the catalog) as an error text."""
    problems = [f"{p.where}: {p.message}" if p.where else p.message for p in found if isinstance(p, HarnessProblem)]
    return [f for f in found if isinstance(f, Finding)], "; ".join(problems) or None


@dataclass
class CaseResult:
    id: str
    title: str
    requirements: tuple[str, ...] = ()     # what the case cites
    rulings: tuple[str, ...] = ()
    findings: list[Finding] = field(default_factory=list)
    error: str | None = None               # the implementation crashed, hung or broke the protocol
    skipped: str | None = None             # why the case did not run
    needs: str | None = None               # what would let a skipped case run; None: it does not apply
    seconds: float = 0.0
    source: str = ""                       # vector file, or how the case was generated
    counterexample: str | None = None      # a generated case's shrunk failure, written as a vector file

    @property
    def replayable(self) -> str | None:
        """The vector file that reruns this case on its own, if there is one."""
        if self.counterexample:
            return self.counterexample
        return self.source if self.source.endswith((".yaml", ".yml")) else None

    @property
    def status(self) -> Status:
        if self.skipped:
            return SKIP
        if any(not f.passed for f in self.findings):
            return FAIL
        if self.error:
            return ERROR
        return PASS

    def statuses(self) -> dict[str, Status]:
        """This case's verdict on each requirement it says anything of (one pass over its findings: a report asks
        it of every case for every requirement of the catalog)."""
        if self.skipped:
            return dict.fromkeys(self.requirements, SKIP)
        found: dict[str, bool] = {}  # requirement: every finding of it passed
        for finding in self.findings:
            found[finding.requirement] = found.get(finding.requirement, True) and finding.passed
        verdicts = {r: PASS if passed else FAIL for r, passed in found.items()}
        if self.error:
            verdicts |= {r: ERROR for r in [*found, *self.requirements] if found.get(r, True)}
        return verdicts

    def failures(self, requirement: str | None = None) -> list[Finding]:
        return [f for f in self.findings if not f.passed and requirement in (None, f.requirement)]
