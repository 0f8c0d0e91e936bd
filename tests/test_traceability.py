"""Sentence-level traceability (ctxconf requirements --spec), drift and --accept, and the errata export, on a
small spec and catalog the tests write themselves; then the real check against the spec copy beside the
checkout."""

import json
import textwrap
from types import SimpleNamespace

import pytest

from conformance.commands import traceability
from conformance.data import catalog as catalog_mod
from conformance.data import ledger as ledger_mod
from conformance.data.schemas import check
from conformance.data.sentences import fingerprint, sentences_of
from tests.conftest import ROOT, ctxconf

SPEC = ROOT.parent / "shared" / "spec" / "upstream"

DOC = textwrap.dedent("""\
    # Doc

    ## Alpha

    The kernel MUST call every provider. A provider MAY skip a turn,
    e.g. when idle.

    - Providers MUST NOT return *empty* labels, see [the rules](#beta).

    ## Beta

    | Field | Level | Notes |
    |---|---|---|
    | label | MUST | required |

    ```protobuf
    Thing {
      size int   // MUST — the size, counted by
                 // the kernel
    }
    ```

    This sentence has no keyword.

    ## Gamma

    A compactor SHOULD summarize.
    """)

CALL = fingerprint("The kernel MUST call every provider.")
SKIP = fingerprint("A provider MAY skip a turn, e.g. when idle.")
EMPTY = fingerprint("Providers MUST NOT return empty labels, see the rules.")
ROW = fingerprint("label | MUST | required")
SIZE = fingerprint("size int MUST — the size, counted by the kernel")
PLAIN = fingerprint("This sentence has no keyword.")
SUMMARIZE = fingerprint("A compactor SHOULD summarize.")


def requirement(rid: str, anchor: str, sentences: list[str], level: str = "MUST") -> str:
    return (f"- id: {rid}\n  level: {level}\n  binds: kernel\n  summary: A paraphrase of {rid} in our words.\n"
            f"  anchor: ctx/doc.md#{anchor}\n  sentences: [{', '.join(sentences)}]\n  testable: false\n"
            "  reason: The synthetic catalog has no vectors.\n")


def ruling(rid: str, anchor: str, sentences: list[str] | None) -> str:
    listed = f"  sentences: [{', '.join(sentences)}]\n" if sentences is not None else ""
    return (f"- id: {rid}\n  question: What does the {anchor} passage mean?\n  anchors: [ctx/doc.md#{anchor}]\n"
            f"{listed}  ruling: One reading, in our words.\n  reasoning: The passage leaves it open.\n"
            "  applies: both-accepted\n  tests: K-CALL checks it.\n")


@pytest.fixture
def world(tmp_path):
    """A spec copy, a catalog claiming all but one keyword sentence (listed instead), its ledger recorded by
    an initial --accept, and an empty vector folder."""
    spec, catalog = tmp_path / "spec", tmp_path / "catalog"
    (spec / "ctx").mkdir(parents=True)
    (spec / "ctx" / "doc.md").write_text(DOC)
    catalog.mkdir()
    (catalog / "requirements.yaml").write_text("spec_revision: synthetic\nrequirements:\n" + "".join([
        requirement("K-CALL", "alpha", [CALL]), requirement("K-LABELS", "alpha", [EMPTY, ROW]),
        requirement("K-SIZE", "beta", [SIZE, PLAIN]), requirement("K-SUMMARIZE", "gamma", [SUMMARIZE], "SHOULD")]))
    (catalog / "rulings.yaml").write_text("rulings:\n" + ruling("R-CALL", "alpha", [CALL]) + ruling("R-GAMMA", "gamma", None))
    (catalog / "sentences.yaml").write_text(textwrap.dedent(f"""\
        scope: [ctx/doc.md]
        unclaimed:
          - {{sentence: {SKIP}, anchor: ctx/doc.md#alpha, reason: informative, why: "A latitude nothing checks."}}
        recorded: {{}}
        """))
    for role in ("kernel", "provider"):
        (tmp_path / "vectors" / role).mkdir(parents=True)
    world = SimpleNamespace(spec=spec, catalog=catalog, doc=spec / "ctx" / "doc.md", vectors=tmp_path / "vectors")
    run = requirements(world, "--accept")
    assert run.returncode == 0, run.stderr
    return world


def requirements(world, *extra: str):
    return ctxconf("requirements", "--spec", str(world.spec), "--catalog", str(world.catalog),
                   "--vectors", str(world.vectors), *extra)


def edit(world, old: str, new: str) -> None:
    text = world.doc.read_text()
    assert old in text
    world.doc.write_text(text.replace(old, new))


def review_lines(run) -> list[str]:
    return [line for line in run.stderr.splitlines() if line.startswith("GAP: needs review")]


def flagged_after(world, old: str, new: str):
    """Edit the spec copy, check it: the run fails on exactly one change needing review. (line, run)"""
    edit(world, old, new)
    run = requirements(world)
    assert run.returncode == 1
    [line] = review_lines(run)
    return line, run


def test_sentences_are_found_in_paragraphs_lists_tables_and_code_comments():
    found = {s.fingerprint: s for s in sentences_of(DOC, "ctx/doc.md")}
    assert found[CALL].anchor == "ctx/doc.md#alpha" and found[CALL].keywords == ("MUST",)
    assert found[SKIP].keywords == ("MAY",)  # not cut at "e.g."
    assert found[EMPTY].keywords == ("MUST NOT",)  # emphasis and link syntax gone, the words kept
    assert found[ROW].anchor == "ctx/doc.md#beta"  # a table row is one unit
    assert found[SIZE].keywords == ("MUST",)  # a field with its comment, continued on the next line
    assert not found[PLAIN].normative and found[SUMMARIZE].anchor == "ctx/doc.md#gamma"


def test_claimed_and_listed_sentences_pass_with_their_coverage(world):
    run = requirements(world)
    assert run.returncode == 0, run.stderr
    assert "sentence coverage: 5/6 keyword sentences claimed by a requirement (83.3 %); 1 listed as unclaimed" in run.stdout
    assert f"unclaimed, informative: ctx/doc.md#alpha {SKIP}: A latitude nothing checks." in run.stdout
    # A sentence that only names a keyword binds no one: the second figure leaves it out.
    assert "(the informative and out-of-scope ones aside): 5/5 (100.0 %)" in run.stdout


def test_a_keyword_sentence_neither_claimed_nor_listed_fails(world):
    ledger = world.catalog / "sentences.yaml"
    ledger.write_text(ledger.read_text().replace(f"  - {{sentence: {SKIP}", "  - {sentence: 00000000000a"))
    run = requirements(world)
    assert run.returncode == 1
    assert f"GAP: unclaimed: ctx/doc.md#alpha {SKIP} (MAY)" in run.stderr
    assert "listed as unclaimed: 00000000000a is not at ctx/doc.md#alpha" in run.stderr


def test_a_claimed_fingerprint_the_spec_lacks_fails(world):
    path = world.catalog / "requirements.yaml"
    path.write_text(path.read_text().replace(f"[{SUMMARIZE}]", f"[{SUMMARIZE}, abcdefabcdef]"))
    run = requirements(world)
    assert run.returncode == 1 and "K-SUMMARIZE claims sentence abcdefabcdef" in run.stderr


def test_a_changed_sentence_flags_exactly_the_requirements_and_rulings_resting_on_it(world):
    line, run = flagged_after(world, "The kernel MUST call every provider.", "The kernel MUST call each provider once.")
    new = fingerprint("The kernel MUST call each provider once.")
    assert f"ctx/doc.md#alpha: sentence changed {CALL} -> {new} (MUST); requirements: K-CALL; rulings: R-CALL" in line
    assert "GAP: unclaimed" not in run.stderr  # the drift line says it once


def test_an_added_must_is_flagged_unclaimed(world):
    line, _ = flagged_after(world, "A compactor SHOULD summarize.", "A compactor SHOULD summarize. The kernel MUST log it.")
    added = fingerprint("The kernel MUST log it.")
    assert f"ctx/doc.md#gamma: sentence added {added} (MUST); rulings: R-GAMMA" in line
    assert "requirements:" not in line


def test_a_removed_section_flags_its_requirements(world):
    line, run = flagged_after(world, "## Gamma\n\nA compactor SHOULD summarize.\n", "")
    assert f"ctx/doc.md#gamma: sentence removed {SUMMARIZE} (SHOULD); requirements: K-SUMMARIZE; rulings: R-GAMMA" in line
    assert "anchor not in the spec: K-SUMMARIZE: ctx/doc.md#gamma" in run.stderr


def test_a_reflowed_paragraph_flags_nothing(world):
    edit(world, "The kernel MUST call every provider. A provider MAY skip a turn,\ne.g. when idle.",
         "The kernel   MUST call\n**every** provider.\nA provider MAY skip a turn, e.g.\nwhen idle.")
    edit(world, "// MUST — the size, counted by\n             // the kernel", "// MUST — the size,\n  // counted by the kernel")
    run = requirements(world)
    assert run.returncode == 0, run.stderr
    assert not review_lines(run)


def test_accept_makes_claims_follow_a_changed_sentence_and_clears_the_flags(world):
    edit(world, "The kernel MUST call every provider.", "The kernel MUST call each provider once.")
    before = (world.catalog / "requirements.yaml").read_text()
    run = requirements(world, "--accept")
    assert run.returncode == 0, run.stderr
    new = fingerprint("The kernel MUST call each provider once.")
    assert f"accepted: K-CALL, R-CALL: {CALL} -> {new}" in run.stdout
    after = (world.catalog / "requirements.yaml").read_text()
    assert after == before.replace(CALL, new)  # one line changed, nothing else
    assert f"sentences: [{new}]" in (world.catalog / "rulings.yaml").read_text()
    assert requirements(world).returncode == 0


def test_accept_leaves_an_added_must_to_be_claimed_by_hand(world):
    edit(world, "A compactor SHOULD summarize.", "A compactor SHOULD summarize. The kernel MUST log it.")
    run = requirements(world, "--accept")
    assert run.returncode == 1 and "GAP: unclaimed: ctx/doc.md#gamma" in run.stderr and not review_lines(run)


def test_drift_names_the_vectors_citing_what_changed(world, tmp_path):
    catalog = catalog_mod.load(world.catalog / "requirements.yaml", world.catalog / "rulings.yaml")
    vectors = [SimpleNamespace(id="kernel/calls", requirements=("K-CALL",), rulings=()),
               SimpleNamespace(id="kernel/gamma", requirements=(), rulings=("R-GAMMA",))]
    edit(world, "The kernel MUST call every provider.", "The kernel MUST call each provider once.")
    found = traceability.trace(catalog, ledger_mod.load(world.catalog / "sentences.yaml"), world.spec, vectors)
    [change] = found.drift
    assert (change.kind, change.requirements, change.rulings, change.vectors) == \
        ("changed", ("K-CALL",), ("R-CALL",), ("kernel/calls",))


def test_accept_needs_a_spec_and_a_bad_ledger_is_bad_input(world):
    run = ctxconf("requirements", "--accept", "--catalog", str(world.catalog), "--vectors", str(world.vectors))
    assert run.returncode == 2 and "--accept" in run.stderr
    ledger = world.catalog / "sentences.yaml"
    ledger.write_text(ledger.read_text().replace("reason: informative", "reason: boring"))
    run = requirements(world)
    assert run.returncode == 2 and "sentences.yaml" in run.stderr and "unclaimed[0].reason" in run.stderr


@pytest.mark.skipif(not SPEC.is_dir(), reason="the spec copy is not next to this checkout")
def test_every_keyword_sentence_of_the_spec_is_claimed_or_listed():
    run = ctxconf("requirements", "--spec", str(SPEC))
    assert run.returncode == 0, run.stderr
    line = next(line for line in run.stdout.splitlines() if line.startswith("sentence coverage:"))
    assert "; 0 neither" in line


# --- errata ------------------------------------------------------------------------

def test_errata_has_every_ruling_in_markdown_and_valid_json(catalog, tmp_path):
    markdown = ctxconf("errata")
    assert markdown.returncode == 0, markdown.stderr
    for rid, r in catalog.rulings.items():
        assert f"*ctxconf ruling {rid} " in markdown.stdout and f"## {r.question}" in markdown.stdout
    run = ctxconf("errata", "--format", "json", "--out", str(tmp_path / "errata.json"))
    assert run.returncode == 0, run.stderr
    document = json.loads((tmp_path / "errata.json").read_text())
    check("errata.json", document, "errata")
    assert [c["ruling"] for c in document["clarifications"]] == list(catalog.rulings)
    turn = next(c for c in document["clarifications"] if c["ruling"] == "R-TURN-ID")
    assert turn["passages"][0]["in_our_words"][0]["requirement"] == "K-TURN-FIELDS"
    assert turn["anchors"][0]["url"].startswith(catalog_mod.SPEC_URL)


def test_errata_one_file_per_anchor(catalog, tmp_path):
    run = ctxconf("errata", "--out", str(tmp_path / "errata") + "/")
    assert run.returncode == 0, run.stderr
    anchors = {a for r in catalog.rulings.values() for a in r.anchors}
    files = sorted(p.name for p in (tmp_path / "errata").iterdir())
    assert len(files) == len(anchors)
    text = (tmp_path / "errata" / "context-data-types--budget-mechanics.md").read_text()
    assert text.startswith("# Proposed clarifications: context/data-types.md#budget-mechanics")
    assert all(f"ruling {r.id} " in text for r in catalog.rulings.values()
               if "context/data-types.md#budget-mechanics" in r.anchors)


def test_errata_with_a_matrix_says_what_implementations_did(catalog, tmp_path):
    matrix = {"title": "t", "implementations": [{"name": "kern-a", "role": "kernel", "verdict": "not conformant"}],
              "requirements": {"kernel": [{"id": "K-TURN-FIELDS", "level": "MUST", "anchor": "x", "status": {"kern-a": "fail"}}]},
              "rulings": {"kernel": [{"id": "R-TURN-ID", "applies": "strict",
                                      "sides": {"kern-a": {"side": "fails", "evidence": "1 case applying it failed: kernel/x"}}}]},
              "reports": {}}
    (tmp_path / "m.json").write_text(json.dumps(matrix))
    run = ctxconf("errata", "--format", "json", "--matrix", str(tmp_path / "m.json"))
    assert run.returncode == 0, run.stderr
    turn = next(c for c in json.loads(run.stdout)["clarifications"] if c["ruling"] == "R-TURN-ID")
    assert turn["observed"] == [{"implementation": "kern-a", "role": "kernel", "verdict": "not conformant",
                                 "side": "fails", "evidence": "1 case applying it failed: kernel/x", "requirements": {"K-TURN-FIELDS": "fail"}}]
    markdown = ctxconf("errata", "--matrix", str(tmp_path / "m.json"))
    assert "| kern-a | not conformant | fails | 1 case applying it failed: kernel/x | K-TURN-FIELDS fail |" in markdown.stdout
    (tmp_path / "bad.json").write_text("{}")
    bad = ctxconf("errata", "--matrix", str(tmp_path / "bad.json"))
    assert bad.returncode == 2 and "not a ctxconf matrix report" in bad.stderr


def test_a_fingerprint_of_digits_only_stays_a_string_in_the_ledger(tmp_path):
    recorded = {"ctx/doc.md#alpha": [ledger_mod.Recorded("123456789012", ()), ledger_mod.Recorded("123456789013", ("MUST",))]}
    listed = {"123456789012": ledger_mod.Listed("123456789012", "ctx/doc.md#alpha", "informative", "Twelve digits, a number to YAML.")}
    ledger_mod.save(ledger_mod.Ledger(["ctx/doc.md"], listed, recorded), tmp_path / "sentences.yaml")
    again = ledger_mod.load(tmp_path / "sentences.yaml")
    assert again.recorded == recorded and again.unclaimed == listed


def test_a_weakened_keyword_is_removed_and_added_so_no_claim_follows_it(world):
    edit(world, "The kernel MUST call every provider.", "The kernel SHOULD call every provider.")
    run = requirements(world)
    kinds = sorted(line.split(": sentence ")[1].split()[0] for line in review_lines(run))
    assert run.returncode == 1 and kinds == ["added", "removed"]
    accepted = requirements(world, "--accept")
    assert accepted.returncode == 1 and "K-CALL claims no sentence of the spec" in accepted.stderr
    assert "GAP: unclaimed: ctx/doc.md#alpha" in accepted.stderr
