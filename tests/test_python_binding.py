"""The python binding runs each op on its own long-lived thread: an op that never returns is given up on after
the timeout, and an op that exits the thread's way (SystemExit) is an error, not a hang."""

from __future__ import annotations

import threading

import pytest

from conformance.bindings.base import KERNEL_PROTOCOL, HarnessError
from conformance.bindings.python import PythonBinding

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
