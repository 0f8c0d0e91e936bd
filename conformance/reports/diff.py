"""`ctxconf diff A.json B.json`: what changed between two JSON reports.

Two runs of one implementation (did a fix hold, did anything regress), or two
implementations of one role (where do they part). It compares what the
reports say, never re-runs anything: the verdict, each requirement's and each
case's status, and the failures, matched by case, requirement, place and
message. Implementation names may differ; roles may not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from conformance.reports.markdown import cell
from conformance.reports.verdict import Exit, implementation_name, plural
from conformance.data.schemas import InputError, check, read_json

MISSING = "absent"  # a requirement or case one report has and the other does not


def load(path: Path) -> dict:
    """A JSON report, checked against report.json; InputError names the file and the field."""
    data = read_json(path, "a JSON report")
    check("report.json", data, f"{path} (not a ctxconf JSON report)")
    return data


@dataclass
class Change:
    id: str
    before: str
    after: str


@dataclass
class Failure:
    case: str
    requirement: str
    where: str
    message: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        return self.case, self.requirement, self.where, self.message


@dataclass
class Diff:
    a: dict
    b: dict
    a_name: str
    b_name: str
    requirements: list[Change] = field(default_factory=list)
    cases: list[Change] = field(default_factory=list)
    new: list[Failure] = field(default_factory=list)
    gone: list[Failure] = field(default_factory=list)
    errors: list[Change] = field(default_factory=list)  # a case's harness error appeared, went or changed

    @property
    def verdict_changed(self) -> bool:
        return self.a["verdict"] != self.b["verdict"]

    @property
    def identical(self) -> bool:
        return not (self.verdict_changed or self.requirements or self.cases or self.new or self.gone or self.errors)

    @property
    def exit_code(self) -> Exit:
        return Exit.OK if self.identical else Exit.FAILED


def compare(a: dict, b: dict, a_name: str = "A", b_name: str = "B") -> Diff:
    if a["role"] != b["role"]:
        raise InputError(b_name, f"is a {b['role']} report and {a_name} a {a['role']} report; "
                         "only reports of one role compare", "role")
    diff = Diff(a, b, a_name, b_name)
    diff.requirements = _changes({r["id"]: r["status"] for r in a["requirements"]},
                                 {r["id"]: r["status"] for r in b["requirements"]})
    diff.cases = _changes({c["id"]: c["status"] for c in a["cases"]}, {c["id"]: c["status"] for c in b["cases"]})
    diff.errors = _changes(_errors(a), _errors(b), missing="(no error)")
    before, after = _failures(a), _failures(b)
    diff.new = [f for key, f in after.items() if key not in before]
    diff.gone = [f for key, f in before.items() if key not in after]
    return diff


def _changes(before: dict[str, str], after: dict[str, str], missing: str = MISSING) -> list[Change]:
    ids = list(before) + [i for i in after if i not in before]
    return [Change(i, before.get(i, missing), after.get(i, missing)) for i in ids
            if before.get(i, missing) != after.get(i, missing)]


def _errors(report: dict) -> dict[str, str]:
    """Each errored case's first error line: what a reader compares, without the traceback below it."""
    return {c["id"]: (c["error"].splitlines() or [""])[0] for c in report["cases"] if c.get("error")}


def _failures(report: dict) -> dict[tuple, Failure]:
    found = [Failure(c["id"], f.get("requirement", "?"), f.get("where", ""), f.get("message", ""))
             for c in report["cases"] for f in c.get("failures", ())]
    return {f.key: f for f in found}


def _who(report: dict) -> str:
    impl = report.get("implementation", {})
    name = implementation_name(impl)
    scope = f", partial run: {report['filtered']}" if report.get("filtered") else ""
    return f"{name} over {report['binding']}: {report['verdict']}{scope}"


def _summary(diff: Diff) -> str:
    if diff.identical:
        return "no difference in verdict, statuses or failures"
    parts = [("verdict changed" if diff.verdict_changed else ""),
             plural(len(diff.requirements), "requirement") + " changed status" if diff.requirements else "",
             plural(len(diff.cases), "case") + " changed status" if diff.cases else "",
             plural(len(diff.new), "new failure") if diff.new else "",
             plural(len(diff.gone), "failure") + " gone" if diff.gone else "",
             plural(len(diff.errors), "case error") + " changed" if diff.errors else ""]
    return "; ".join(p for p in parts if p)


def to_text(diff: Diff) -> str:
    out = [f"A: {diff.a_name}", f"   {_who(diff.a)}", f"B: {diff.b_name}", f"   {_who(diff.b)}", ""]
    if diff.verdict_changed:
        out.append(f"verdict: {diff.a['verdict']} -> {diff.b['verdict']}")
    for title, changes in (("requirements", diff.requirements), ("cases", diff.cases)):
        if changes:
            out += [f"{title} whose status differs (A -> B):"]
            out += [f"  {c.id:<48} {c.before} -> {c.after}" for c in changes]
    for title, failures in (("new failures (in B, not in A)", diff.new), ("gone failures (in A, not in B)",
                                                                        diff.gone)):
        if failures:
            out.append(f"{title}:")
            for f in failures:
                where = f" [{f.where}]" if f.where else ""
                out.append(f"  {f.requirement}  {f.case}{where}: {f.message}")
    if diff.errors:
        out.append("case errors (A -> B):")
        out += [f"  {c.id}: {c.before} -> {c.after}" for c in diff.errors]
    out.append(("" if out[-1] == "" else "\n") + _summary(diff))
    return "\n".join(out) + "\n"


def to_markdown(diff: Diff) -> str:
    icon = "✅" if diff.identical else "⚠️"
    out = [f"## {icon} ctxconf diff: {_summary(diff)}", "", "| | report | implementation |", "|---|---|---|",
           f"| A | `{cell(diff.a_name)}` | {cell(_who(diff.a))} |",
           f"| B | `{cell(diff.b_name)}` | {cell(_who(diff.b))} |"]
    changes = [("requirement", c) for c in diff.requirements] + [("case", c) for c in diff.cases]
    if changes:
        out += ["", "| | id | A | B |", "|---|---|---|---|"]
        out += [f"| {kind} | `{c.id}` | {c.before} | {c.after} |" for kind, c in changes]
    failures = [("new", f) for f in diff.new] + [("gone", f) for f in diff.gone]
    if failures:
        out += ["", "| failure | requirement | case | message |", "|---|---|---|---|"]
        out += [f"| {kind} | {f.requirement} | `{f.case}`{' [' + cell(f.where) + ']' if f.where else ''} | "
                f"{cell(f.message)[:600]} |" for kind, f in failures]
    if diff.errors:
        out += ["", "| errored case | A | B |", "|---|---|---|"]
        out += [f"| `{c.id}` | {cell(c.before)} | {cell(c.after)} |" for c in diff.errors]
    return "\n".join(out) + "\n"
