"""The mutation analysis' report: docs/mutation/report.json and report.md.

A run's raw results (every mutant and what became of it) are merged with the
hand-kept docs/mutation/survivors.yaml, which says of each survivor, by its
stable id, whether it is `equivalent` (no observable behaviour changes: why),
a `freedom` (the spec grants the choice: quote, anchor, and the conforming
variant in conformance/proofs/ that takes the same choice), or an `escape` (a
violation the suite misses: the requirement, or "missing requirement" and the
anchor, and what would kill it). The classification is a maintainer's
judgement, so it lives in its own file and survives re-runs; a survivor with
none is listed first, loudly, and a classification whose mutant no longer
survives, or whose source line changed, is listed as stale.
"""

from __future__ import annotations

import functools
import json
import time
from collections import defaultdict
from pathlib import Path

import yaml

STATUSES = ("killed", "warned-only", "survived", "timed-out", "incompetent")
CLASSES = ("equivalent", "freedom", "escape")
REQUIRED = {"equivalent": ("why",), "freedom": ("quote", "anchor", "variant"),
            "escape": ("requirement", "why", "kill")}


def _load_json(path: Path) -> dict | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def classifications(report_dir: Path) -> dict[str, dict]:
    path = report_dir / "survivors.yaml"
    entries = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}) if path.exists() else {}
    return {key: entry for key, entry in entries.items() if not key.startswith("_")}  # _shared: the anchors


@functools.cache
def _catalog() -> frozenset[str]:
    from conformance.data import catalog
    return frozenset(catalog.load().requirements)


@functools.cache
def _variants() -> frozenset[str]:
    from conformance.proofs import kernel_variants, provider_variants
    return frozenset(kernel_variants.VARIANTS) | frozenset(provider_variants.VARIANTS)


def _problem(entry: dict | None, mutant: dict) -> str | None:
    """Why a classification cannot be used as it stands, or None."""
    if entry is None:
        return "unclassified"
    kind = entry.get("class")
    if kind not in CLASSES:
        return f"class {kind!r} is not one of {', '.join(CLASSES)}"
    missing = [key for key in REQUIRED[kind] if not entry.get(key)]
    if missing:
        return f"{kind} without {', '.join(missing)}"
    if kind == "escape" and entry["requirement"] != "missing requirement" and entry["requirement"] not in _catalog():
        return f"escape names {entry['requirement']!r}, which is not in conformance/requirements.yaml"
    if kind == "freedom" and entry["variant"] not in _variants():
        return f"freedom names variant {entry['variant']!r}, which is not in conformance/proofs/"
    if entry.get("source") and entry["source"] != mutant["source_line"]:
        return "stale: the source line changed since it was classified"
    return None


def merge(run: dict | None, previous: dict | None) -> dict:
    """The results of this run, and of the earlier run for the targets this one did not try."""
    if run is None:
        if previous is None:
            raise SystemExit("no report.json to rewrite: run the analysis first")
        return previous
    if run.get("only") and previous is not None:
        return _merge_only(run, previous)
    merged = {"generated": time.strftime("%Y-%m-%d %H:%M:%S %z"), "runs": {}, "mutants": []}
    kept = [] if previous is None else [m for m in previous["mutants"] if m["target"] not in run["targets"]]
    for target, info in (previous or {}).get("runs", {}).items():
        if target not in run["targets"]:
            merged["runs"][target] = info
    for target in run["targets"]:
        merged["runs"][target] = {"command": run["command"], "wall_seconds": run["wall_seconds"],
                                  "stages": run["stages"][target], "generated": merged["generated"]}
    merged["mutants"] = kept + run["results"]
    return merged


def _merge_only(run: dict, previous: dict) -> dict:
    """An --only run tried a few mutants again: their new results replace the old ones in place, every other
    mutant and each target's run record stay as they were (a second look is no new run of the target)."""
    fresh = {m["id"]: m for m in run["results"]}
    mutants = [fresh.pop(m["id"], m) for m in previous["mutants"]]
    return {**previous, "generated": time.strftime("%Y-%m-%d %H:%M:%S %z"),
            "mutants": mutants + list(fresh.values())}


def summarize(data: dict, classes: dict[str, dict]) -> dict:
    """Counts and score per target, and each survivor with its classification."""
    per_target: dict[str, dict] = {}
    by_target = defaultdict(list)
    for mutant in data["mutants"]:
        by_target[mutant["target"]].append(mutant)
    for target, mutants in by_target.items():
        counts = {status: sum(m["status"] == status for m in mutants) for status in STATUSES}
        survivors = [m for m in mutants if m["status"] == "survived"]
        usable = {m["id"]: classes[m["id"]] for m in survivors
                  if _problem(classes.get(m["id"]), m) is None}
        equivalent = sum(entry["class"] == "equivalent" for entry in usable.values())
        freedom = sum(entry["class"] == "freedom" for entry in usable.values())
        tried = len(mutants) - sum(m["status"] == "uncompilable" for m in mutants)  # no program, no mutant
        per_target[target] = {
            "tried": tried, **counts, "uncompilable": len(mutants) - tried, "equivalent": equivalent,
            "freedom": freedom, "escape": sum(e["class"] == "escape" for e in usable.values()),
            "unclassified": len(survivors) - len(usable),
            "score": _score(counts, tried, equivalent + freedom),
        }
    survivor_ids = {m["id"] for m in data["mutants"] if m["status"] == "survived"}
    return {"targets": per_target,
            "stale": sorted(set(classes) - survivor_ids)}


def _score(counts: dict, tried: int, equivalent: int) -> float | None:
    """killed / (tried - equivalent), a freedom recorded as a variant being an equivalent. Warned-only
    (caught as a SHOULD warning, not killed), timed-out and incompetent mutants are counted apart:
    outside both sides of the ratio."""
    judged = tried - equivalent - sum(counts[status] for status in ("warned-only", "timed-out", "incompetent"))
    return round(counts["killed"] / judged, 4) if judged > 0 else None


def write(report_dir: Path, run: dict | None) -> None:
    report_dir.mkdir(parents=True, exist_ok=True)
    data = merge(run, _load_json(report_dir / "report.json"))
    classes = classifications(report_dir)
    data["summary"] = summarize(data, classes)
    for mutant in data["mutants"]:  # the survivors carry their classification, or why it is missing
        mutant.pop("hash", None)  # the resume log's business, not the report's
        if mutant["status"] != "survived":
            mutant.pop("source_line", None)  # kept for survivors only: it tells a stale classification
        if mutant["status"] == "survived":
            entry = classes.get(mutant["id"])
            mutant["classification"] = entry
            mutant["problem"] = _problem(entry, mutant)
        else:
            mutant.pop("classification", None)
            mutant.pop("problem", None)
    (report_dir / "report.json").write_text(_dump(data), encoding="utf-8")
    (report_dir / "report.md").write_text(markdown(data, classes), encoding="utf-8")


def _dump(data: dict) -> str:
    """Indented, but one mutant a line: the file stays readable and diffs between runs stay small."""
    mutants = ",\n".join("  " + json.dumps(m, ensure_ascii=False) for m in data["mutants"])
    head = json.dumps({k: v for k, v in data.items() if k != "mutants"}, indent=1, ensure_ascii=False)
    return head[:-2] + ',\n "mutants": [\n' + mutants + "\n ]\n}\n"


def _cell(text: str) -> str:
    return " ".join(str(text).replace("|", "\\|").split())


def _mutant_rows(mutants: list[dict]) -> list[str]:
    return [f"| `{m['id']}` | `{_cell(m['diff'])}` |" for m in mutants]


def _by_reason(mutants: list[dict], keys: tuple[str, ...]) -> list[tuple[dict, list[dict]]]:
    """Survivors that share a classification (most share one of survivors.yaml's anchors), in source order."""
    groups: dict[tuple, tuple[dict, list[dict]]] = {}
    for m in mutants:
        entry = m["classification"]
        groups.setdefault(tuple(entry.get(k, "") for k in keys), (entry, []))[1].append(m)
    return list(groups.values())


def markdown(data: dict, classes: dict[str, dict]) -> str:
    summary = data["summary"]
    survivors = [m for m in data["mutants"] if m["status"] == "survived"]
    out = ["# Mutation analysis of the reference implementations", "",
           "Generated by `python -m conformance.commands.mutation` (its docstring gives the operators and the "
           "stages); the survivors are classified by hand in `survivors.yaml`, and report.json holds every "
           "mutant. Score = killed ÷ (tried − equivalent), where a freedom (a choice the spec grants, recorded "
           "as the conforming variant it names) counts as an equivalent. Warned-only mutants (certified, with "
           "only SHOULD warnings the unmutated reference does not have), timed-out and incompetent ones are "
           "counted apart, on neither side of the ratio; "
           "a mutation that does not compile (cosmic-ray's operators on the `**` of `{**d}`) is no program and "
           "is not tried.", ""]
    problems = [m for m in survivors if m["problem"]]
    if problems:
        out += [f"## ⚠ {len(problems)} SURVIVOR(S) WITHOUT A USABLE CLASSIFICATION", "",
                "| id | problem | diff |", "|---|---|---|"]
        out += [f"| `{m['id']}` | {m['problem']} | `{_cell(m['diff'])}` |" for m in problems]
        out.append("")
    out += ["## Per target", "",
            "| target | tried | killed | warned-only | survived | timed out | incompetent | equivalent | freedom "
            "| escape | unclassified | score | not compiling |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for target, c in summary["targets"].items():
        score = "—" if c["score"] is None else f"{100 * c['score']:.1f} %"
        out.append(f"| {target} | {c['tried']} | {c['killed']} | {c['warned-only']} | {c['survived']} | "
                   f"{c['timed-out']} | {c['incompetent']} | {c['equivalent']} | {c['freedom']} | {c['escape']} | "
                   f"{c['unclassified']} | {score} | {c['uncompilable']} |")
    out += ["", "## Runs", "", "Certification time is the sum of every mutant's ctxconf runs (resumed runs "
            "included); the last run's wall clock is that of its command alone.", "",
            "| target | stages (each only if the one before passed) | certification time | last run | generated |",
            "|---|---|---|---|---|"]
    for target, info in data["runs"].items():
        stages = "; ".join(f"`ctxconf {_cell(s)}`" for s in info["stages"])
        spent = sum(m.get("seconds", 0) for m in data["mutants"] if m["target"] == target)
        out.append(f"| {target} | {stages} | {spent / 60:.0f} min | {info['wall_seconds']} s | {info['generated']} |")
    usable = [m for m in survivors if not m["problem"]]

    escapes = defaultdict(list)
    for m in usable:
        if m["classification"]["class"] == "escape":
            entry = m["classification"]
            escapes[entry["requirement"] + (f" ({entry['anchor']})" if entry.get("anchor") else "")].append(m)
    out += ["", f"## Escapes: violations the suite certifies ({sum(map(len, escapes.values()))})", ""]
    for key in sorted(escapes, key=lambda k: (k.startswith("missing"), k)):
        out += [f"### {key}", ""]
        for entry, members in _by_reason(escapes[key], ("why", "kill")):
            out += [f"**Why:** {_cell(entry['why'])}", "", f"**Would kill it:** {_cell(entry['kill'])}", "",
                    "| mutant | diff |", "|---|---|", *_mutant_rows(members), ""]
    freedoms = [m for m in usable if m["classification"]["class"] == "freedom"]
    out += [f"## Freedoms: choices the spec grants, candidate conforming variants ({len(freedoms)})", ""]
    for entry, members in _by_reason(freedoms, ("quote", "anchor", "why")):
        out += [f"**{entry['anchor']}:** \"{_cell(entry['quote'])}\" — {_cell(entry.get('why', ''))}", "",
                "| mutant | diff |", "|---|---|", *_mutant_rows(members), ""]
    equivalents = [m for m in usable if m["classification"]["class"] == "equivalent"]
    out += [f"## Equivalent mutants ({len(equivalents)})", ""]
    for entry, members in _by_reason(equivalents, ("why",)):
        out += [f"**Why it cannot be observed:** {_cell(entry['why'])}", "",
                "| mutant | diff |", "|---|---|", *_mutant_rows(members), ""]
    for status, title in (("warned-only", "Warned only: certified, with a SHOULD warning the reference has not"),
                          ("timed-out", "Timed out"), ("incompetent", "Incompetent: the mutated module does not import")):
        rows = [m for m in data["mutants"] if m["status"] == status]
        out += [f"## {title} ({len(rows)})", ""]
        if rows:
            out += ["| mutant | diff | detail |", "|---|---|---|"]
            out += [f"| `{m['id']}` | `{_cell(m['diff'])}` | {_cell(', '.join(m['by']))} |" for m in rows]
        out.append("")
    if summary["stale"]:
        out += ["## Stale classifications (the mutant is no longer a survivor)", ""]
        out += [f"- `{key}`: {classes[key].get('class')}" for key in summary["stale"]]
    return "\n".join(out) + "\n"
