"""Shards and merge (issue 27): `ctxconf selftest --shard K/N` and `ctxconf matrix --shard K/N` run disjoint
slices of their units, and `ctxconf merge` joins the shard reports into what the unsharded run prints, writes
and exits with, apart from the timings; it refuses a missing or duplicated shard, and shards of another run.
Kept small: three self-test subjects (a variant over python and stdio, a mutant) and a two-entry matrix."""

import json
import re

import pytest

from conformance.commands import selftest, shards
from tests.conftest import ctxconf

SUBJECTS = "CompactorMerges"  # CompactorMergesAll (a variant, python and stdio), CompactorMergesUnderAStrangeName
MATRIX = """title: two entries
profile: ci
implementations:
  - {name: reference kernel, role: kernel, binding: python, target: 'conformance.reference.kernel:create',
     expect: conformant}
  - {name: PerSectionBudget, role: kernel, binding: python,
     target: 'conformance.proofs.kernel_mutants:PerSectionBudget', expect: not conformant}
"""


def untimed(value):
    """A report without its timings: every `seconds` (the run's, each subject's, case's and summary's)."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def _untimed_text(stdout: str) -> str:
    return re.sub(r"; \d+\.\ds$", "; (seconds)", stdout, flags=re.MULTILINE)


@pytest.fixture(scope="module")
def selftest_runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("selftest")
    whole = ctxconf("selftest", "-k", SUBJECTS, "--jobs", "1", "--report", str(out / "whole.json"), timeout=600)
    parts = [ctxconf("selftest", "-k", SUBJECTS, "--jobs", "1", "--shard", f"{k}/2", "--report",
                     str(out / f"shard{k}.json"), timeout=600) for k in (1, 2)]
    return out, whole, parts


@pytest.fixture(scope="module")
def matrix_runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("matrix")
    (out / "m.yaml").write_text(MATRIX)
    (out / "whole").mkdir()
    whole = ctxconf("matrix", "../m.yaml", cwd=out / "whole", timeout=600)
    parts = [ctxconf("matrix", "m.yaml", "--shard", f"{k}/2", "--report", f"shard{k}.json", cwd=out, timeout=600)
             for k in (1, 2)]
    return out, whole, parts


def test_the_merged_selftest_shards_are_the_unsharded_selftest(selftest_runs):
    out, whole, parts = selftest_runs
    assert whole.returncode == 0, whole.stdout + whole.stderr[-2000:]
    assert [p.returncode for p in parts] == [0, 0], [p.stderr[-2000:] for p in parts]
    keys = [[(s["name"], s["binding"]) for s in json.loads((out / f"shard{k}.json").read_text())["subjects"]]
            for k in (1, 2)]
    assert all(keys) and not set(keys[0]) & set(keys[1]), keys  # each shard certified some, none twice
    merged = ctxconf("merge", str(out / "shard2.json"), str(out / "shard1.json"), "--report", str(out / "merged.json"))
    assert merged.returncode == whole.returncode, merged.stderr
    assert untimed(json.loads((out / "merged.json").read_text())) == untimed(json.loads((out / "whole.json").read_text()))
    assert _untimed_text(merged.stdout) == _untimed_text(whole.stdout)
    assert "Kill matrix" in merged.stdout and "CompactorMergesUnderAStrangeName" in merged.stdout


def test_the_merged_matrix_shards_are_the_unsharded_matrix(matrix_runs):
    out, whole, parts = matrix_runs
    assert whole.returncode == 0, whole.stderr[-2000:]
    assert [p.returncode for p in parts] == [0, 0], [p.stderr[-2000:] for p in parts]
    assert [sorted(p.name for p in out.glob("*.json")), sorted(p.name for p in out.glob("*.html"))] == \
        [["shard1.json", "shard2.json"], []]  # a shard writes its JSON report only
    (out / "merged").mkdir()
    merged = ctxconf("merge", "../shard1.json", "../shard2.json", cwd=out / "merged")
    assert merged.returncode == whole.returncode, merged.stderr
    assert merged.stdout == whole.stdout  # the files it wrote
    for name in ("ctxconf-matrix.md", "ctxconf-matrix.html"):
        assert (out / "merged" / name).read_text() == (out / "whole" / name).read_text()
    as_merged, as_run = (json.loads((out / d / "ctxconf-matrix.json").read_text()) for d in ("merged", "whole"))
    assert untimed(as_merged) == untimed(as_run)
    assert [i["verdict"] for i in as_merged["implementations"]] == ["conformant", "not conformant"]


def test_a_matrix_entry_not_as_expected_is_exit_1_after_the_merge_too(matrix_runs, tmp_path):
    out, _, _ = matrix_runs
    shard = json.loads((out / "shard2.json").read_text())
    for who in shard["implementations"]:
        who["expect"] = "conformant"  # as if the file had expected the mutant to pass
    (tmp_path / "shard2.json").write_text(json.dumps(shard))
    merged = ctxconf("merge", str(out / "shard1.json"), str(tmp_path / "shard2.json"), cwd=tmp_path)
    assert merged.returncode == 1, merged.stderr


def test_shards_of_two_runs_are_refused(selftest_runs, tmp_path):
    out, _, _ = selftest_runs
    # Another run for real: a narrower filter, whose second shard certifies nothing.
    other = ctxconf("selftest", "-k", "CompactorMergesUnder", "--shard", "2/2", "--report", str(tmp_path / "o.json"))
    assert other.returncode == 0, other.stderr
    merged = ctxconf("merge", str(out / "shard1.json"), str(tmp_path / "o.json"))
    assert merged.returncode == 2 and "of another run" in merged.stderr, merged.stderr
    assert "o.json" in merged.stderr and "Traceback" not in merged.stderr


@pytest.mark.parametrize("field, value", [("count", 3), ("profile", "thorough"), ("seed", 7),
                                          ("suite_version", "0.0.1"), ("units", "0123456789abcdef"),
                                          ("filter", ""), ("command", "matrix")])
def test_a_shard_differing_in_any_field_of_its_run_is_refused(selftest_runs, tmp_path, field, value):
    out, _, _ = selftest_runs
    shard = json.loads((out / "shard2.json").read_text())
    shard["shard"][field] = value
    (tmp_path / "shard2.json").write_text(json.dumps(shard))
    merged = ctxconf("merge", str(out / "shard1.json"), str(tmp_path / "shard2.json"))
    assert merged.returncode == 2 and f"its {field} is" in merged.stderr, merged.stderr


def test_a_missing_or_duplicated_shard_is_refused(selftest_runs, tmp_path):
    out, _, _ = selftest_runs
    alone = ctxconf("merge", str(out / "shard1.json"))
    assert alone.returncode == 2 and "missing shard 2 of 2" in alone.stderr, alone.stderr
    twice = ctxconf("merge", str(out / "shard1.json"), str(out / "shard1.json"), str(out / "shard2.json"))
    assert twice.returncode == 2 and "shard 1/2 is given twice" in twice.stderr, twice.stderr
    (tmp_path / "plain.json").write_text((out / "whole.json").read_text())
    plain = ctxconf("merge", str(tmp_path / "plain.json"))
    assert plain.returncode == 2 and "plain.json" in plain.stderr and "not a shard report" in plain.stderr


def test_the_suite_refuses_shards_of_subjects_it_does_not_have(selftest_runs, tmp_path):
    # The fields agree with each other, but not with the suite doing the merge (another checkout ran them).
    out, _, _ = selftest_runs
    for k in (1, 2):
        shard = json.loads((out / f"shard{k}.json").read_text())
        shard["shard"]["units"] = "0123456789abcdef"
        (tmp_path / f"shard{k}.json").write_text(json.dumps(shard))
    merged = ctxconf("merge", str(tmp_path / "shard1.json"), str(tmp_path / "shard2.json"))
    assert merged.returncode == 2 and "not this suite's" in merged.stderr, merged.stderr


@pytest.mark.parametrize("command", [["selftest"], ["matrix"]])
@pytest.mark.parametrize("value", ["0/2", "3/2", "x", "1/0", "2", "-1/2"])
def test_a_bad_shard_is_a_usage_error_naming_the_option(command, value):
    run = ctxconf(*command, f"--shard={value}")
    assert run.returncode == 2 and "error: argument --shard:" in run.stderr and repr(value) in run.stderr, run.stderr


@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_the_shards_are_disjoint_cover_everything_and_are_balanced(count):
    everyone = selftest.subjects()
    slices = [selftest.shard_of(everyone, shards.Shard(k, count)) for k in range(1, count + 1)]
    assert sum(map(len, slices)) == len(everyone) and set().union(*slices) == {s.key for s in everyone}
    assert max(map(len, slices)) - min(map(len, slices)) <= 1
    # The costliest (launched over gRPC, or launching plugins over stdio) are spread too, not one shard's lot.
    costly = [sum(key[2] in ("grpc", "stdio+plugins") for key in one) for one in slices]
    assert max(costly) - min(costly) <= 1
    assert slices == [selftest.shard_of(everyone, shards.Shard(k, count)) for k in range(1, count + 1)]
