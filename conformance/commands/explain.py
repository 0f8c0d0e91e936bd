"""`ctxconf explain ID`: everything the suite knows about one requirement,
ruling or vector, gathered for someone settling a dispute.

It reads the catalog, the bundled vectors, the invariant checks' coverage and
the proofs (mutants declare what they break, variants the freedom they take);
it runs nothing. The text says where each fact comes from, so a reader can
check it against the spec upstream.
"""

from __future__ import annotations

import difflib
import shlex
import textwrap
from dataclasses import dataclass

from conformance.data import vectors as vectors_mod
from conformance.data import catalog as catalog_mod
from conformance.data.catalog import Catalog, Requirement, Ruling, spec_url
from conformance.commands.coverage import CHECKED
from conformance.properties import CASE_IDS
from conformance.reports.verdict import plural
from conformance.data.schemas import InputError

APPLIES = {"strict": "strict: one behaviour passes",
           "both-accepted": "both accepted: every listed behaviour passes",
           "lenient": "lenient: anything short of the stated violation passes"}
TARGET_HINT = "add your target to run them against it: --python MOD:FACTORY, --stdio CMD, --grpc-cmd CMD ..."
_WIDTH = 100


def role_of(requirement: Requirement) -> str:
    return "kernel" if requirement.binds in catalog_mod.KERNEL_ROLES else "provider"


@dataclass(frozen=True)
class Proof:
    """A mutant or a conforming variant, as the proofs modules declare it."""
    name: str
    role: str
    doc: str
    breaks: tuple[str, ...] = ()
    also: tuple[str, ...] = ()
    property_only: bool = False  # no vector catches it; the generated scenarios do
    freedom: str = ""
    grants: str = ""


def proofs() -> tuple[list[Proof], list[Proof]]:
    """(mutants, variants) of both roles. Imported here: the proofs pull in the reference implementations."""
    from conformance.proofs import kernel_mutants, kernel_variants, provider_mutants, provider_variants
    mutants = [Proof(name, role, _first_line(cls.__doc__), tuple(cls.breaks), tuple(cls.also),
                     cls.property_only)
               for role, found in (("kernel", kernel_mutants.MUTANTS), ("provider", provider_mutants.MUTANTS))
               for name, cls in found.items()]
    variants = [Proof(name, role, _first_line(cls.__doc__), freedom=cls.freedom, grants=cls.grants)
                for role, found in (("kernel", kernel_variants.VARIANTS), ("provider", provider_variants.VARIANTS))
                for name, cls in found.items()]
    return mutants, variants


def _first_line(doc: str | None) -> str:
    return (doc or "").strip().split("\n\n")[0].replace("\n", " ")


def explain(item_id: str, catalog: Catalog | None = None) -> str:
    """The explanation of a requirement, ruling or vector id; InputError (exit 2) for an id none has."""
    catalog = catalog or catalog_mod.load()
    vectors = {v.id: v for v in vectors_mod.load_all(catalog)}
    if item_id in catalog.requirements:
        return _requirement(catalog.requirements[item_id], catalog, vectors)
    if item_id in catalog.rulings:
        return _ruling(catalog.rulings[item_id], catalog, vectors)
    if item_id in vectors:
        return _vector(vectors[item_id], catalog)
    known = [*catalog.requirements, *catalog.rulings, *vectors]
    close = difflib.get_close_matches(item_id, known, n=3, cutoff=0.6) or \
        difflib.get_close_matches(item_id.upper(), known, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else \
        " (`ctxconf requirements` lists the requirements; rulings are in rulings.yaml, vectors under data/vectors)"
    raise InputError("explain", f"no requirement, ruling or vector has the id {item_id!r}{hint}")


def _requirement(r: Requirement, catalog: Catalog, vectors: dict) -> str:
    citing = [v for v in vectors.values() if r.id in v.requirements]
    bearing = _rulings_bearing(r, catalog, citing)
    mutants, variants = proofs()
    out = [f"{r.id}  {r.level}  ({r.binds}; certified with `ctxconf {role_of(r)}`)" +
           ("  RETIRED" if r.retired else ""), *_para(r.summary, "  ")]
    out += _anchors("spec", (r.anchor,)) + _anchors("also", r.also)
    if r.note:
        out += _para("note: " + r.note, "  ")
    if not r.testable:
        out += _para("not testable: " + r.reason, "  ")
    if r.exercised_when:
        out += _para(f"judged only when the implementation {r.exercised_when}", "  ")
    out += ["", "rulings that bear on it:" if bearing else "rulings that bear on it: none"]
    for ruling in bearing:
        out += _ruling_summary(ruling)
    checked = " and the invariant checks (run on every step of every case)" if r.id in CHECKED else ""
    out += ["", f"evidence: {plural(len(citing), 'vector')}{checked}" + (":" if citing else "")]
    out += [f"  {v.id}: {v.title}" for v in citing]
    breaking = [m for m in mutants if r.id in m.breaks]
    also = [m for m in mutants if r.id in m.also]
    out += ["", "mutants that prove the checks can fail (each must fail it):" if breaking else
            "mutants that prove the checks can fail: none"]
    out += [f"  {m.name} ({m.role}{', caught by the property tests only' * m.property_only}): {m.doc}"
            for m in breaking]
    if also:
        out += ["  and mutants whose bug breaks it too: " + ", ".join(m.name for m in also)]
    grants = {g.id for g in bearing} | {r.anchor, *r.also}
    freedoms = [v for v in variants if v.grants in grants]
    out += _variants(freedoms)
    out += _commands([v.id for v in citing], r.id in CHECKED and not citing, role_of(r))
    return "\n".join(out)


def _rulings_bearing(r: Requirement, catalog: Catalog, citing: list) -> list[Ruling]:
    """Rulings applied by a vector citing it, or whose text names it."""
    applied = {ruling for v in citing for ruling in v.rulings}
    return [ruling for ruling in catalog.rulings.values() if ruling.id in applied or
            r.id in f"{ruling.question} {ruling.ruling} {ruling.tests}"]


def _ruling(ruling: Ruling, catalog: Catalog, vectors: dict) -> str:
    applying = [v for v in vectors.values() if ruling.id in v.rulings]
    evidenced = sorted({rid for v in applying for rid in v.requirements})
    mutants, variants = proofs()
    out = [f"{ruling.id}  ({APPLIES[ruling.applies]})", *_para("question: " + ruling.question, "  "),
           *_para("decision: " + ruling.ruling, "  "), *_para("why: " + ruling.reasoning, "  "),
           *_para("how the suite applies it: " + ruling.tests, "  ")]
    if ruling.readings:
        out += ["", "readings of the text:"]
        for reading in ruling.readings:
            verdict = "accepted" if reading["accepted"] else "forbidden"
            out += _para(f"{verdict}: {reading['reading']} (proof: {reading['proof']})", "  ")
    for cited in ruling.forbids:
        out += _para(f"forbidden by {cited['anchor']}: \"{cited['quote']}\"", "  ")
    if ruling.readings or ruling.forbids:
        out += [""]
    out += _anchors("spec", ruling.anchors)
    out += ["", f"requirements its vectors judge: {', '.join(evidenced) or 'none'}"]
    out += [textwrap.shorten(f"  {rid} {catalog.requirements[rid].level}: {catalog.requirements[rid].summary}",
                             _WIDTH + 40, placeholder=" ...") for rid in evidenced]
    out += ["", f"evidence: {plural(len(applying), 'vector')} apply it" + (":" if applying else "")]
    out += [f"  {v.id}: {v.title}" for v in applying]
    breaking = [m for m in mutants if set(m.breaks) & set(evidenced)]
    out += ["", "mutants of the requirements those vectors judge:" if breaking else
            "mutants of the requirements those vectors judge: none"]
    out += [f"  {m.name} ({m.role}) breaks {', '.join(m.breaks)}: {m.doc}" for m in breaking]
    out += _variants([v for v in variants if v.grants == ruling.id])
    for role in ("kernel", "provider"):
        ids = [v.id for v in applying if v.id.startswith(role + "/")]
        if ids:
            out += _commands(ids, False, role)
    return "\n".join(out)


def _vector(vector, catalog: Catalog) -> str:
    role = vector.id.split("/")[0]
    mutants, _ = proofs()
    out = [f"{vector.id}  ({role} vector)", *_para(vector.title, "  ")]
    if vector.doc.get("description"):
        out += _para(vector.doc["description"], "  ")
    out += [f"  file: {vector.path}", "", "requirements it judges:"]
    for rid in vector.requirements:
        r = catalog.requirements[rid]
        out += [f"  {rid} {r.level}: {r.summary}", f"      spec: {spec_url(r.anchor)}"]
    out += ["", "rulings it applies:" if vector.rulings else "rulings it applies: none"]
    for rid in vector.rulings:
        out += _ruling_summary(catalog.rulings[rid])
    breaking = [m for m in mutants if set(m.breaks) & set(vector.requirements)]
    out += ["", "mutants of the requirements it judges:" if breaking else
            "mutants of the requirements it judges: none"]
    out += [f"  {m.name} ({m.role}) breaks {', '.join(m.breaks)}: {m.doc}" for m in breaking]
    out += _commands([vector.id], False, role)
    out += [f"  or: {shlex.join(['ctxconf', 'replay', str(vector.path)])}"]
    return "\n".join(out)


def _ruling_summary(ruling: Ruling) -> list[str]:
    return [f"  {ruling.id} ({APPLIES[ruling.applies]})", *_para("question: " + ruling.question, "    "),
            *_para("decision: " + ruling.ruling, "    ")]


def _variants(found: list[Proof]) -> list[str]:
    if not found:
        return ["", "conforming variants that prove an accepted freedom: none"]
    return ["", "conforming variants that prove the accepted freedoms (each must pass):"] + [
        f"  {v.name} ({v.role}): {v.freedom} (granted by {v.grants})" for v in found]


def _commands(case_ids: list[str], by_properties: bool, role: str) -> list[str]:
    ids = case_ids or ([CASE_IDS[role]] if by_properties else [])
    if not ids:
        return ["", "no vector to run: nothing in the suite exercises it"]
    argv = ["ctxconf", role] + [arg for case in ids for arg in ("-k", case)]
    return ["", "run just these:", f"  {shlex.join(argv)}", f"  ({TARGET_HINT})"]


def _anchors(label: str, anchors: tuple[str, ...]) -> list[str]:
    return [f"  {label}: {a}  {spec_url(a)}" for a in anchors]


def _para(text: str, indent: str) -> list[str]:
    return textwrap.wrap(" ".join(text.split()), _WIDTH, initial_indent=indent, subsequent_indent=indent + "  ")
