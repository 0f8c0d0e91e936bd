"""A kernel shim that crashes, hangs, writes garbage or breaks the protocol
gets a clear per-case error; the run goes on, and nothing is left running."""

import subprocess
import sys
import time

import pytest

from conformance.bindings.base import LaunchError
from tests.conftest import SHIMS, certify_stdio


def _shim(mode: str) -> str:
    return f"{sys.executable} {SHIMS / 'bad_kernel.py'} {mode}"


def _leftovers(mode: str) -> list[str]:
    time.sleep(0.2)
    found = subprocess.run(["pgrep", "-f", f"bad_kernel.py {mode}"], capture_output=True, text=True).stdout.split()
    sleepers = subprocess.run(["pgrep", "-f", "import time; time.sleep(300)"], capture_output=True, text=True).stdout.split()
    return found + sleepers


@pytest.mark.parametrize("mode, message", [
    ("crash", "exited with code 3"),
    ("garbage", "not JSON"),
    ("hang", "no answer within"),
    ("close", "closed its stdout"),
    ("wrong-id", "while request"),
    ("error", "kernel exploded"),
    ("spawn-and-hang", "no answer within"),
])
def test_misbehaving_kernel_gets_an_error_per_case(mode, message, kernel_vectors, tmp_path):
    cases = [v for v in kernel_vectors if v.id.startswith("kernel/chaining/")][:1] + \
            [v for v in kernel_vectors if v.id.startswith("kernel/budget/")][:2]
    started = time.monotonic()
    results = certify_stdio(_shim(mode), cases, tmp_path, timeout=1.0)
    assert [r.status for r in results] == ["error"] * len(cases), "every case errors; the run does not stop"
    assert all(message in (r.error or "") for r in results), results[0].error
    assert time.monotonic() - started < 20, "nothing may hang"
    assert _leftovers(mode) == [], "no child process may outlive the run"


def test_crash_report_carries_stderr(kernel_vectors, tmp_path):
    results = certify_stdio(_shim("crash"), kernel_vectors[:1], tmp_path, timeout=1.0)
    assert "simulated crash in assemble" in results[0].error


def test_kernel_that_dies_at_start_is_an_error_not_a_traceback(kernel_vectors, tmp_path):
    results = certify_stdio(_shim("no-hello"), kernel_vectors[:2], tmp_path, timeout=1.0)
    assert all(r.status == "error" and "could not start" in r.error for r in results)


def test_missing_command_is_a_launch_error(kernel_vectors, tmp_path):
    with pytest.raises(LaunchError, match="no such executable"):
        certify_stdio("definitely-not-a-command-ctxconf", kernel_vectors[:1], tmp_path)
