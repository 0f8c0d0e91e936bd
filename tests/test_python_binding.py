"""The python binding runs each op on its own long-lived thread: an op that never returns is given up on after
the timeout, and an op that exits the thread's way (SystemExit) is an error, not a hang."""

from __future__ import annotations

import os
import threading
import time

import pytest

from conformance.bindings.base import KERNEL_PROTOCOL, HarnessError
from conformance.bindings.python import PythonBinding, _Worker

RELEASE = threading.Event()


class Stuck:
    def hello(self, request, call):
        return {"implementation": {"name": "stuck", "version": "0", "language": "python"}}

    def load(self, request, call):
        RELEASE.wait(30)
        return {}

    def assemble(self, request, call):
        raise SystemExit(3)

    def stop(self, request, call):
        return {}


def test_an_op_that_never_returns_is_given_up_on_and_the_binding_is_broken():
    binding = PythonBinding("stuck", KERNEL_PROTOCOL, 0.3, factory=Stuck)
    binding.start()
    try:
        with pytest.raises(HarnessError, match="load did not return within 0.3s"):
            binding.request("load", {})
        assert binding.broken
        with pytest.raises(HarnessError, match="no longer usable"):
            binding.request("assemble", {})
    finally:
        RELEASE.set()
        binding.close()


def test_an_op_raising_system_exit_is_an_error_and_the_next_op_still_runs():
    binding = PythonBinding("stuck", KERNEL_PROTOCOL, 5, factory=Stuck)
    binding.start()
    try:
        with pytest.raises(HarnessError, match="assemble returned NoneType"):
            binding.request("assemble", {})
        assert binding.request("stop", {}) == {}
    finally:
        binding.close()


@pytest.mark.parametrize("hello", [{}, {"implementation": {"name": "", "version": "1", "language": "py"}},
                                   {"implementation": {"name": "k", "language": "py"}}])
def test_a_hello_without_what_the_harness_protocol_requires_is_a_harness_error(hello):
    """The report names the implementation by what it says of itself (found by mutation analysis: a hello of
    {} was taken as it came, over this binding only)."""
    class Vague:
        def hello(self, request, call):
            return hello
    binding = PythonBinding("test", KERNEL_PROTOCOL, 5.0, factory=Vague)
    with pytest.raises(HarnessError, match="hello result is malformed at"):
        binding.start()
    binding.close()


def test_an_abandoned_op_that_ends_later_is_no_later_ops_end_and_its_thread_then_goes():
    """The worker signals through pipes: the end an abandoned op writes must not be read as another op's."""
    release = threading.Event()
    worker = _Worker()
    assert not worker.run(lambda: release.wait(30), 0.2)
    assert not worker.run(lambda: None, 5)  # the thread is still in the first op: nothing more runs on it
    release.set()
    worker.stop()
    worker.thread.join(5)
    assert not worker.thread.is_alive()


def test_the_suites_own_time_during_an_op_is_given_back_to_its_time_limit():
    worker = _Worker()
    spent = {"seconds": 0.0}

    def suite_seconds() -> float:  # the suite is busy for as long as the op runs
        spent["seconds"] += 0.1
        return spent["seconds"]

    try:
        assert worker.run(lambda: time.sleep(0.5), 0.2, suite_seconds)
        assert not worker.run(lambda: time.sleep(0.5), 0.2)
    finally:
        worker.stop()


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts this process's open files in /proc")
def test_an_abandoned_op_keeps_only_its_threads_two_pipe_ends_and_those_go_with_the_thread():
    release = threading.Event()
    before = _open_fds()
    worker = _Worker()
    assert not worker.run(lambda: release.wait(30), 0.1)
    worker.stop()
    assert _open_fds() == before + 2, "the binding's own two ends are closed at stop, the thread's stay"
    release.set()  # the op ends: its end goes to a closed pipe, and the thread leaves, closing its two
    worker.thread.join(5)
    assert not worker.thread.is_alive() and _open_fds() == before
