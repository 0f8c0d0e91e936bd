"""Sentence-level traceability: which of the spec's keyword sentences the catalog's requirements claim, and
what changed in a copy of the spec since a reviewer last accepted it.

`ctxconf requirements --spec DIR` reads the spec copy's sentences (conformance/data/sentences.py) within the
ledger's scope (conformance/data/ledger.py), matches them to the fingerprints each requirement lists, and
compares them with the ledger's recorded sentences: per anchor, a claimed sentence gone while an unclaimed one
appeared is a changed sentence (the two paired by keywords and position, the only likeness fingerprints leave),
and the rest are added or removed. Each change names what depends on it: the requirements claiming it, the
rulings that rest on it and the vectors citing either. `--accept` records a reviewer's look: claims follow
their changed sentences, claims of removed ones are dropped, and the ledger records the copy as it is.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path

from conformance.data import catalog as catalog_mod, ledger as ledger_mod
from conformance.data.catalog import Catalog, Ruling
from conformance.data.schemas import InputError
from conformance.data.sentences import Sentence, in_yaml, sentences_in

_CLAIMS_LINE = re.compile(r"^(\s*sentences:\s*)\[([^\]]*)\](.*)$")


@dataclass(frozen=True)
class Change:
    kind: str                  # changed | added | removed | moved
    anchor: str                # where it is now (added, changed, moved) or was (removed)
    old: str = ""              # the recorded fingerprint (changed, removed, moved)
    new: str = ""              # the copy's fingerprint (changed, added, moved)
    was: str = ""              # a moved sentence's recorded anchor
    keywords: tuple[str, ...] = ()
    text: str = ""             # the copy's sentence, for the reviewer's screen only
    requirements: tuple[str, ...] = ()
    rulings: tuple[str, ...] = ()
    vectors: tuple[str, ...] = ()

    @property
    def needs_review(self) -> bool:
        """A change something depends on, or to a keyword sentence; a reworded remark nothing claims is not."""
        return bool(self.keywords or self.requirements or self.rulings)


@dataclass
class Trace:
    sentences: list[Sentence]                      # the copy's, within the scope
    claims: dict[str, list[str]]                   # fingerprint -> the requirements claiming it
    rests: dict[str, list[str]]                    # fingerprint -> the rulings listing it
    ledger: ledger_mod.Ledger
    outside_scope: int = 0                         # keyword sentences of the copy's other documents
    problems: list[str] = field(default_factory=list)
    drift: list[Change] = field(default_factory=list)

    @property
    def keyword_sentences(self) -> list[Sentence]:
        return [s for s in self.sentences if s.normative]

    @property
    def claimed(self) -> list[Sentence]:
        return [s for s in self.keyword_sentences if s.fingerprint in self.claims]

    @property
    def listed(self) -> list[Sentence]:
        return [s for s in self.keyword_sentences if s.fingerprint in self.ledger.unclaimed
                and s.fingerprint not in self.claims]

    @property
    def neither(self) -> list[Sentence]:
        return [s for s in self.keyword_sentences if s.fingerprint not in self.claims
                and s.fingerprint not in self.ledger.unclaimed]


# --- reading the copy ------------------------------------------------------------

def cited_anchors(catalog: Catalog) -> set[str]:
    return {a for r in catalog.requirements.values() for a in (r.anchor, *r.also)}


def scoped_sentences(catalog: Catalog, ledger: ledger_mod.Ledger, spec_dir: Path) -> tuple[list[Sentence], int]:
    """The copy's sentences in the scope (its documents whole, and every section a requirement cites), and how
    many keyword sentences the copy has beyond it."""
    cited = cited_anchors(catalog)
    everything = sentences_in(spec_dir)
    inside = [s for s in everything if s.anchor.partition("#")[0] in ledger.scope or s.anchor in cited]
    return inside, sum(1 for s in everything if s.normative) - sum(1 for s in inside if s.normative)


def claims_of(catalog: Catalog) -> dict[str, list[str]]:
    claims: dict[str, list[str]] = {}
    for r in catalog.requirements.values():
        if not r.retired:
            for fingerprint in r.sentences:
                claims.setdefault(fingerprint, []).append(r.id)
    return claims


def rests_of(catalog: Catalog) -> dict[str, list[str]]:
    """fingerprint -> the rulings resting on it."""
    rests: dict[str, list[str]] = {}
    for r in catalog.rulings.values():
        for fingerprint in r.sentences:
            rests.setdefault(fingerprint, []).append(r.id)
    return rests


def trace(catalog: Catalog, ledger: ledger_mod.Ledger, spec_dir: Path, vectors: list = ()) -> Trace:
    sentences, outside = scoped_sentences(catalog, ledger, spec_dir)
    found = Trace(sentences, claims_of(catalog), rests_of(catalog), ledger, outside)
    found.drift = drift(found, catalog, vectors)
    found.problems = [f"needs review: {describe(change)}" for change in found.drift if change.needs_review]
    found.problems += claim_problems(found, catalog, {c.old for c in found.drift} | {c.new for c in found.drift})
    return found


def claim_problems(found: Trace, catalog: Catalog, drifted: set[str]) -> list[str]:
    """Keyword sentences neither claimed nor listed; claims and listings of sentences the copy lacks; listings
    of claimed sentences; requirements claiming nothing. A sentence the drift already reports is left to it."""
    where = {s.fingerprint: s.anchor for s in found.sentences}
    problems = [f"unclaimed: {s.anchor} {s.fingerprint} ({'/'.join(s.keywords)}): {_clip(s.text)}"
                for s in found.neither if s.fingerprint not in drifted]
    for fingerprint in {**found.claims, **found.rests}:
        owners = found.claims.get(fingerprint, []) + found.rests.get(fingerprint, [])
        if fingerprint not in where and fingerprint not in drifted:
            problems.append(f"{', '.join(owners)} claims sentence {fingerprint}, which the spec's inventoried "
                            "sections do not have")
    for listed in found.ledger.unclaimed.values():
        if listed.sentence in drifted:
            continue
        if where.get(listed.sentence) != listed.anchor:
            problems.append(f"listed as unclaimed: {listed.sentence} is not at {listed.anchor} in the spec")
        elif listed.sentence in found.claims:
            problems.append(f"listed as unclaimed ({listed.reason}) but claimed by "
                            f"{', '.join(found.claims[listed.sentence])}: {listed.sentence}")
    problems += [f"{r.id} claims no sentence of the spec" for r in catalog.requirements.values()
                 if not r.retired and not r.sentences]
    return problems


# --- drift -----------------------------------------------------------------------

def drift(found: Trace, catalog: Catalog, vectors: list) -> list[Change]:
    """Per anchor, what the copy has that the ledger did not record and the other way round."""
    now = ledger_mod.record(found.sentences)
    before = found.ledger.recorded
    tracked = set(found.claims) | set(found.rests) | set(found.ledger.unclaimed)
    where_now = {r.fingerprint: anchor for anchor, entries in now.items() for r in entries}
    where_before = {r.fingerprint: anchor for anchor, entries in before.items() for r in entries}
    text = {s.fingerprint: s.text for s in found.sentences}
    changes: list[Change] = []
    for anchor in list(now) + [a for a in before if a not in now]:
        old = [r for r in before.get(anchor, []) if r.fingerprint not in {n.fingerprint for n in now.get(anchor, [])}]
        new = [r for r in now.get(anchor, []) if r.fingerprint not in {o.fingerprint for o in before.get(anchor, [])}]
        moved = [r for r in new if r.fingerprint in where_before]
        old = [r for r in old if r.fingerprint not in where_now]
        new = [r for r in new if r.fingerprint not in where_before]
        pairs = _pair([r for r in old if r.fingerprint in tracked], [r for r in new if r.fingerprint not in tracked],
                      before.get(anchor, []), now.get(anchor, []))
        paired_old = {o.fingerprint for o, _ in pairs}
        paired_new = {n.fingerprint for _, n in pairs}
        changes += [Change("changed", anchor, old=o.fingerprint, new=n.fingerprint, keywords=n.keywords,
                           text=text[n.fingerprint]) for o, n in pairs]
        changes += [Change("moved", anchor, old=r.fingerprint, new=r.fingerprint, was=where_before[r.fingerprint],
                           keywords=r.keywords, text=text[r.fingerprint]) for r in moved]
        changes += [Change("added", anchor, new=r.fingerprint, keywords=r.keywords, text=text[r.fingerprint])
                    for r in new if r.fingerprint not in paired_new]
        changes += [Change("removed", anchor, old=r.fingerprint, keywords=r.keywords)
                    for r in old if r.fingerprint not in paired_old]
    return [_with_dependants(c, found, catalog, vectors) for c in changes]


def _pair(gone: list, appeared: list, before: list, now: list) -> list[tuple]:
    """Claimed sentences gone from an anchor matched with new ones there carrying the same keywords, the nearest
    in place first. A sentence whose keywords changed (a MUST turned SHOULD) is removed and added instead, so
    no claim follows it without a reviewer claiming it anew."""
    def place(entry, entries) -> float:
        return [e.fingerprint for e in entries].index(entry.fingerprint) / max(len(entries), 1)
    pairs, free = [], list(appeared)
    for old in gone:
        alike = [new for new in free if new.keywords == old.keywords]
        if alike:
            best = min(alike, key=lambda new: abs(place(old, before) - place(new, now)))
            pairs.append((old, best))
            free.remove(best)
    return pairs


def _with_dependants(change: Change, found: Trace, catalog: Catalog, vectors: list) -> Change:
    requirements = tuple(found.claims.get(change.old, ()))
    rulings = tuple(r.id for r in catalog.rulings.values() if _rests_on(r, change))
    cited = set(requirements) | set(rulings)
    vector_ids = tuple(v.id for v in vectors if cited & (set(v.requirements) | set(v.rulings)))
    return dataclasses.replace(change, requirements=requirements, rulings=rulings, vectors=vector_ids)


def _rests_on(ruling: Ruling, change: Change) -> bool:
    """A ruling rests on the sentences it lists, and a keyword sentence added beside them may settle or reopen
    its question; one that lists none rests on every sentence at its anchors."""
    at_anchor = change.anchor in ruling.anchors or change.was in ruling.anchors
    if not ruling.sentences:
        return at_anchor
    if change.kind == "added":
        return at_anchor and bool(change.keywords)
    return bool({change.old, change.new} & set(ruling.sentences))


# --- accepting -------------------------------------------------------------------

def accept(found: Trace, catalog_files: dict[str, Path]) -> list[str]:
    """Record a reviewer's look at the drift: each claim (of a requirement or a ruling) and each unclaimed
    listing follows its changed sentence, those of removed sentences are dropped, and the ledger records the
    copy's sentences. Returns what was done, one line each."""
    follow = {c.old: c.new for c in found.drift if c.kind == "changed"}
    present = {s.fingerprint for s in found.sentences}
    named = set(found.claims) | set(found.rests) | set(found.ledger.unclaimed)
    drop = {f for f in named if f not in present and f not in follow}
    def owners(fingerprint: str) -> str:
        return ", ".join(found.claims.get(fingerprint, []) + found.rests.get(fingerprint, [])) or "unclaimed listing"
    done = [f"{owners(old)}: {old} -> {new}" for old, new in follow.items()]
    done += [f"{owners(f)}: {f} dropped (not in the spec)" for f in sorted(drop)]
    for name in ("requirements", "rulings"):
        rewrite_claims(catalog_files[name], follow, drop)
    catalog_mod.load.cache_clear()  # the files just rewritten: the next load reads them again
    where = {s.fingerprint: s.anchor for s in found.sentences}
    unclaimed = {}
    for fingerprint, listed in found.ledger.unclaimed.items():
        fingerprint = follow.get(fingerprint, fingerprint)
        if fingerprint in where:
            unclaimed[fingerprint] = ledger_mod.Listed(fingerprint, where[fingerprint], listed.reason, listed.why)
    ledger_mod.save(ledger_mod.Ledger(found.ledger.scope, unclaimed, ledger_mod.record(found.sentences)),
                    catalog_files["sentences"])
    return done + [f"recorded {len(found.sentences)} sentences under {len(set(where.values()))} anchors in "
                   f"{catalog_files['sentences']}"]


def rewrite_claims(path: Path, follow: dict[str, str], drop: set[str]) -> None:
    """Edit each `sentences: [...]` line of a catalog file in place, nothing else: the file's comments, order
    and layout stay as they are."""
    if not follow and not drop:
        return
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for index, line in enumerate(lines):
        match = _CLAIMS_LINE.match(line.rstrip("\n"))
        if match:
            items = [f.strip().strip("'\"") for f in match.group(2).split(",") if f.strip()]
            items = list(dict.fromkeys(follow.get(f, f) for f in items if f not in drop))
            lines[index] = f"{match.group(1)}[{', '.join(map(in_yaml, items))}]{match.group(3)}\n"
    path.write_text("".join(lines), encoding="utf-8")


# --- reporting -------------------------------------------------------------------

def describe(change: Change) -> str:
    what = {"changed": f"{change.old} -> {change.new}", "added": change.new, "removed": change.old,
            "moved": f"{change.new} (from {change.was})"}[change.kind]
    keywords = f" ({'/'.join(change.keywords)})" if change.keywords else ""
    needs = [("requirements", change.requirements), ("rulings", change.rulings), ("vectors", change.vectors)]
    depends = "; ".join(f"{name}: {', '.join(ids)}" for name, ids in needs if ids) or "nothing claims it"
    return f"{change.anchor}: sentence {change.kind} {what}{keywords}; {depends}" + \
        (f"\n      now: {_clip(change.text)}" if change.text else "")


def render(found: Trace) -> str:
    total, claimed = len(found.keyword_sentences), len(found.claimed)
    percent = 100.0 * claimed / total if total else 100.0
    by_reason: dict[str, int] = {}
    for s in found.listed:
        reason = found.ledger.unclaimed[s.fingerprint].reason
        by_reason[reason] = by_reason.get(reason, 0) + 1
    lines = [f"\nsentence coverage: {claimed}/{total} keyword sentences claimed by a requirement ({percent:.1f} %); "
             f"{len(found.listed)} listed as unclaimed"
             + (f" ({', '.join(f'{n} {r}' for r, n in sorted(by_reason.items()))})" if by_reason else "")
             + f"; {len(found.neither)} neither"]
    # A sentence that only names a keyword (informative), or binds a party other than a kernel, provider or
    # compactor of this protocol (out of scope), is no obligation to claim: the second figure leaves them out.
    binding = total - by_reason.get("informative", 0) - by_reason.get("out of scope", 0)
    if binding != total:
        lines.append(f"  of those binding a party of this protocol (the informative and out-of-scope ones aside): "
                     f"{claimed}/{binding} ({100.0 * claimed / binding if binding else 100.0:.1f} %)")
    for document in sorted({s.anchor.partition('#')[0] for s in found.keyword_sentences}):
        mine = [s for s in found.keyword_sentences if s.anchor.startswith(document + "#")]
        lines.append(f"  {document:<40} {sum(1 for s in mine if s.fingerprint in found.claims):>3}/{len(mine)}")
    lines.append(f"  (scope: {', '.join(found.ledger.scope)}, and the sections requirements cite elsewhere; "
                 f"{found.outside_scope} keyword sentences of the spec lie beyond it)")
    for s in found.listed:
        listed = found.ledger.unclaimed[s.fingerprint]
        lines.append(f"  unclaimed, {listed.reason}: {s.anchor} {s.fingerprint}: {listed.why}")
    quiet = [c for c in found.drift if not c.needs_review]
    if quiet:
        lines.append(f"  {len(quiet)} sentences nothing claims changed wording since the ledger's record "
                     "(--accept records them)")
    return "\n".join(lines)


def _clip(text: str, width: int = 100) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def check_spec(catalog: Catalog, ledger_path: Path, spec_dir: Path, vectors: list) -> Trace:
    """The whole check of a spec copy: anchors, the strict rulings' quotes, the sentences and the drift."""
    if not spec_dir.is_dir():
        raise InputError(str(spec_dir), "not a directory")
    return trace(catalog, ledger_mod.load(ledger_path), spec_dir, vectors)

