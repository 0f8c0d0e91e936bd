"""The provider half of the hostile-implementation corpus (issue 12): providers
that misbehave over ctxconf-provider/1 (tests/hostile/provider_*.py) and a
gRPC server that leaves a daemon behind. `ctxconf provider` against each still
ends with a report, a per-case error naming the cause and exit 1, in bounded
memory, leaving no process, temporary directory or unix socket behind (the
checks of tests/test_hostile.py's ctxconf_against), and touching no file
outside its case directory."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from tests.conftest import MANIFESTS
from tests.test_hostile import ctxconf_against

MANIFEST = ("--manifest", str(MANIFESTS / "filereader.yaml"))
SOURCE_DELETED = "provider/errors/source-deleted-mid-session"  # contribute, delete, contribute, write, contribute
DECLARED = "provider/capabilities/declared-and-stable"         # capabilities, configure, write, capabilities


def provider_against(tmp_path, shim, arg="", cases=SOURCE_DELETED, timeout=2.0, launch="--stdio"):
    return ctxconf_against(tmp_path, shim, arg, cases=cases, timeout=timeout, role="provider", launch=launch,
                           extra=MANIFEST)


def assert_bounded(run):
    assert 0 < run.peak_mb < 300, run.peak_mb


@pytest.mark.parametrize("shim, arg, causes", [
    ("provider_second_reply.py", "", ["sent a second reply to request", "(contribute)"]),
    ("provider_silent_contribute.py", "", ["no answer within 2s"]),
    ("provider_garbage_configure.py", "", ["not JSON"]),
    ("provider_exits.py", "", ["closed its stdout (exited with code 5)", "out of cheese"]),
    ("provider_setsid_grandchild.py", "hang", ["no answer within 2s"]),
    ("provider_setsid_grandchild.py", "", ["after stop, the implementation left 1 process(es) running; killed"]),
])
def test_hostile_provider_is_a_case_error(shim, arg, causes, tmp_path):
    run = provider_against(tmp_path, shim, arg)
    assert run.code == 1, run.stderr
    [case] = run.cases
    assert case["status"] == "error" and all(cause in case.get("error", "") for cause in causes), case
    assert len(case["error"]) < 10_000, "what is kept of stderr is bounded"
    assert_bounded(run)


def test_a_step_the_provider_never_answered_is_an_error_not_a_failure(tmp_path):
    run = provider_against(tmp_path, "provider_silent_contribute.py")
    [case] = run.cases
    assert case["status"] == "error" and not case.get("failures"), case


@pytest.mark.parametrize("cases, fixture, when", [
    (SOURCE_DELETED, "CLAUDE.md", "contribute"),  # then a `delete:` step, and a `write:`
    (DECLARED, "CONTEXT.md", "configure"),        # then a `write:` step
])
def test_a_fixture_swapped_for_a_symlink_leads_nowhere_outside(cases, fixture, when, tmp_path):
    sentinel = tmp_path / "sentinel.txt"
    sentinel.write_text("precious: not the suite's to delete or overwrite\n")
    run = provider_against(tmp_path, "provider_symlink_swap.py", f"{sentinel} {fixture} {when}", cases=cases)
    [case] = run.cases
    # A delete step removes the symlink itself, harmlessly; writing or reading through it is refused, naming it.
    if when == "configure":
        assert run.code == 1, run.stderr
        assert f"{fixture!r} leads through a symlink to {sentinel}" in case["error"], case
    assert not sentinel.is_symlink() and sentinel.read_text() == "precious: not the suite's to delete or overwrite\n"
    assert_bounded(run)


def test_a_huge_file_written_beside_the_fixture_costs_nothing(tmp_path):
    run = provider_against(tmp_path, "provider_huge_write.py")  # 200 MB, sparse, removed with the case directory
    assert run.code == 0, run.stderr
    [case] = run.cases
    assert case["status"] == "pass", case
    assert_bounded(run)


def test_a_huge_file_written_over_the_fixture_is_read_within_bounds(tmp_path):
    run = provider_against(tmp_path, "provider_huge_write.py", "source")
    assert run.code == 1 and "grew to" in run.cases[0].get("error", ""), run.stderr
    assert_bounded(run)


def test_endless_callbacks_end_within_the_timeout(tmp_path):
    # It floods for 60 s, then answers: a run that ends well before then (generously, for a loaded machine)
    # was stopped by the 2 s per-call timeout.
    run = provider_against(tmp_path, "provider_callback_flood.py", "60")
    assert run.seconds < 30, run.seconds
    [case] = run.cases
    assert "within 2s" in case.get("error", ""), case


@pytest.fixture
def short_tmp():
    """A folder with a short path: a unix socket's path may hold 107 bytes at most, and pytest's own
    folders (with TMPDIR under them) leave too little of that (the suite then falls back to /tmp, which the
    socket check would not see)."""
    folder = Path(tempfile.mkdtemp(prefix="hp-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("arg, note", [
    ("daemon", "at close, the implementation left 1 process(es) running besides its server; killed"),
    ("daemon,linger", "at close, the implementation left 1 process(es) running besides its server; killed"),
    ("linger", None),  # killed when it does not stop as its stdin closes: how gRPC servers end, no finding
])
def test_a_launched_grpc_provider_that_leaves_a_daemon_is_charged_for_it(arg, note, short_tmp):
    run = provider_against(short_tmp, "grpc_provider_daemon.py", arg, timeout=10, launch="--grpc-cmd")
    [case] = run.cases
    if note is None:
        assert run.code == 0 and case["status"] == "pass", case
    else:
        assert run.code == 1 and case["status"] == "error" and note in case["error"], case
    assert_bounded(run)


def test_a_deep_tmpdir_does_not_crash_a_grpc_run(tmp_path):
    deep = tmp_path / ("d" * 60)
    deep.mkdir()
    run = provider_against(deep, "grpc_provider_daemon.py", "", timeout=10, launch="--grpc-cmd")
    assert "Traceback" not in run.stderr and run.cases, run.stderr
