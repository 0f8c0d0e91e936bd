"""Finding a section's label and text in a rendered prompt.

A kernel chooses how it renders a section's boundary and may escape what it
puts inside: XML entities, JSON string escapes, or a backslash in front of
its own delimiter characters (ruling R-PROMPT-RENDERING). A piece of text is
found when the prompt holds it verbatim or in any of those escaped forms,
one character at a time, so that the escaped form decodes to exactly that
text. ASCII letters, digits and the space have no escaped form: none of
these escapes touches them. Nothing looser is accepted: a changed, shortened
or reordered text is not found.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

_XML_NAMES = {"&": "amp", "<": "lt", ">": "gt", '"': "quot", "'": "apos"}


_PLAIN = re.compile(r"[A-Za-z0-9 ]+")
_ESCAPE_MARKS = frozenset("\\&")  # every escaped form above holds one of these
_PROBE = 64  # characters searched first, so that a long text that is absent is ruled out cheaply


def _forms(char: str) -> set[str]:
    """Every way the escapes above may write one character."""
    code = ord(char)
    found = {char, "\\" + char, f"&#{code};", f"&#x{code:x};", f"&#x{code:X};",
             json.dumps(char)[1:-1], json.dumps(char, ensure_ascii=False)[1:-1]}
    # Any JSON encoder may write any character as \uXXXX, in either case (.NET's does, upper case), a
    # character past the BMP as its surrogate pair.
    units = [code] if code <= 0xFFFF else [0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)]
    found |= {"".join(f"\\u{u:04x}" for u in units), "".join(f"\\u{u:04X}" for u in units)}
    if char in _XML_NAMES:
        found.add(f"&{_XML_NAMES[char]};")
    return found


@lru_cache(maxsize=4096)
def _pattern(text: str) -> re.Pattern:
    units, at = [], 0
    for plain in _PLAIN.finditer(text):
        units += [_alternatives(c) for c in text[at:plain.start()]] + [re.escape(plain.group())]
        at = plain.end()
    units += [_alternatives(c) for c in text[at:]]
    return re.compile("".join(units))


def _alternatives(char: str) -> str:
    return "(?:" + "|".join(map(re.escape, sorted(_forms(char), key=len, reverse=True))) + ")"


def find(prompt: str, text: str, start: int = 0) -> tuple[int, int] | None:
    """Where `text` first appears at or after `start`, verbatim or escaped, as (start, end)."""
    at = prompt.find(text, start)
    # A verbatim copy further on does not answer where the text first appears: an escaped one may come first
    # (a newline written as \n inside a JSON string, before the newline that ends the line). Every escaped
    # form holds a backslash or an ampersand, so without one before the copy, or in the text (a match that
    # overlaps the copy), the copy is first.
    if at >= 0 and (at == start or _PLAIN.fullmatch(text) or not _ESCAPE_MARKS.intersection(text)
                    and all(prompt.find(mark, start, at) < 0 for mark in _ESCAPE_MARKS)):
        return at, at + len(text)
    if at < 0 and len(text) > _PROBE and not _pattern(text[:_PROBE]).search(prompt, start):
        return None
    found = _pattern(text).search(prompt, start)
    return (found.start(), found.end()) if found else None
