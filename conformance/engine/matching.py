"""Partial matching of observations against the expectations vectors write.

Fields an expectation gives must be equal; fields it leaves out are not
checked. A field named `NAME_at_most` bounds NAME; `NAME_in` lists the values
NAME may take (where a ruling accepts several readings of a figure). Lists are compared item by item and must have the same length.
`text` on a section or message compares its joined text blocks; `content`
and `role` may use the vector short forms.
"""

from __future__ import annotations

from typing import Any

from conformance.data import shorthand
from conformance.wire import tokens


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 160 else text[:157] + "..."


def match(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Every difference between `expected` and `actual`, as readable lines."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path or 'value'}: expected an object, got {_show(actual)}"]
        problems: list[str] = []
        for key, want in expected.items():
            where = f"{path}.{key}" if path else key
            if key == "text" and isinstance(want, str) and "content" in actual and "text" not in actual:
                got = tokens.text_of(actual["content"])
                if got != want:
                    problems.append(f"{where}: expected {_show(want)}, got {_show(got)}")
            elif key == "content" and isinstance(want, list):
                problems += match(shorthand.blocks(want), actual.get("content"), where)
            elif key == "role" and isinstance(want, str):
                got = actual.get("role")
                if shorthand.ROLES.get(want, want) != got:
                    problems.append(f"{where}: expected {want}, got {_show(got)}")
            elif key.endswith("_at_most"):
                field = key[: -len("_at_most")]
                got = actual.get(field)
                if not isinstance(got, int) or got > want:
                    problems.append(f"{path + '.' if path else ''}{field}: expected at most {want}, got {_show(got)}")
            elif key.endswith("_in") and isinstance(want, list):
                field = key[: -len("_in")]
                got = actual.get(field)
                if got not in want or isinstance(got, bool):
                    problems.append(f"{path + '.' if path else ''}{field}: expected one of {want}, got {_show(got)}")
            elif key not in actual:
                problems.append(f"{where}: missing")
            else:
                problems += match(want, actual[key], where)
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{path or 'value'}: expected a list, got {_show(actual)}"]
        if len(expected) != len(actual):
            return [f"{path or 'list'}: expected {len(expected)} item(s), got {len(actual)}: {_show(_brief(actual))}"]
        problems = []
        for i, (want, got) in enumerate(zip(expected, actual)):
            problems += match(want, got, f"{path}[{i}]")
        return problems
    if expected != actual or type(expected) is not type(actual) and not _numeric_equal(expected, actual):
        return [f"{path or 'value'}: expected {_show(expected)}, got {_show(actual)}"]
    return []


def _numeric_equal(a: Any, b: Any) -> bool:
    return isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
        and not isinstance(b, bool) and a == b


def _brief(items: list) -> list:
    """Sections and messages shown by their identifying fields only."""
    out = []
    for item in items:
        if isinstance(item, dict) and "label" in item:
            out.append({"provider": item.get("provider"), "label": item.get("label")})
        elif isinstance(item, dict) and "role" in item:
            out.append({"role": item.get("role"), "text": tokens.text_of(item.get("content", []))[:40]})
        else:
            out.append(item)
    return out


def in_place(provider: str, prior: list[dict], sections: list[dict]) -> bool:
    """R-PLACEMENT: every other provider's section of the prior chain back untouched and in order, the
    provider's own sections after them. A kernel carrying the chain from turn to turn hands a provider its own
    earlier sections (R-FIRING-STARTS-EMPTY): it may edit, replace or drop those where they stand."""
    foreign = [s for s in prior if s["provider"] != provider]
    if [s for s in sections if s["provider"] != provider] != foreign:
        return False
    return {_foreign_before(sections, provider)[i] for i, s in enumerate(sections) if s["provider"] == provider} <= \
        {len(foreign)} | {_foreign_before(prior, provider)[i] for i, s in enumerate(prior) if s["provider"] == provider}


def _foreign_before(chain: list[dict], provider: str) -> list[int]:
    """For each place in the chain, how many sections of other providers come before it."""
    counts, seen = [], 0
    for section in chain:
        counts.append(seen)
        seen += section["provider"] != provider
    return counts
