"""The one expectation language of the vectors: what a vector writes under
each requirement ID, for either role.

An `observation` is a plain dict of what was seen (the final chain, the
calls, the diagnostics, a provider's reply...). Each assertion key names a
function comparing one part of it; each role registers its own keys in a
`Language`, and `one_of` (any accepted behaviour holds) belongs to both.
An assertion about something the observation lacks is a failure, never a
pass. One that the observation cannot judge at all (a reply-only assertion
on a call that failed) raises NotEvaluable, and a requirement none of whose
assertions could be judged gives no finding.
"""

from __future__ import annotations

from typing import Any, Callable

from conformance.engine import prompt_text
from conformance.engine.matching import match
from conformance.engine.results import Finding

Assertion = Callable[[Any, dict, Any], list]  # (what the vector wants, the observation, the role's context)


class NotEvaluable(Exception):
    """The observation cannot judge this assertion either way."""


class Language:
    def __init__(self, assertions: dict[str, Assertion]):
        self.assertions = {**assertions, "one_of": self._one_of}

    def check(self, expect: dict, seen: dict, where: str, context: Any = None) -> list[Finding]:
        """One finding per requirement the expectations name, unless none of its assertions could be judged."""
        findings = []
        for requirement, assertions in expect.items():
            try:
                problems = self.evaluate(assertions, seen, context)
            except NotEvaluable:
                continue
            findings.append(Finding(requirement, not problems, "; ".join(problems), where))
        return findings

    def evaluate(self, assertions: dict, seen: dict, context: Any = None) -> list[str]:
        """The problems of every assertion that can be judged; NotEvaluable when none can."""
        problems, judged = [], False
        for key, want in assertions.items():
            try:
                problems += self.assertions[key](want, seen, context)
                judged = True
            except NotEvaluable:
                pass
        if not judged and assertions:
            raise NotEvaluable
        return problems

    def _one_of(self, alternatives: list[dict], seen: dict, context: Any) -> list[str]:
        outcomes, unjudged = [], False
        for alternative in alternatives:
            try:
                outcomes.append(self.evaluate(alternative, seen, context))
            except NotEvaluable:
                unjudged = True
        if any(not problems for problems in outcomes):
            return []
        if unjudged:
            raise NotEvaluable  # an alternative the observation cannot judge may be the one that holds
        return ["none of the accepted behaviours holds: " + " | ".join(
            f"({i + 1}) " + "; ".join(p) for i, p in enumerate(outcomes))]


def _kernel(assertion: Callable[[Any, dict], list]) -> Assertion:
    """A kernel assertion needs no context."""
    return lambda want, seen, context: assertion(want, seen)


def _needs(seen: dict, key: str) -> list[str]:
    return [] if key in seen else [f"nothing observed for {key}"]


def _chain(want, seen):
    return _needs(seen, "chain") or [f"chain: {p}" for p in match(want, seen["chain"])]


def _calls(want, seen):
    """The order providers were called in; calling one again at once (a retry) counts once, as
    K-ERR-INVALID-REQUEST-NO-RETRY and K-PRIOR-SECTIONS judge retries on their own."""
    got = [name for i, name in enumerate(seen.get("calls") or []) if i == 0 or seen["calls"][i - 1] != name]
    return [] if got == want else [f"Contribute calls: expected {want}, got {got}"]


def _contribute_calls(want, seen):
    counts = seen.get("contribute_calls", {})
    return [f"Contribute calls to {name}: expected {n}, got {counts.get(name, 0)}"
            for name, n in want.items() if counts.get(name, 0) != n]


def _sequential(want, seen):
    return [] if seen.get("overlapped") is False else ["Contribute calls overlapped"]


def _requests(want, seen):
    problems = []
    for provider, matcher in want.items():
        request = seen.get("requests", {}).get(provider)
        if request is None:
            problems.append(f"{provider} was never sent a ContextRequest")
        else:
            problems += [f"request to {provider}: {p}" for p in match(matcher, request)]
    return problems


def _diagnostics(want, seen):
    pool = list(seen.get("diagnostics", []))
    problems = []
    for matcher in want:
        for i, diagnostic in enumerate(pool):
            if _diagnostic_matches(matcher, diagnostic):
                del pool[i]
                break
        else:
            problems.append(f"no diagnostic matching {matcher}; diagnostics were "
                            f"{[(d.get('provider'), d.get('category')) for d in seen.get('diagnostics', [])]}")
    return problems


def _diagnostic_matches(matcher: dict, diagnostic: dict) -> bool:
    for key, want in matcher.items():
        if key == "message_contains":
            if want not in str(diagnostic.get("message", "")):
                return False
        elif key == "provider_in":
            if diagnostic.get("provider") not in want:
                return False
        elif diagnostic.get(key) != want:
            return False
    return True


def _no_diagnostics_for(want, seen):
    return [f"unexpected diagnostic for {d.get('provider')}: {d.get('category')}"
            for d in seen.get("diagnostics", []) if d.get("provider") in want]


def _turn_failed(want, seen):
    got = seen.get("turn_failed")
    return [] if got is want else [f"turn_failed: expected {want}, got {got}"]


def _turn_error(want, seen):
    text = strings_of(seen.get("turn_error"))
    return [] if want["contains"] in text else [f"the turn error does not mention {want['contains']!r}: {text[:200]!r}"]


def strings_of(value) -> str:
    """Every string in a JSON value, one per line: what a reader of an error object sees, unescaped."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        value = list(value.values())
    return "\n".join(strings_of(v) for v in value) if isinstance(value, list) else ""


def _history(want, seen):
    return _needs(seen, "history") or [f"history: {p}" for p in match(want, seen["history"])]


def _prompt(want, seen):
    """Texts found verbatim or in an escaped form (R-PROMPT-RENDERING)."""
    prompt = seen.get("prompt")
    if prompt is None:
        return ["nothing observed for prompt"]
    problems = [f"the prompt lacks {s!r}" for s in want.get("contains", []) if not prompt_text.find(prompt, s)]
    problems += [f"the prompt holds {s!r}" for s in want.get("excludes", []) if prompt_text.find(prompt, s)]
    position = 0
    for s in want.get("in_order", []):
        found = prompt_text.find(prompt, s, position)
        if found is None:
            problems.append(f"the prompt lacks {s!r} after position {position}")
            break
        position = found[1]
    return problems


def _warnings(want, seen):
    codes = seen.get("warnings")
    if codes is None:
        return ["nothing observed for warnings"]
    return [f"no load warning {c!r} (got {sorted(codes)})" for c in want if c not in codes]


def _no_warnings(want, seen):
    codes = seen.get("warnings")
    if codes is None:
        return ["nothing observed for warnings"]
    return [f"unexpected load warning {c!r}" for c in want if c in codes]


def _scalar(key):
    def compare(want, seen):
        if key not in seen:
            return [f"nothing observed for {key}"]
        return [] if seen[key] == want and type(seen[key]) is type(want) else [f"{key}: expected {want!r}, got {seen[key]!r}"]
    return compare


KERNEL = Language({key: _kernel(assertion) for key, assertion in {
    "chain": _chain, "calls": _calls, "contribute_calls": _contribute_calls, "sequential": _sequential,
    "requests": _requests,
    "diagnostics": _diagnostics, "no_diagnostics_for": _no_diagnostics_for, "turn_failed": _turn_failed,
    "turn_error": _turn_error, "history": _history, "prompt": _prompt, "warnings": _warnings,
    "no_warnings": _no_warnings, "count": _scalar("count"), "exact": _scalar("exact"),
    "exact_truthful": _scalar("exact_truthful"),
}.items()})
