"""`ctxconf errata`: each ruling of conformance/rulings.yaml as a proposed clarification of the spec, ready to
paste into an issue on the spec's repository.

A clarification names the spec passages involved (anchors, with links upstream, and the sentences by
fingerprint, each described by the requirements that encode it, in the suite's words), the question, what the
text leaves open or where it disagrees with itself, the reading the suite applies and the other readings it
accepts or rules out. Given a `ctxconf matrix --json` report, it adds what real implementations were observed
to do: their side of the ruling and their results on the requirements the ruling's vectors cite. The spec's
own text appears only as a strict ruling's short quotes (`forbids`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from conformance import __version__
from conformance.data import ledger as ledger_mod
from conformance.data.catalog import Catalog, Ruling, spec_url
from conformance.data.schemas import InputError, check, read_json

FINGERPRINTS = ("Sentences are cited by fingerprint: the first 12 hex digits of the SHA-256 of the sentence's "
                "text with the Markdown removed and the spacing collapsed (`ctxconf requirements --spec DIR` "
                "lists them against a copy of the spec).")
PREAMBLE = ("ctxconf is a conformance suite for the pluggableharness context-provider protocol. Where the "
            "specification is ambiguous or contradicts itself, ctxconf records a ruling: the reading its checks "
            "apply, and every reading it accepts. Each ruling below is written up as a proposed clarification, "
            "so that the specification can settle the question itself.")


def build(catalog: Catalog, ledger: ledger_mod.Ledger, vectors: list = (), matrix: dict | None = None) -> dict:
    """The errata document: one clarification per ruling, in the rulings file's order."""
    where = {r.fingerprint: (anchor, r.keywords) for anchor, entries in ledger.recorded.items() for r in entries}
    return {"suite": {"name": "ctxconf", "version": __version__, "spec_revision": " ".join(catalog.spec_revision.split())},
            "clarifications": [_clarification(r, catalog, where, vectors, matrix) for r in catalog.rulings.values()]}


def _clarification(ruling: Ruling, catalog: Catalog, where: dict, vectors: list, matrix: dict | None) -> dict:
    entry = {
        "ruling": ruling.id,
        "question": ruling.question,
        "anchors": [{"anchor": a, "url": spec_url(a)} for a in ruling.anchors],
        "passages": [_passage(f, catalog, where) for f in ruling.sentences],
        "open": " ".join(ruling.reasoning.split()),
        "suite_reading": " ".join(ruling.ruling.split()),
        "applies": ruling.applies,
        "readings": [{"reading": r["reading"], "accepted": r["accepted"]} for r in ruling.readings],
        "quotes": [{"anchor": q["anchor"], "quote": q["quote"]} for q in ruling.forbids],
        "how_checked": " ".join(ruling.tests.split()),
        "requirements": requirements_tested(ruling, catalog, vectors),
    }
    if matrix is not None:
        entry["observed"] = observed(ruling.id, entry["requirements"], matrix)
    return entry


def _passage(fingerprint: str, catalog: Catalog, where: dict) -> dict:
    anchor, keywords = where.get(fingerprint, ("", ()))
    encoded = [r for r in catalog.requirements.values() if fingerprint in r.sentences and not r.retired]
    return {"anchor": anchor, "sentence": fingerprint, "keywords": list(keywords),
            "in_our_words": [{"requirement": r.id, "level": r.level, "summary": r.summary} for r in encoded]}


def requirements_tested(ruling: Ruling, catalog: Catalog, vectors: list) -> list[str]:
    """The requirements the ruling's vectors cite, and those its `tests` names, in catalog order."""
    named = set(re.findall(r"\b(?:K|KC|P|C)-[A-Z0-9]+(?:-[A-Z0-9]+)*\b", ruling.tests))
    named |= {rid for v in vectors if ruling.id in v.rulings for rid in v.requirements}
    return [rid for rid in catalog.requirements if rid in named]


def observed(ruling_id: str, requirements: list[str], matrix: dict) -> list[dict]:
    """Per implementation of the matrix: its side of the ruling and its status on each requirement."""
    found = []
    for role, rows in matrix["rulings"].items():
        sides = next((row["sides"] for row in rows if row["id"] == ruling_id), {})
        statuses = {row["id"]: row["status"] for row in matrix["requirements"].get(role, []) if row["id"] in requirements}
        for implementation in [i for i in matrix["implementations"] if i["role"] == role]:
            name = implementation["name"]
            side = sides.get(name, {})
            found.append({"implementation": name, "role": role, "verdict": implementation.get("verdict", ""),
                          "side": side.get("side", "not observed"), "evidence": side.get("evidence", ""),
                          "requirements": {rid: s[name] for rid, s in statuses.items() if name in s}})
    return found


def load_matrix(path: Path) -> dict:
    report = read_json(path, "a ctxconf matrix report")
    if not (isinstance(report, dict) and isinstance(report.get("implementations"), list)
            and isinstance(report.get("requirements"), dict) and isinstance(report.get("rulings"), dict)):
        raise InputError(str(path), "not a ctxconf matrix report (write one with ctxconf matrix --json FILE)")
    return report


# --- Markdown --------------------------------------------------------------------

def to_markdown(document: dict, title: str = "Proposed clarifications of the context-provider specification") -> str:
    out = [f"# {title}", "", PREAMBLE, "", FINGERPRINTS, "",
           f"Spec revision the suite follows: {document['suite']['spec_revision']}.", ""]
    for entry in document["clarifications"]:
        out += clarification_markdown(entry)
    return "\n".join(out).rstrip() + "\n"


def clarification_markdown(entry: dict) -> list[str]:
    out = [f"## {entry['question']}", "", f"*ctxconf ruling {entry['ruling']} ({_applies(entry['applies'])})*", "",
           "**Where:** " + ", ".join(f"[`{a['anchor']}`]({a['url']})" for a in entry["anchors"]), ""]
    if entry["passages"]:
        out += ["**The sentences involved**, by anchor and fingerprint, with what the suite reads in them:", ""]
        for p in entry["passages"]:
            keywords = f" ({'/'.join(p['keywords'])})" if p["keywords"] else ""
            words = "; ".join(f"{w['summary']} ({w['requirement']}, {w['level']})" for w in p["in_our_words"])
            out.append(f"- `{p['anchor']}` sentence `{p['sentence']}`{keywords}: "
                       + (words or "no requirement encodes it on its own; the ruling rests on it."))
        out.append("")
    out += ["**What the text leaves open, or where it disagrees:** " + entry["open"], "",
            "**The reading the suite applies:** " + entry["suite_reading"], ""]
    if entry["readings"]:
        out += ["**Readings an implementer could take:**", ""]
        out += [f"- {'accepted' if r['accepted'] else 'ruled out'}: {r['reading']}" for r in entry["readings"]]
        out.append("")
    if entry["quotes"]:
        out += ["**The text that rules out the other readings:**", ""]
        out += [f"- `{q['anchor']}`: \"{q['quote']}\"" for q in entry["quotes"]]
        out.append("")
    if "observed" in entry:
        out += _observed_markdown(entry)
    out += ["**How the suite checks it:** " + entry["how_checked"], "",
            "**Proposed clarification:** state the reading above in the text at the anchors, or say which of the "
            "accepted readings the specification intends.", ""]
    return out


def _observed_markdown(entry: dict) -> list[str]:
    if not entry["observed"]:
        return ["**Observed in implementations:** the matrix report has no implementation of this ruling's role.", ""]
    out = ["**Observed in implementations** (a `ctxconf matrix` run):", "",
           "| implementation | verdict | side of the ruling | evidence | requirements |", "|---|---|---|---|---|"]
    for o in entry["observed"]:
        statuses = ", ".join(f"{rid} {status}" for rid, status in o["requirements"].items()) or "-"
        out.append(f"| {_cell(o['implementation'])} | {_cell(o['verdict'])} | {_cell(o['side'])} | "
                   f"{_cell(o['evidence'] or '-')} | {_cell(statuses)} |")
    return out + [""]


def _applies(applies: str) -> str:
    return {"strict": "strict: one behaviour passes", "both-accepted": "several behaviours pass",
            "lenient": "lenient: anything short of the stated violation passes"}[applies]


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


# --- writing ---------------------------------------------------------------------

def per_anchor(document: dict) -> dict[str, dict]:
    """One document per anchor, holding every clarification that cites it, in order."""
    anchors: dict[str, dict] = {}
    for entry in document["clarifications"]:
        for a in entry["anchors"]:
            anchors.setdefault(a["anchor"], {"suite": document["suite"], "anchor": a["anchor"], "clarifications": []})
            anchors[a["anchor"]]["clarifications"].append(entry)
    return anchors


def file_name(anchor: str, suffix: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", anchor.replace(".md#", "--")) + suffix


def render(document: dict, form: str) -> str:
    if form == "json":
        check("errata.json", document, "the errata document")
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    title = f"Proposed clarifications: {document['anchor']}" if "anchor" in document else None
    return to_markdown(document, title) if title else to_markdown(document)


def write(document: dict, form: str, out: Path | None, per_file: bool) -> list[tuple[Path | None, str]]:
    """What to write where: one document (to `out`, or stdout when None), or one file per anchor in `out`."""
    if not per_file:
        return [(out, render(document, form))]
    suffix = ".json" if form == "json" else ".md"
    return [(out / file_name(anchor, suffix), render(doc, form)) for anchor, doc in per_anchor(document).items()]
