"""The python binding: an in-process object built by MODULE:FACTORY.

The object has one method per op, named like the op (hello, load, assemble,
count_tokens, stop for kernels; hello, get_capabilities, configure,
contribute, describe, stop for providers). Each takes the op's request
fields as a dict and a `call(name, provider, request)` function for
callbacks, and returns the op's result as a dict. `call` returns the
callback's result or raises an exception carrying `code`, `message`,
`context_error` and `details` (conformance.bindings.base.CallFailed). An op may itself
raise CallFailed to answer with a structured error (a provider's Configure
or Contribute); the engine decides what that error means.

Messages cross as JSON round trips, so the object shares no state with the
suite and sees exactly what a stdio shim would.
"""

from __future__ import annotations

import importlib
import math
import os
import select
import threading
import time
import traceback

from conformance.bindings import trace
from conformance.bindings.base import (CALLBACK_WALL, CallFailed, Hang, HarnessError, LaunchError, OnCallback,
                                       checked_hello, deadline_exceeded, no_callbacks, no_suite_time)
from conformance.wire.forms import json_copy  # what crossing as a JSON line makes of a value


def load_factory(target: str):
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise LaunchError(f"--python expects MODULE:FACTORY, got {target!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise LaunchError(f"cannot import {module_name!r}: {exc}") from None
    except Exception as exc:  # the module's own code failed while it was imported
        raise LaunchError(f"cannot import {module_name!r}: importing it raised "
                          f"{type(exc).__name__}: {exc}") from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise LaunchError(f"{module_name!r} has no callable {attr!r}")
    return factory


class PythonBinding:
    name = "python"

    def __init__(self, target: str, protocol: str, timeout: float, factory=None):
        self.factory = factory or load_factory(target)
        self.target = target
        self.protocol = protocol
        self.timeout = timeout
        self.suite_seconds = no_suite_time
        self.obj = None
        self.features: tuple[str, ...] = ()
        self.implementation: dict = {}
        self.broken = False
        self.closing_note: str | None = None  # nothing to close but a thread
        self._worker: _Worker | None = None

    def start(self) -> dict:
        self._worker = _Worker()
        try:
            self.obj = self.factory()
        except Exception:
            raise HarnessError("the factory raised:\n" + traceback.format_exc(limit=6)) from None
        hello = checked_hello(self.request("hello", {"protocol": self.protocol}), self.protocol)
        self.implementation = hello["implementation"]
        # In-process, a kernel's callbacks from several threads reach the suite as they happen.
        self.features = (*(hello.get("features", ()) if isinstance(hello, dict) else ()), "concurrent_callbacks")
        return hello

    def request(self, op: str, fields: dict, on_callback: OnCallback = no_callbacks) -> dict:
        if self.broken:
            raise HarnessError("the implementation is no longer usable after an earlier error")
        method = getattr(self.obj, op, None)
        if not callable(method):
            raise HarnessError(f"the object has no {op}() method")

        def call(name: str, provider: str | None, request: dict) -> dict:
            trace.record("python", trace.FROM_IMPL, {"call": name, "provider": provider, "request": request})
            try:
                result = json_copy(on_callback(name, provider, json_copy(request)))
            except Hang:
                failure = deadline_exceeded()
            except CallFailed as failed:
                failure = CallFailed.from_json(json_copy(failed.to_json()))
            else:
                trace.record("python", trace.TO_IMPL, {"result": result})
                return result
            trace.record("python", trace.TO_IMPL, {"error": failure.to_json()})
            raise failure from None

        outcome: dict = {}

        def run() -> None:
            try:
                outcome["result"] = json_copy(method(json_copy(fields), call))
            except CallFailed as failure:  # a structured error answer: the op's result, not a crash
                outcome["failed"] = CallFailed.from_json(json_copy(failure.to_json()))
            except Exception:
                outcome["error"] = traceback.format_exc(limit=8)

        trace.record("python", trace.TO_IMPL, {"op": op, **fields})
        if not self._worker.run(run, self.timeout, self.suite_seconds):
            self.broken = True  # the thread cannot be stopped; the object is abandoned
            raise HarnessError(f"{op} did not return within {self.timeout:g}s")
        trace.record("python", trace.FROM_IMPL, {"error": outcome["failed"].to_json()} if "failed" in outcome
                     else {"result": outcome.get("result")} if "error" not in outcome else {"raised": outcome["error"]})
        if "failed" in outcome:
            raise outcome["failed"]
        if "error" in outcome:
            raise HarnessError(f"{op} raised:\n{outcome['error']}")
        if not isinstance(outcome.get("result"), dict):
            raise HarnessError(f"{op} returned {type(outcome.get('result')).__name__}, not a dict")
        return outcome["result"]

    def stderr(self) -> str:
        return ""

    def close(self) -> None:
        if callable(getattr(self.obj, "stop", None)) and not self.broken and not getattr(self, "stopped", False):
            try:
                self.request("stop", {})  # through request(), so that a trace sees it too
            except Exception:
                pass
        self.obj = None
        if self._worker is not None:
            self._worker.stop()
            self._worker = None


class _Worker:
    """One thread that runs the object's ops, one after another, for as long as the binding lives. Each op
    runs off the caller's thread, so that one that never returns can be given up on; starting a thread per
    op cost 0.1-0.5 ms, more than the rest of a round trip.

    The op and its end are signalled through two pipes. Writing to a pipe lets go of the interpreter lock
    before it wakes the other thread, which can then run at once; releasing a lock wakes it while the lock is
    still held, and each side then wakes twice (5 us of CPU a hand-off against 10 to 14 us, measured). Each
    side closes the ends it uses: the binding its two at stop(), the thread its own two once it leaves, so that
    none is closed under a side still using it, and a thread stuck for good in an abandoned op holds two."""

    def __init__(self) -> None:
        self._work = None
        self._abandoned = False
        self._go_read, self._go_write = os.pipe()
        self._done_read, self._done_write = os.pipe()
        self._done = select.poll()
        self._done.register(self._done_read, select.POLLIN)
        self.thread = threading.Thread(target=self._serve, daemon=True, name="ctxconf-python-binding")
        self.thread.start()

    def _serve(self) -> None:
        try:
            while os.read(self._go_read, 1) == _RUN:
                work, self._work = self._work, None
                try:
                    work()
                except BaseException:  # SystemExit from the object: its op simply has no result, as before
                    pass
                finally:
                    try:
                        os.write(self._done_write, _DONE)
                    except BrokenPipeError:  # an abandoned op that ended after stop(): nobody waits for its end
                        pass
        finally:
            os.close(self._go_read)
            os.close(self._done_write)

    def run(self, work, timeout: float, suite_seconds=no_suite_time) -> bool:
        """Run `work` on the thread; False if it has not finished within `timeout` seconds of its own time
        (the suite's, as suite_seconds grows, given back; at most CALLBACK_WALL timeouts of wall clock). An
        op that does not finish is abandoned with its thread: a daemon, which never keeps the suite from exiting,
        and which runs nothing after it."""
        if self._abandoned:
            return False
        self._work = work
        os.write(self._go_write, _RUN)
        wall, credited, wait = time.monotonic() + timeout * CALLBACK_WALL, suite_seconds(), timeout
        try:
            while not self._finished(max(min(wait, wall - time.monotonic()), 0)):
                wait = suite_seconds() - credited
                if wait <= 0 or time.monotonic() >= wall:
                    self._abandoned = True  # should it end after all, the end it writes is no later op's
                    return False
                credited += wait
        except BaseException:  # interrupted while the op runs (^C): its end, whenever it comes, is no later op's
            self._abandoned = True
            raise
        return True

    def _finished(self, timeout: float) -> bool:
        if not self._done.poll(math.ceil(timeout * 1000)):
            return False
        os.read(self._done_read, 1)
        return True

    def stop(self) -> None:
        os.write(self._go_write, _STOP)  # a thread stuck in an abandoned op reads it if the op ever ends
        self._done.unregister(self._done_read)
        os.close(self._go_write)
        os.close(self._done_read)


_RUN, _DONE, _STOP = b"r", b"d", b"s"
