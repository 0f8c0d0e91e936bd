"""The mutation analysis' machinery, on one mutant, end to end: built by
cosmic-ray, imported in place of the reference by the child, certified by
ctxconf, classified, and written into both reports. The full analysis
(python -m conformance.commands.mutation) is for maintainers, not CI."""

import json

import pytest

pytest.importorskip("cosmic_ray")

from cosmic_ray.mutating import mutate_code

from conformance.commands import mutation

# filereader.py: `return {"sections": prior + own}` emptied to `return None`; the golden vectors kill it.
SAMPLE = "filereader.py:60:EmptyReturn#0"


@pytest.mark.parametrize("operator", [mutation.DeleteStatement, mutation.EmptyReturn, mutation.ReplaceCodeString])
def test_our_operators_do_what_their_examples_say(operator):
    for example in operator.examples():
        assert mutate_code(example.pre_mutation_code, operator(), example.occurrence) == example.post_mutation_code


def test_ids_are_unique_and_leave_out_docstrings_and_imports():
    ops = mutation.operators()
    mutants = mutation.mutants_of("filereader", ops)
    assert len({m.id for m in mutants}) == len(mutants)
    deleted = [m for m in mutants if m.operator == "DeleteStatement"]
    assert deleted and not any(m.source_line.startswith(("from ", "import ", '"""')) for m in deleted)


def test_one_mutant_end_to_end(tmp_path):
    report_dir, work = tmp_path / "report", tmp_path / "work"
    assert mutation.main(["--target", "filereader", "--only", SAMPLE, "--report-dir", str(report_dir),
                          "--work-dir", str(work)]) == 0
    report = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    [mutant] = report["mutants"]
    assert mutant["id"] == SAMPLE and mutant["diff"].endswith("→  return None")
    assert mutant["status"] == "killed" and mutant["stage"] == "filereader", mutant
    assert report["summary"]["targets"]["filereader"]["score"] == 1.0
    assert "| filereader | 1 | 1 |" in (report_dir / "report.md").read_text(encoding="utf-8")


def test_a_freedom_counts_as_equivalent_only_with_its_variant():
    from conformance.commands import mutation_report
    mutant = {"id": "m", "source_line": "x = 1"}
    freedom = {"class": "freedom", "quote": "q", "anchor": "context/README.md#x"}
    assert mutation_report._problem(freedom, mutant) == "freedom without variant"
    assert "not in conformance/proofs" in mutation_report._problem({**freedom, "variant": "NoSuchVariant"}, mutant)
    assert mutation_report._problem({**freedom, "variant": "EagerReader"}, mutant) is None
    counts = {"killed": 8, "warned-only": 1, "timed-out": 0, "incompetent": 1}
    assert mutation_report._score(counts, tried=12, equivalent=2) == 1.0  # 8 / (12 - 2 - 1 - 1)


def test_an_only_run_replaces_its_mutants_and_keeps_the_others():
    from conformance.commands import mutation_report
    previous = {"runs": {"kernel": {"command": "all"}},
                "mutants": [{"id": "a", "target": "kernel", "status": "survived"},
                            {"id": "b", "target": "kernel", "status": "survived"}]}
    run = {"only": True, "targets": ["kernel"], "results": [{"id": "b", "target": "kernel", "status": "killed"}]}
    merged = mutation_report.merge(run, previous)
    assert [(m["id"], m["status"]) for m in merged["mutants"]] == [("a", "survived"), ("b", "killed")]
    assert merged["runs"] == previous["runs"]


def test_carry_over_moves_results_and_classifications_to_the_new_ids(tmp_path):
    ops = mutation.operators()
    [current] = [m for m in mutation.mutants_of("plugin_host", ops) if m.operator == "ReplaceTrueWithFalse"][:1]
    current.build(ops[current.operator])
    moved = f"plugin_host.py:{current.line + 40}:ReplaceTrueWithFalse#0"  # as if lines had been added above it
    gone = {"id": "plugin_host.py:1:DeleteStatement#0", "target": "plugin_host", "operator": "DeleteStatement",
            "diff": "a line that is no longer there  →  pass", "status": "killed"}
    (tmp_path / "report.json").write_text(json.dumps({"runs": {}, "mutants": [
        {"id": moved, "target": "plugin_host", "operator": current.operator, "diff": current.diff,
         "line": current.line + 40, "status": "survived", "source_line": current.source_line}, gone]}))
    changed = f"plugin_host.py:{current.line}:DeleteStatement#0"  # its line's text changed: its result is dropped
    other = "kernel.py:7:DeleteStatement#0"  # another file's: not this carry-over's business
    (tmp_path / "survivors.yaml").write_text(f"{moved}:\n  class: equivalent\n  why: as {moved} says\n"
                                             f"{changed}:\n  class: equivalent\n  why: see {other}\n")
    left = mutation.carry_over("plugin_host", ops, tmp_path)
    [record] = json.loads((tmp_path / "report.json").read_text())["mutants"]
    assert record["id"] == current.id and record["line"] == current.line and record["status"] == "survived"
    renamed = (tmp_path / "survivors.yaml").read_text()
    assert renamed == (f"{current.id}:\n  class: equivalent\n  why: as {current.id} says\n"
                       f"stale_{changed}:\n  class: equivalent\n  why: see {other}\n")
    mutation.carry_over("plugin_host", ops, tmp_path)  # a second carry-over leaves the stale key as it is
    assert (tmp_path / "survivors.yaml").read_text() == renamed
    assert current.id not in left and len(left) > 100  # the dropped record's mutant and every other one untried
