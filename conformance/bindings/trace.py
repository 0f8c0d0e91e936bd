"""--trace FILE: every message exchanged with the implementation, as JSON lines.

One line per message: {"ts", "case", "binding", "direction", "message"}.
`direction` is "to_impl" (the suite sent it) or "from_impl" (the
implementation sent it); `case` is the case being served (null for what the
run itself exchanges: a launch before the first case, the final stop).
The docs (docs/tracing.md) describe the format.

Each binding reports at one seam: the stdio transport where a line is
written or parsed, the python binding where an op or a callback crosses
the driver/binding boundary, gRPC through a client interceptor on the
channel to the implementation and a server interceptor on every server the
suite runs (messages in proto3 JSON via google.protobuf.json_format). When no
trace is open, `record` returns at once and gRPC gets no interceptors.
"""

from __future__ import annotations

import datetime
import functools
import json
import threading
from pathlib import Path
from typing import IO

TO_IMPL, FROM_IMPL = "to_impl", "from_impl"

_active: "Tracer | None" = None

# Characters that are line breaks to str.splitlines() but that JSON leaves raw: escaped, so every reader sees
# one message per line.
_LINE_BREAKS = {ord(c): f"\\u{ord(c):04x}" for c in "\x85\u2028\u2029"}


class Tracer:
    def __init__(self, stream: IO[str]):
        self.stream = stream
        self.case: str | None = None
        self._lock = threading.Lock()  # gRPC callbacks arrive on server threads

    def write(self, binding: str, direction: str, message) -> None:
        line = json.dumps({"ts": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds"),
                           "case": self.case, "binding": binding, "direction": direction,
                           "message": message}, ensure_ascii=False, default=repr)
        line = line.translate(_LINE_BREAKS)
        with self._lock:
            self.stream.write(line + "\n")


def record(binding: str, direction: str, message) -> None:
    """The one call a binding makes per message. Free when no trace is open."""
    if _active is not None:
        _active.write(binding, direction, message)


def set_case(case_id: str | None) -> None:
    if _active is not None:
        _active.case = case_id


def append(lines: list[str]) -> None:
    """Lines another process traced (a worker of a parallel run), into the open trace as they are."""
    if _active is not None:
        with _active._lock:
            _active.stream.writelines(line + "\n" for line in lines)


class to_file:
    """`with to_file(path):` traces everything exchanged inside the block into `path` (None: no trace)."""

    def __init__(self, path: Path | None):
        self.path = path
        self.stream: IO[str] | None = None

    def __enter__(self) -> "to_file":
        global _active
        if self.path is not None:
            from conformance.data.schemas import InputError
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.stream = open(self.path, "w", encoding="utf-8")
            except OSError as exc:  # bad usage, exit 2, before anything runs
                raise InputError("--trace", f"cannot write {self.path}: {exc.strerror}") from None
            _active = Tracer(self.stream)
        return self

    def __exit__(self, *exc) -> None:
        global _active
        if self.stream is not None:
            _active = None
            self.stream.close()


# --- gRPC: proto3 JSON at the channel and at the servers ------------------------------------

# grpc and protobuf are imported only when a gRPC binding is traced: a run that needs neither starts faster.

def proto_json(message) -> dict | None:
    from google.protobuf import json_format
    from google.protobuf.message import Message
    return json_format.MessageToDict(message) if isinstance(message, Message) else message


def status_json(code, details: str | None, trailing) -> dict:
    """A failed call's status: its code name, message, and the google.rpc.Status details it carried."""
    from google.protobuf import json_format
    from google.rpc import status_pb2
    if isinstance(details, bytes):  # a server context's details() are the bytes set by abort
        details = details.decode("utf-8", "replace")
    found: dict = {"code": getattr(code, "name", "UNKNOWN"), "message": details or ""}
    for key, value in trailing or ():
        if key == "grpc-status-details-bin":
            try:
                found["details"] = json_format.MessageToDict(status_pb2.Status.FromString(value)).get("details", [])
            except Exception:  # a type this process cannot decode: the code and message still say what happened
                found["details"] = "undecodable"
    return found


def channel(binding: str, raw):
    """The channel to the implementation, traced when a trace is open."""
    if _active is None:
        return raw
    import grpc
    return grpc.intercept_channel(raw, _client_tracer()(binding))


def server_interceptors(binding: str = "grpc") -> tuple:
    """For every server the suite runs: what the implementation calls, and what the suite answers."""
    return (_server_tracer()(binding),) if _active is not None else ()


@functools.cache
def _client_tracer() -> type:
    import grpc

    class ClientTracer(grpc.UnaryUnaryClientInterceptor):
        def __init__(self, binding: str):
            self.binding = binding

        def intercept_unary_unary(self, continuation, details, request):
            record(self.binding, TO_IMPL, {"rpc": details.method, "request": proto_json(request)})
            outcome = continuation(details, request)
            error = outcome.exception()
            if error is None:
                record(self.binding, FROM_IMPL, {"rpc": details.method, "response": proto_json(outcome.result())})
            else:
                record(self.binding, FROM_IMPL, {"rpc": details.method, "status": status_json(
                    error.code(), error.details(), getattr(error, "trailing_metadata", lambda: ())())})
            return outcome

    return ClientTracer


@functools.cache
def _server_tracer() -> type:
    import grpc

    class ServerTracer(grpc.ServerInterceptor):
        def __init__(self, binding: str):
            self.binding = binding

        def intercept_service(self, continuation, details):
            return _traced_handler(self.binding, continuation(details), details.method)

    return ServerTracer


def _traced_handler(binding: str, handler, method: str):
    """A unary handler that records the request and the answer (a response or a status)."""
    if handler is None or handler.unary_unary is None:
        return handler  # streams (go-plugin's broker and stdio plumbing) are not the protocol's messages
    behaviour = handler.unary_unary

    def traced(request, context):
        record(binding, FROM_IMPL, {"rpc": method, "request": proto_json(request)})
        try:
            response = behaviour(request, context)
        except BaseException:
            record(binding, TO_IMPL, {"rpc": method, "status": status_json(
                context.code(), context.details(), context.trailing_metadata())})
            raise
        answer = {"response": proto_json(response)} if response is not None else \
            {"status": {"code": "(none: the suite held the call until the caller gave up)"}}
        record(binding, TO_IMPL, {"rpc": method, **answer})
        return response

    return handler._replace(unary_unary=traced)
