"""Shards and merge (issue 27): `ctxconf selftest --shard K/N` and `ctxconf matrix --shard K/N` run disjoint
slices of their units, and `ctxconf merge` joins the shard reports into what the unsharded run prints, writes
and exits with, apart from the timings; it refuses a missing or duplicated shard, and shards of another run.
Kept small: three self-test subjects (a variant over python and stdio, a mutant) and a two-entry matrix, each
compared in one test (so that pytest-xdist runs each once); the refusals use shards that are cheaper still."""

import json
import re

import pytest

from conformance.commands import selftest, shards
from tests.conftest import ctxconf

SUBJECTS = "CompactorMerges"  # CompactorMergesAll (a variant, python and stdio), CompactorMergesUnderAStrangeName
MATRIX = """title: two entries
profile: ci
shrink_work: 0
implementations:
  - {name: reference kernel, role: kernel, binding: python, target: 'conformance.reference.kernel:create',
     expect: conformant}
  - {name: PerSectionBudget, role: kernel, binding: python,
     target: 'conformance.proofs.kernel_mutants:PerSectionBudget', expect: not conformant}
"""


def untimed(value):
    """A report without what depends on time: every `seconds` (the run's, each subject's, case's and summary's),
    and the content digest naming a counterexample file, which hypothesis's wall-clock limits on its search after
    the first failure can vary (docs/speed.md); that there is one, and where, stays compared."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return re.sub(r"/counterexample/[0-9a-f]{12}\.yaml", "/counterexample/(digest).yaml", value) \
        if isinstance(value, str) else value


def _untimed_text(stdout: str) -> str:
    return re.sub(r"; \d+\.\ds$", "; (seconds)", stdout, flags=re.MULTILINE)


def test_the_merged_selftest_shards_are_the_unsharded_selftest(tmp_path):
    def selftest_run(*args: str):
        return ctxconf("selftest", "-k", SUBJECTS, "--jobs", "1", *args, timeout=600)
    whole = selftest_run("--report", str(tmp_path / "whole.json"))
    assert whole.returncode == 0, whole.stdout + whole.stderr[-2000:]
    for k in (1, 2):
        part = selftest_run("--shard", f"{k}/2", "--report", str(tmp_path / f"shard{k}.json"))
        assert part.returncode == 0, part.stderr[-2000:]
    keys = [[(s["name"], s["binding"]) for s in json.loads((tmp_path / f"shard{k}.json").read_text())["subjects"]]
            for k in (1, 2)]
    assert all(keys) and not set(keys[0]) & set(keys[1]), keys  # each shard certified some, none twice
    merged = ctxconf("merge", str(tmp_path / "shard2.json"), str(tmp_path / "shard1.json"), "--report",
                     str(tmp_path / "merged.json"))
    assert merged.returncode == whole.returncode, merged.stderr
    assert untimed(json.loads((tmp_path / "merged.json").read_text())) == \
        untimed(json.loads((tmp_path / "whole.json").read_text()))
    assert _untimed_text(merged.stdout) == _untimed_text(whole.stdout)
    assert "Kill matrix" in merged.stdout and "CompactorMergesUnderAStrangeName" in merged.stdout


def test_the_merged_matrix_shards_are_the_unsharded_matrix(tmp_path):
    (tmp_path / "m.yaml").write_text(MATRIX)
    for folder in ("whole", "merged"):
        (tmp_path / folder).mkdir()
    whole = ctxconf("matrix", "../m.yaml", cwd=tmp_path / "whole", timeout=600)
    assert whole.returncode == 0, whole.stderr[-2000:]
    for k in (1, 2):
        part = ctxconf("matrix", "m.yaml", "--shard", f"{k}/2", "--report", f"shard{k}.json", cwd=tmp_path,
                       timeout=600)
        assert part.returncode == 0, part.stderr[-2000:]
    assert [sorted(p.name for p in tmp_path.glob("*.json")), sorted(p.name for p in tmp_path.glob("*.html"))] == \
        [["shard1.json", "shard2.json"], []]  # a shard writes its JSON report only
    merged = ctxconf("merge", "../shard1.json", "../shard2.json", cwd=tmp_path / "merged")
    assert merged.returncode == whole.returncode, merged.stderr
    assert merged.stdout == whole.stdout  # the files it wrote
    for name in ("ctxconf-matrix.md", "ctxconf-matrix.html"):
        assert (tmp_path / "merged" / name).read_text() == (tmp_path / "whole" / name).read_text()
    as_merged, as_run = (json.loads((tmp_path / d / "ctxconf-matrix.json").read_text()) for d in ("merged", "whole"))
    assert untimed(as_merged) == untimed(as_run)
    assert [i["verdict"] for i in as_merged["implementations"]] == ["conformant", "not conformant"]
    # The exit code is the merged matrix's own: an entry not as expected is 1 (as if the file expected a pass).
    shard = json.loads((tmp_path / "shard2.json").read_text())
    shard["implementations"][0]["expect"] = "conformant"
    (tmp_path / "shard2.json").write_text(json.dumps(shard))
    assert ctxconf("merge", "../shard1.json", "../shard2.json", cwd=tmp_path / "merged").returncode == 1


@pytest.fixture(scope="session")
def shard_files(tmp_path_factory, run_once):
    """Cheap shard reports to refuse: a self-test of one mutant in two shards (the second certifies nothing),
    the second shard of another run (another filter), and a one-entry matrix's only shard, vectors only. Made
    once per pytest run, in whichever pytest-xdist worker first needs them; the tests write beside them only
    files of their own names."""
    return run_once("tests/test_shards.py shard files", lambda: _shard_files(tmp_path_factory.mktemp("shards")))


def _shard_files(out):
    for k in (1, 2):
        run = ctxconf("selftest", "-k", "CompactorMergesUnder", "--shard", f"{k}/2", "--report", str(out / f"{k}.json"))
        assert run.returncode == 0, run.stderr[-2000:]
    other = ctxconf("selftest", "-k", "ZeroDefaultBudget", "--shard", "2/2", "--report", str(out / "other.json"))
    assert other.returncode == 0, other.stderr[-2000:]
    (out / "m.yaml").write_text("properties: false\nimplementations:\n  - {name: ref, role: kernel, binding: python, "
                                "target: 'conformance.reference.kernel:create'}\n")
    matrix = ctxconf("matrix", "m.yaml", "--shard", "1/1", "--report", "matrix.json", cwd=out)
    assert matrix.returncode == 0, matrix.stderr[-2000:]
    return out


def test_the_cheap_shards_merge(shard_files):
    """The refusals below are of shards that merge when nothing is wrong with them."""
    merged = ctxconf("merge", str(shard_files / "1.json"), str(shard_files / "2.json"))
    assert merged.returncode == 0 and "CompactorMergesUnderAStrangeName" in merged.stdout, merged.stderr
    matrix = ctxconf("merge", str(shard_files / "matrix.json"), "--json", "m.json", cwd=shard_files)
    assert matrix.returncode == 0 and json.loads((shard_files / "m.json").read_text())["implementations"]


def test_shards_of_two_runs_are_refused(shard_files):
    merged = ctxconf("merge", str(shard_files / "1.json"), str(shard_files / "other.json"))
    assert merged.returncode == 2 and "of another run" in merged.stderr and "its units is" in merged.stderr
    assert "other.json" in merged.stderr and "Traceback" not in merged.stderr, merged.stderr
    merged = ctxconf("merge", str(shard_files / "1.json"), str(shard_files / "matrix.json"))
    assert merged.returncode == 2 and "its command is 'matrix', not 'selftest'" in merged.stderr, merged.stderr


@pytest.mark.parametrize("field, value", [("count", 3), ("profile", "thorough"), ("seed", 7),
                                          ("suite_version", "0.0.1"), ("units", "0123456789abcdef"),
                                          ("filter", "")])
def test_a_shard_differing_in_any_field_of_its_run_is_refused(shard_files, tmp_path, field, value):
    shard = json.loads((shard_files / "2.json").read_text())
    shard["shard"][field] = value
    (tmp_path / "2.json").write_text(json.dumps(shard))
    merged = ctxconf("merge", str(shard_files / "1.json"), str(tmp_path / "2.json"))
    assert merged.returncode == 2 and f"its {field} is" in merged.stderr, merged.stderr


def test_a_missing_or_duplicated_shard_is_refused(shard_files, tmp_path):
    alone = ctxconf("merge", str(shard_files / "1.json"))
    assert alone.returncode == 2 and "missing shard 2 of 2" in alone.stderr, alone.stderr
    twice = ctxconf("merge", str(shard_files / "1.json"), str(shard_files / "1.json"), str(shard_files / "2.json"))
    assert twice.returncode == 2 and "shard 1/2 is given twice" in twice.stderr, twice.stderr
    (tmp_path / "plain.json").write_text(json.dumps({"subjects": []}))
    plain = ctxconf("merge", str(tmp_path / "plain.json"))
    assert plain.returncode == 2 and "plain.json" in plain.stderr and "not a shard report" in plain.stderr


def test_the_suite_refuses_shards_of_subjects_it_does_not_have(shard_files, tmp_path):
    # The fields agree with each other, but not with the suite doing the merge (another checkout ran them).
    for k in (1, 2):
        shard = json.loads((shard_files / f"{k}.json").read_text())
        shard["shard"]["units"] = "0123456789abcdef"
        (tmp_path / f"{k}.json").write_text(json.dumps(shard))
    merged = ctxconf("merge", str(tmp_path / "1.json"), str(tmp_path / "2.json"))
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
    assert slices == [selftest.shard_of(everyone, shards.Shard(k, count)) for k in range(1, count + 1)]
    # Balanced by the estimate: no two shards further apart than the costliest subject (the greedy deal's bound).
    by_key = {s.key: s for s in everyone}
    loads = [sum(selftest.estimated_seconds(by_key[key]) for key in one) for one in slices]
    assert max(loads) - min(loads) <= max(map(selftest.estimated_seconds, everyone))
    # Units of equal cost (a matrix's entries) are dealt in turns: sizes differ by one at most, in the given order.
    entries = list(range(11))
    dealt = [shards.Shard(k, count).take(entries) for k in range(1, count + 1)]
    assert sorted(sum(dealt, [])) == entries and max(map(len, dealt)) - min(map(len, dealt)) <= 1
    assert dealt[0] == entries[::count]
