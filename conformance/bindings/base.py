"""The vocabulary every binding shares with the engine."""

from __future__ import annotations

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
