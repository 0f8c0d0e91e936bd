"""The vocabulary every binding shares with the engine."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Callable, Protocol

KERNEL_PROTOCOL = "ctxconf-kernel/1"
PROVIDER_PROTOCOL = "ctxconf-provider/1"


class CallFailed(Exception):
    """A call answered with an error: a gRPC status code name, a message, the
    ContextError the status carried, if any, and its other details (proto3
    JSON of google.protobuf.Any, each with its "@type"). Raised by whoever plays
    the callee."""

    def __init__(self, code: str, message: str = "", context_error: dict | None = None,
                 details: list[dict] | None = None):
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.context_error = code, message, context_error
        self.details = list(details or [])

    def to_json(self) -> dict:
        data = {"code": self.code, "message": self.message}
        if self.context_error is not None:
            data["context_error"] = self.context_error
        if self.details:
            data["details"] = self.details
        return data

    @classmethod
    def from_json(cls, data: dict) -> "CallFailed":
        details = data.get("details")
        return cls(data.get("code", "UNKNOWN"), data.get("message", ""), data.get("context_error"),
                   details if isinstance(details, list) else None)


class Crash(CallFailed):
    """The callee's process dies in the middle of the call. A launched plugin
    exits on the spot; elsewhere the caller gets what its transport would then
    report: UNAVAILABLE, with no ContextError (R-PLUGIN-CRASH)."""

    def __init__(self) -> None:
        super().__init__("UNAVAILABLE", "the provider's process died during the call")


class Hang(Exception):
    """The callee never answers. A binding that cannot hold a call open answers
    DEADLINE_EXCEEDED instead, as the caller's transport would after its deadline.
    One that can (gRPC) holds it, and notes after how long the caller gave up."""

    def __init__(self) -> None:
        super().__init__("the callee never answers")
        self.abandoned_after: float | None = None  # seconds, when the caller gave up on a held call


def deadline_exceeded() -> CallFailed:
    return CallFailed("DEADLINE_EXCEEDED", "no answer before the deadline")


class HarnessError(Exception):
    """The implementation crashed, hung, wrote garbage or broke the harness
    protocol. The case gets status error; the run goes on."""


CALLBACK_WALL = 10  # how many per-call timeouts of wall clock one op may take, the suite's answers to callbacks and all


def no_suite_time() -> float:
    """A binding's `suite_seconds` when nothing of the suite's own runs while the implementation works. The
    plugin-launching mode replaces it with the time its fake plugins spent starting and answering, which a
    binding gives back to the implementation's per-call timeout."""
    return 0.0


class OwnClock:
    """The implementation's own time on one call: the wall clock since it began, less what the suite spent
    meanwhile (as suite_seconds grew), which is given back to its timeout; CALLBACK_WALL timeouts of wall clock
    end the call all the same, so that endless answers still end."""

    def __init__(self, timeout: float, suite_seconds: Callable[[], float] = no_suite_time):
        self.timeout, self.suite_seconds = timeout, suite_seconds
        self.started, self.suite_before = time.monotonic(), suite_seconds()

    def deadline(self) -> float:
        """The monotonic time at which the call will have spent its own time, if the suite spends no more:
        the time to sleep to, and look again."""
        given_back = self.suite_seconds() - self.suite_before
        return min(self.started + self.timeout + given_back, self.started + self.timeout * CALLBACK_WALL)


class AnsweringTime:
    """The seconds the suite has spent answering an implementation's calls (its callbacks, or a kernel's calls
    to the fake providers): the suite's time, which the implementation's per-call timeout gives back. An answer
    still being given counts for what it has taken so far, so that a deadline reached in the middle of a slow
    answer gives that one back too."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spent = 0.0      # by the answers given
        self._open = 0         # answers being given, and the sum of their start times
        self._opened_at = 0.0

    @contextlib.contextmanager
    def answering(self):
        started = time.monotonic()
        with self._lock:
            self._open, self._opened_at = self._open + 1, self._opened_at + started
        try:
            yield
        finally:
            with self._lock:
                self._open, self._opened_at = self._open - 1, self._opened_at - started
                self._spent += time.monotonic() - started

    def seconds(self) -> float:
        with self._lock:
            return self._spent + self._open * time.monotonic() - self._opened_at


class OwnTimeLimit:
    """Ends a blocking call once the implementation has spent its own time on it (OwnClock): a thread of the
    limit's own sleeps to the deadline of the call in flight, looks again there (the suite may have given time
    back meanwhile), and once the time is spent calls `cancel` (a gRPC binding closes its channel, which ends
    the call); `fired` then says why the call failed. One thread for the binding's life, which a call wakes only
    when its deadline comes before the one the thread sleeps to: grpcio's futures start a thread for every call,
    which cost 2 to 3 times a bare unary call, and a wake-up per call or a 20 ms poll is work for nothing."""

    def __init__(self, cancel: Callable[[], None]):
        self.cancel = cancel
        self.fired = False
        self._call: OwnClock | None = None  # the call in flight
        self._sleeping_until: float | None = None  # the thread's wake-up; None: waiting for a call
        self._stopped = False
        self._changed = threading.Condition()
        threading.Thread(target=self._watch, daemon=True, name="ctxconf-own-time").start()

    @contextlib.contextmanager
    def watching(self, timeout: float, suite_seconds: Callable[[], float] = no_suite_time):
        call = OwnClock(timeout, suite_seconds)
        with self._changed:
            self._call = call
            if self._sleeping_until is None or call.started + timeout < self._sleeping_until:
                self._changed.notify()
        try:
            yield
        finally:
            with self._changed:
                self._call = None

    def _watch(self) -> None:
        with self._changed:
            while not self._stopped:
                call = self._call
                if call is None:
                    self._sleeping_until = None
                    self._changed.wait()
                    continue
                self._sleeping_until = call.deadline()
                if time.monotonic() >= self._sleeping_until:  # in flight still (the lock is held): its time is up
                    self.fired = True
                    self.cancel()
                    return
                self._changed.wait(self._sleeping_until - time.monotonic())

    def stop(self) -> None:
        with self._changed:
            self._stopped = True
            self._changed.notify()


class SuiteSetupError(HarnessError):
    """A part of the suite itself (a fake provider's server, the tokenizer's) could not be set up: the case
    errors like any other harness error, and the message says the implementation is not to blame."""


class LaunchError(Exception):
    """The implementation cannot be started at all (no such command, module or
    factory): bad usage, exit code 2."""


# on_callback(call, provider, request) -> result, or raises CallFailed / Hang.
OnCallback = Callable[[str, "str | None", dict], dict]


SCHEMA_OF = {KERNEL_PROTOCOL: "kernel-protocol.json", PROVIDER_PROTOCOL: "provider-protocol.json"}


def checked_hello(hello, protocol: str) -> dict:
    """The hello result, or a HarnessError naming the first field the harness protocol requires and it lacks
    (the report names the implementation by what it says of itself)."""
    from conformance.data import schemas  # jsonschema words the error; loaded on the first start
    problems = schemas.problems(f"{SCHEMA_OF[protocol]}#/$defs/HelloResult", hello)
    if problems:
        field, message = problems[0]
        raise HarnessError(f"hello result is malformed at {field}: {message}")
    return hello


def no_callbacks(call: str, provider: str | None, request: dict) -> dict:
    raise CallFailed("FAILED_PRECONDITION", f"no callbacks are expected during this op ({call})")


class Binding(Protocol):
    """One live connection to an implementation under test."""

    name: str
    features: tuple[str, ...]
    implementation: dict
    broken: bool  # after a harness error: no further op may be sent
    closing_note: str | None  # set by close(): what closing found against the protocol (killed, left processes)
    stopped: bool  # told to stop already (the plugin-launching mode stops a kernel itself): close() does not again

    def start(self) -> dict: ...

    def request(self, op: str, fields: dict, on_callback: OnCallback = no_callbacks) -> dict: ...

    def close(self) -> None: ...

    def stderr(self) -> str: ...
