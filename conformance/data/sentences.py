"""The spec's sentences, one by one: each found under its heading anchor, with a fingerprint of its text.

A requirement in the catalog names the sentences it encodes by fingerprint (never by their text, which stays
upstream), so the suite can tell which keyword sentences nothing claims and which sentences changed under a
requirement since it was written (conformance/commands/traceability.py).

A sentence is a unit of normative text wherever the spec puts one: a sentence of a paragraph or list item, a
row of a table (the summary matrix says MUST in a cell), or a field of a code block together with its comment
(`token_budget int // MUST — ...`, the comment continued over the lines after it). Its fingerprint is taken over
the text with the Markdown gone (emphasis, links, code spans keep their words) and the spacing collapsed, so
reflowing a paragraph or re-wrapping a comment changes nothing, and rewording anything does.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from markdown_it import MarkdownIt

from conformance.data.catalog import sections_in

# RFC 2119's keywords, in capitals as the RFC asks: the longer forms first so "MUST NOT" is not read as "MUST".
KEYWORDS = ("MUST NOT", "MUST", "REQUIRED", "SHALL NOT", "SHALL", "SHOULD NOT", "SHOULD", "RECOMMENDED", "MAY",
            "OPTIONAL")
_KEYWORD = re.compile(r"\b(" + "|".join(k.replace(" ", r"\s+") for k in KEYWORDS) + r")\b")
FINGERPRINT_LENGTH = 12  # hex digits of sha256: 48 bits, collision-free by a wide margin for a few thousand sentences
# A sentence ends at . ! or ? (a closing quote or bracket may follow) and a space, except after an abbreviation
# the spec writes mid-sentence or an ellipsis ("each subscriber... returns").
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')”]))\s+")
_NOT_AN_END = ("e.g.", "i.e.", "vs.", "cf.", "...")
_ONLY_BRACKETS = re.compile(r"^[\s{}()\[\];,]*$")


@dataclass(frozen=True)
class Sentence:
    anchor: str         # file.md#heading-anchor, the form the catalog cites
    fingerprint: str
    keywords: tuple[str, ...]  # the RFC 2119 keywords it carries, each once, in reading order; () for none
    text: str           # normalized; shown to a reviewer on screen, never written to the catalog

    @property
    def normative(self) -> bool:
        return bool(self.keywords)


def fingerprint(text: str) -> str:
    return hashlib.sha256(normalize(text).encode("utf-8")).hexdigest()[:FINGERPRINT_LENGTH]


def in_yaml(fingerprint: str) -> str:
    """A fingerprint as the catalog files write it: quoted when YAML would read it as something else (twelve
    decimal digits are a number)."""
    return f'"{fingerprint}"' if fingerprint.isdigit() else fingerprint


def normalize(text: str) -> str:
    return " ".join(text.split())


def keywords_of(text: str) -> tuple[str, ...]:
    found = [" ".join(m.group(1).split()) for m in _KEYWORD.finditer(text)]
    return tuple(dict.fromkeys(found))


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table")


def _plain(inline) -> str:
    """An inline token's words: emphasis and link syntax gone, code spans and link texts kept."""
    parts = []
    for child in inline.children or ():
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(child.content)
    return "".join(parts)


def split_sentences(text: str) -> list[str]:
    pieces: list[str] = []
    for piece in _SENTENCE_END.split(normalize(text)):
        if pieces and pieces[-1].endswith(_NOT_AN_END):
            pieces[-1] += " " + piece
        else:
            pieces.append(piece)
    return [p for p in pieces if p]


def _code_units(code: str) -> list[str]:
    """A code block's lines, each with its `//` comment and the comment-only lines continuing it (the spec's
    protobuf sketches put MUSTs there); a blank or brackets-only line ends the one before."""
    units: list[list[str]] = []
    open_unit = False
    for line in code.splitlines():
        head, _, comment = line.partition("//")
        if head.strip() and not _ONLY_BRACKETS.match(head):
            units.append([head, comment])
            open_unit = True
        elif open_unit and comment.strip() and not head.strip():
            units[-1].append(comment)
        else:
            open_unit = False
    return [normalize(" ".join(unit)) for unit in units]


def _units(body: str) -> list[str]:
    """The text units of one section's Markdown, in reading order."""
    units: list[str] = []
    row: list[str] | None = None
    for token in _markdown().parse(body):
        if token.type == "tr_open":
            row = []
        elif token.type == "tr_close" and row is not None:
            units.append(" | ".join(row))
            row = None
        elif token.type == "inline" and row is not None:
            row.append(normalize(_plain(token)))
        elif token.type == "inline":
            units += split_sentences(_plain(token))
        elif token.type in ("fence", "code_block"):
            units += _code_units(token.content)
    return units


def sentences_of(markdown: str, file: str) -> list[Sentence]:
    """Every sentence of one spec document, under the anchor of the heading it sits below."""
    found = []
    for anchor, body in sections_in(markdown).items():
        for text in _units(body):
            found.append(Sentence(f"{file}#{anchor}", fingerprint(text), keywords_of(text), text))
    return found


def sentences_in(spec_dir: Path, files: list[str] | None = None) -> list[Sentence]:
    """The sentences of the spec copy's documents (all of its Markdown files when none are named), in file
    and reading order. A named file the copy lacks has none."""
    if files is None:
        files = sorted(p.relative_to(spec_dir).as_posix() for p in spec_dir.rglob("*.md"))
    found = []
    for file in files:
        path = spec_dir / file
        if path.is_file():
            found += sentences_of(path.read_text(encoding="utf-8"), file)
    return found
