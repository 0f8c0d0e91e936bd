"""conformance/sentences.yaml, the sentence ledger: which spec documents the suite inventories, the keyword
sentences no requirement claims (each with a reason), and the spec's sentences as a reviewer last accepted them.

The recorded sentences are fingerprints only, per anchor in reading order, with the RFC 2119 keywords each
carries: enough to tell, given a newer copy of the spec, which sentences changed, appeared or went away under
which anchor (conformance/commands/traceability.py), and never the spec's text. The file is rewritten by
`ctxconf requirements --spec DIR --accept`; the `unclaimed` reasons are written by hand and kept across rewrites.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from conformance.data.schemas import InputError, check, read_yaml
from conformance.data.sentences import Sentence, in_yaml

REASONS = ("out of scope", "not testable", "informative")

HEADER = """\
# The sentence ledger (docs/traceability.md). Fingerprints only: the spec's
# text stays upstream.
#
#   scope      spec documents inventoried whole; every section a requirement
#              cites (anchor, also) is inventoried too, wherever it is
#   unclaimed  keyword sentences no requirement claims: {sentence, anchor,
#              reason: out of scope | not testable | informative, why}
#              (written by hand)
#   recorded   the spec as last reviewed: per anchor, its sentences in order,
#              each a fingerprint and the RFC 2119 keywords it carries.
#              Rewritten by `ctxconf requirements --spec DIR --accept`, the
#              step that records a reviewer's look at what changed.
"""


@dataclass(frozen=True)
class Listed:
    sentence: str
    anchor: str
    reason: str
    why: str


@dataclass(frozen=True)
class Recorded:
    fingerprint: str
    keywords: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.fingerprint} {'/'.join(self.keywords)}" if self.keywords else in_yaml(self.fingerprint)


@dataclass
class Ledger:
    scope: list[str]
    unclaimed: dict[str, Listed] = field(default_factory=dict)       # by fingerprint
    recorded: dict[str, list[Recorded]] = field(default_factory=dict)  # by anchor, in reading order

    def recorded_at(self, anchor: str) -> list[str]:
        return [r.fingerprint for r in self.recorded.get(anchor, ())]


def load(path: Path) -> Ledger:
    doc = read_yaml(path)
    check("catalog.json#/$defs/Sentences", doc, str(path))
    unclaimed: dict[str, Listed] = {}
    for index, item in enumerate(doc["unclaimed"]):
        if item["sentence"] in unclaimed:
            raise InputError(str(path), f"sentence {item['sentence']} is listed twice", f"unclaimed[{index}]")
        unclaimed[item["sentence"]] = Listed(**item)
    recorded = {anchor: [_parse_recorded(entry) for entry in entries] for anchor, entries in doc["recorded"].items()}
    return Ledger(list(doc["scope"]), unclaimed, recorded)


def _parse_recorded(entry: str) -> Recorded:
    fingerprint, _, keywords = entry.partition(" ")
    return Recorded(fingerprint, tuple(k for k in keywords.split("/") if k))


def record(sentences: list[Sentence]) -> dict[str, list[Recorded]]:
    """The recorded form of a spec copy's sentences."""
    recorded: dict[str, list[Recorded]] = {}
    for s in sentences:
        recorded.setdefault(s.anchor, []).append(Recorded(s.fingerprint, s.keywords))
    return recorded


def save(ledger: Ledger, path: Path) -> None:
    """Write the ledger in the one layout the file keeps (so a rewrite is a small diff)."""
    lines = [HEADER, "scope:"] + [f"  - {doc}" for doc in ledger.scope]
    lines.append("\nunclaimed:" + ("" if ledger.unclaimed else " []"))
    for listed in sorted(ledger.unclaimed.values(), key=lambda item: (item.anchor, item.sentence)):
        lines.append(f"  - {{sentence: {in_yaml(listed.sentence)}, anchor: {listed.anchor}, reason: {listed.reason},\n"
                     f"     why: {json.dumps(listed.why, ensure_ascii=False)}}}")
    lines.append("\nrecorded:" + ("" if ledger.recorded else " {}"))
    for anchor, entries in ledger.recorded.items():
        lines.append(f"  {anchor}:")
        lines += [f"    - {entry}" for entry in entries]
    try:
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    except OSError as exc:
        raise InputError(str(path), f"cannot write: {exc.strerror}") from None
