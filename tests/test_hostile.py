"""The hostile-implementation corpus (tests/hostile/): each shim misbehaves in
one way, and `ctxconf kernel` against it still ends with a report, a per-case
error naming the cause and exit 1, in bounded memory, leaving no process
running and no temporary directory behind (issue 12)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from conformance.data import paths

from tests.conftest import ROOT

HOSTILE = Path(__file__).resolve().parent / "hostile"
ONE = "kernel/budget/exact-tokenizer"  # one case, one assemble
TWO = "kernel/budget/exact"            # that one, then kernel/budget/exactly-at-budget-kept
# ctxconf as its console script runs, printing its own peak memory (its children's are not its own) at exit:
# the kernel's high-water mark of its address space (VmHWM). Not getrusage's ru_maxrss, which Linux carries
# over an exec from the process that forked it: under pytest-xdist it is the worker's size, not ctxconf's.
MEASURED = ("import atexit, runpy, sys; atexit.register(lambda: print('peak-rss-kb', "
            "next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM:')), "
            "file=sys.stderr)); sys.argv[0] = 'ctxconf'; runpy.run_module('conformance', run_name='__main__')")


@dataclass
class Run:
    code: int
    cases: list[dict]
    stderr: str
    seconds: float
    peak_mb: float


def _stat(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rpartition(")")[2].split()


def _marked(token: str) -> list[int]:
    """Running processes with the run's token in their environment or command line: the shim, and all
    it started (the shims put the token on the command line of what they start with a clean environment)."""
    found = []
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            if _stat(pid)[0] != "Z" and any(token.encode() in Path(f"/proc/{pid}/{part}").read_bytes()
                                            for part in ("environ", "cmdline")):
                found.append(pid)
        except OSError:
            pass
    return found


def _descendants(ancestor: int) -> set[int]:
    parents = {}
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            parents[pid] = int(_stat(pid)[1])
        except (OSError, ValueError, IndexError):
            pass
    found, grew = set(), True
    while grew:
        more = {pid for pid, parent in parents.items() if (parent == ancestor or parent in found) and pid not in found}
        found |= more
        grew = bool(more)
    return found


def ctxconf_against(tmp_path: Path, shim: str, arg: str = "", cases: str = ONE, timeout: float = 2.0,
                    interrupt: signal.Signals | None = None, role: str = "kernel", launch: str = "--stdio",
                    extra: tuple[str, ...] = (), running: int = 2) -> Run:
    """Run `ctxconf ROLE LAUNCH 'python SHIM ARG' EXTRA...` against a hostile shim; assert that it leaves
    nothing behind: no process of the run (running, in the test's process tree or anywhere else), no
    ctxconf-* temporary directory, and no unix socket under the run's private TMPDIR, open or on disk."""
    token, tmp, report = uuid.uuid4().hex, tmp_path / "tmp", tmp_path / "report.json"
    tmp.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp), "HOSTILE_TOKEN": token}
    argv = [sys.executable, "-c", MEASURED, role, launch, f"{sys.executable} {HOSTILE / shim} {arg}", *extra,
            "--env", "HOSTILE_TOKEN", "-k", cases, "--timeout", str(timeout), "--report", str(report)]
    ours_before = _descendants(os.getpid())
    assert _unix_sockets(tmp) == set()
    started = time.monotonic()
    process = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if interrupt is not None:
            _when(lambda: len(_marked(token)) >= running, f"{running} processes of {shim} (and daemons) running",
                  within=20.0 * (running // 2))  # more launches, more start-up on a loaded machine
            process.send_signal(interrupt)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
        process.wait()
        leftovers = _marked(token)
        for pid in leftovers:  # a failing test must not leave them behind either
            os.kill(pid, signal.SIGKILL)
    seconds = time.monotonic() - started
    assert leftovers == [], f"left running: {leftovers}\n{err}"
    assert _descendants(os.getpid()) - ours_before == set()
    assert list(tmp.glob("ctxconf-*")) == [], "the temporary directory is removed"
    assert _unix_sockets(tmp) == set(), "no unix socket of the run is left, open or on disk"
    peak = [int(line.split()[1]) for line in err.splitlines() if line.startswith("peak-rss-kb ")]
    cases_run = json.loads(report.read_text())["cases"] if report.exists() else []
    return Run(process.returncode, cases_run, err, seconds, peak[0] / 1024 if peak else 0.0)


def _unix_sockets(folder: Path) -> set[str]:
    """Unix sockets under `folder`: bound ones still open anywhere on the machine (/proc/net/unix names
    them even once their file is gone), and socket files left on disk."""
    prefix = str(folder)
    try:
        lines = Path("/proc/net/unix").read_text(errors="replace").splitlines()[1:]
    except OSError:
        lines = []
    open_ = {fields[7] for fields in (line.split(None, 7) for line in lines)
             if len(fields) == 8 and fields[7].startswith(prefix)}
    on_disk = {str(path) for path in folder.rglob("*") if path.is_socket()}
    return open_ | on_disk


def _when(condition, what: str, within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"never saw {what}"
        time.sleep(0.05)


@pytest.mark.parametrize("shim, arg, cause, timeout", [
    ("setsid_grandchild.py", "hang", "no answer within 2s", 2),
    ("setsid_grandchild.py", "", "after stop, the implementation left 1 process(es) running; killed", 2),
    ("long_line.py", "", "wrote a line longer than 4194304 bytes", 2),
    ("stderr_flood.py", "", "closed its stdout (exited with code 3)", 10),
    ("deep_json.py", "unclosed", "nested too deeply", 2),
    ("deep_json.py", "deep", "nested deeper than 64 levels", 2),
    ("huge_int.py", "", "Exceeds the limit (4300 digits)", 2),
    ("slow_drip.py", "", "no answer within 2s", 2),
    ("half_line.py", "", "not JSON: '{\"id\": 2, \"res'", 2),
    ("binary_garbage.py", "", "not JSON", 2),
    ("closes_stdin.py", "", "closed its stdin", 2),
    ("fork_bomb.py", "", "no answer within 2s", 2),
    ("ignores_stop.py", "", "did not exit after stop; it was killed", 2),
    ("ignores_stop.py", "silent", "did not exit after stop (which it did not answer either)", 2),
])
def test_hostile_shim_is_a_case_error(shim, arg, cause, timeout, tmp_path):
    run = ctxconf_against(tmp_path, shim, arg, timeout=timeout)
    assert run.code == 1, run.stderr
    [case] = run.cases
    assert case["status"] == "error" and cause in case["error"], case["error"]
    assert len(case["error"]) < 10_000, "what is kept of stderr is bounded"
    assert 0 < run.peak_mb < 300, run.peak_mb


def test_a_second_reply_is_charged_to_the_case_that_got_it(tmp_path):
    run = ctxconf_against(tmp_path, "duplicate_reply.py", str(tmp_path / "duplicated"), cases=TWO)
    assert run.code == 1, run.stderr
    first, second = run.cases
    assert first["status"] == "error" and "sent a second reply to request 3 (assemble)" in first["error"]
    assert second["status"] == "pass", second.get("error")


def test_a_target_that_never_starts_is_not_relaunched_for_every_case(tmp_path):
    launches = tmp_path / "launches"
    run = ctxconf_against(tmp_path, "never_starts.py", str(launches), cases="kernel/budget/")
    assert run.code == 1, run.stderr
    assert len(launches.read_text().splitlines()) == 3, "the first start, then two cases: three in a row failed"
    budget_vectors = len(list((paths.VECTORS / "kernel" / "budget").glob("*.yaml")))
    assert len(run.cases) == budget_vectors and all(c["status"] == "error" for c in run.cases)
    assert "no licence" in run.cases[0]["error"]
    assert "not launched again after 3 failed launches in a row" in run.cases[-1]["error"]
    assert "no licence" in run.cases[-1]["error"], "the same cause"


def test_a_terminated_parallel_run_cleans_up_after_every_worker(tmp_path):
    """Two workers, each in a case whose shim started a daemon and hangs (five processes with the run's
    first start): on SIGTERM the run ends at once, as a serial one does, with nothing of it left running."""
    run = ctxconf_against(tmp_path, "setsid_grandchild.py", "hang", cases=TWO, timeout=30,
                          interrupt=signal.SIGTERM, extra=("--jobs", "2"), running=5)
    assert run.code == 128 + signal.SIGTERM, run.stderr
    assert run.seconds < 20


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_terminated_run_cleans_up_like_an_interrupted_one(signum, tmp_path):
    run = ctxconf_against(tmp_path, "setsid_grandchild.py", "hang", timeout=30, interrupt=signum)
    assert run.code == 128 + signum, run.stderr
    assert "interrupted" in run.stderr
    assert run.seconds < 20
