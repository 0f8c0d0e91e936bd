"""The requirements catalog and the rulings: loading, and checking anchors
against a copy of the spec."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from conformance.data import paths
from conformance.data.schemas import InputError, check, read_yaml

# Where the spec documents live upstream: an anchor is a path below this folder plus a GitHub heading fragment.
SPEC_URL = "https://github.com/pluggableharness/agent/blob/main/docs/specifications/"
NORMATIVE = ("MUST", "MUST NOT", "SHOULD", "SHOULD NOT")
BLOCKING = ("MUST", "MUST NOT")  # a failure of these makes an implementation non-conformant
KERNEL_ROLES = ("kernel", "kernel-config-load")
PROVIDER_ROLES = ("provider", "compactor")


@dataclass(frozen=True)
class Requirement:
    id: str
    level: str
    binds: str
    summary: str
    anchor: str
    testable: bool
    also: tuple[str, ...] = ()
    implied: bool = False
    reason: str = ""
    note: str = ""
    retired: bool = False
    exercised_when: str = ""  # a behaviour the implementation may never show; only then is this judged
    sentences: tuple[str, ...] = ()  # fingerprints of the spec sentences it encodes (conformance/data/sentences.py)

    @property
    def normative(self) -> bool:
        return self.level in NORMATIVE

    @property
    def blocking(self) -> bool:
        return self.level in BLOCKING


@dataclass(frozen=True)
class Ruling:
    id: str
    question: str
    anchors: tuple[str, ...]
    ruling: str
    reasoning: str
    applies: str
    tests: str
    readings: tuple[dict, ...] = ()   # each reading of the text: {reading, accepted, proof}
    forbids: tuple[dict, ...] = ()    # a strict ruling's quotes of the text ruling out the others: {anchor, quote}
    sentences: tuple[str, ...] = ()   # fingerprints of the sentences it rests on; () for all those at its anchors


@dataclass(frozen=True)
class Catalog:
    spec_revision: str
    requirements: dict[str, Requirement]
    rulings: dict[str, Ruling] = field(default_factory=dict)

    def for_roles(self, roles: tuple[str, ...]) -> list[Requirement]:
        return [r for r in self.requirements.values() if r.binds in roles and not r.retired]


def _unique(items: list[dict], source: str) -> None:
    seen: set[str] = set()
    for index, item in enumerate(items):
        if item["id"] in seen:
            raise InputError(source, f"duplicate id {item['id']}", f"[{index}].id")
        seen.add(item["id"])


@lru_cache(maxsize=None)
def load(requirements: Path = paths.REQUIREMENTS, rulings: Path = paths.RULINGS) -> Catalog:
    req_doc = read_yaml(requirements)
    check("catalog.json#/$defs/Requirements", req_doc, str(requirements))
    _unique(req_doc["requirements"], str(requirements))
    rul_doc = read_yaml(rulings)
    check("catalog.json#/$defs/Rulings", rul_doc, str(rulings))
    _unique(rul_doc["rulings"], str(rulings))
    reqs = {r["id"]: Requirement(**{**r, "also": tuple(r.get("also", ())), "sentences": tuple(r.get("sentences", ()))})
            for r in req_doc["requirements"]}
    ruls = {r["id"]: Ruling(**{**r, "anchors": tuple(r["anchors"]), "readings": tuple(r.get("readings", ())),
                               "forbids": tuple(r.get("forbids", ())), "sentences": tuple(r.get("sentences", ()))})
            for r in rul_doc["rulings"]}
    return Catalog(req_doc["spec_revision"], reqs, ruls)


# --- spec anchors ----------------------------------------------------------------

def spec_url(anchor: str) -> str:
    """The anchor's heading in the spec on GitHub."""
    return SPEC_URL + anchor


_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def github_anchor(heading: str) -> str:
    """GitHub's heading anchor: lowercase, punctuation stripped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links keep their text
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def sections_in(markdown: str) -> dict[str, str]:
    """Each heading's GitHub anchor (repeats numbered as GitHub does) and the text under it, up to the next
    heading of any level."""
    sections: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    current: list[str] = []
    in_fence = False
    for line in markdown.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match:
            anchor = github_anchor(match.group(2))
            n = counts.get(anchor, 0)
            counts[anchor] = n + 1
            current = sections.setdefault(anchor if n == 0 else f"{anchor}-{n}", [])
        else:
            current.append(line)
    return {anchor: "\n".join(lines) for anchor, lines in sections.items()}


def anchors_in(markdown: str) -> set[str]:
    return set(sections_in(markdown))


def missing_anchors(catalog: Catalog, spec_dir: Path) -> list[str]:
    """Citations of `file.md#anchor` that the spec copy does not have."""
    cache: dict[str, set[str] | None] = {}

    def exists(ref: str) -> bool:
        file, _, anchor = ref.partition("#")
        if file not in cache:
            path = spec_dir / file
            cache[file] = anchors_in(path.read_text(encoding="utf-8")) if path.is_file() else None
        return cache[file] is not None and anchor in cache[file]

    cited: list[tuple[str, str]] = []
    for r in catalog.requirements.values():
        cited += [(r.id, a) for a in (r.anchor, *r.also)]
    for r in catalog.rulings.values():
        cited += [(r.id, a) for a in r.anchors]
    return [f"{owner}: {ref}" for owner, ref in cited if not exists(ref)]


def misquoted(catalog: Catalog, spec_dir: Path) -> list[str]:
    """The quotes of strict rulings (`forbids`) that are not in the text of the section they cite, spacing
    aside: a ruling that rests on text the spec does not have rests on nothing."""
    def squeeze(text: str) -> str:  # spacing aside, and the `//` that continues a comment in a code block
        return " ".join(re.sub(r"\s//\s", " ", text).split())
    problems = []
    for ruling in catalog.rulings.values():
        for cited in ruling.forbids:
            file, _, anchor = cited["anchor"].partition("#")
            path = spec_dir / file
            section = sections_in(path.read_text(encoding="utf-8")).get(anchor, "") if path.is_file() else ""
            if squeeze(cited["quote"]) not in squeeze(section):
                problems.append(f"{ruling.id}: {cited['anchor']} does not say {cited['quote']!r}")
    return problems
