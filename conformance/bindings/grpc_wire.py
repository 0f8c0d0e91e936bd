"""What every gRPC binding shares: addresses, servers, and the error form.

A failure travels as a gRPC status whose details carry the ContextError
(WIRE.md: google.rpc.Status details, type URL of
pluggableharness.context.v1.ContextError). Every other detail, such as the
google.rpc.ErrorInfo the upstream SDK sends instead, is kept as JSON for the
checks to judge (ruling R-ERROR-DETAIL-FORM).
"""

from __future__ import annotations

import shutil
import tempfile
from concurrent import futures
from pathlib import Path

import grpc
from google.protobuf import any_pb2, json_format
from google.rpc import error_details_pb2, status_pb2  # noqa: F401  (registers the google.rpc detail types)
from grpc_status import rpc_status

from conformance.bindings import trace
from conformance.bindings.base import CallFailed, HarnessError, LaunchError, SuiteSetupError
from conformance.wire import forms
from conformance.wire.pb.pluggableharness.context.v1 import context_pb2

_DETAILS_KEY = "grpc-status-details-bin"
# A provider's error travels in the trailers, which gRPC's C core caps at 8 KiB by default; Go's default is 16 MiB.
# A channel that receives a provider's failures takes these, so a 40 KiB message reaches the kernel it was sent to.
CHANNEL_OPTIONS = [("grpc.max_metadata_size", 1 << 20)]
_CONTEXT_ERROR_TYPE = "pluggableharness.context.v1.ContextError"


class SocketDir:
    """A private directory for unix sockets, removed with everything in it. When `parent` is too deep for
    a socket path (108 bytes at most on Linux) it goes in the temporary directory, or else in /tmp."""

    LONGEST = 100 - len("/ctxconf-sock-xxxxxxxx/") - len("kernel-callback.sock")

    def __init__(self, parent: Path | None = None):
        candidates = [p for p in (parent, Path(tempfile.gettempdir()), Path("/tmp")) if p is not None]
        short = [p for p in candidates if len(str(p.resolve()).encode()) <= self.LONGEST]
        if not short:
            raise LaunchError(f"no directory short enough for a unix socket path among {candidates}")
        try:
            short[0].mkdir(parents=True, exist_ok=True)
            self.path = Path(tempfile.mkdtemp(prefix="ctxconf-sock-", dir=str(short[0])))
        except OSError as exc:
            raise LaunchError(f"cannot make a directory for unix sockets in {short[0]}: {exc.strerror}") from None

    def address(self, name: str) -> str:
        return f"unix:{self.path / (name + '.sock')}"

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def server(workers: int = 8) -> grpc.Server:
    return grpc.server(futures.ThreadPoolExecutor(max_workers=workers), interceptors=trace.server_interceptors())


def start(grpc_server: grpc.Server, address: str, what: str = "a gRPC server of the suite's own") -> None:
    """Listen on address. A failure is the machine's or the suite's, never the implementation's: it says so."""
    try:
        bound = grpc_server.add_insecure_port(address)
    except RuntimeError as exc:  # grpcio raises for a unix socket it cannot bind
        bound, why = 0, f": {exc}"
    else:
        why = ""
    if bound == 0:
        raise SuiteSetupError(f"{what} cannot listen on {address}{why} (set-up of ctxconf itself, not a fault of "
                              "the implementation under test)")
    grpc_server.start()


def wait_ready(channel: grpc.Channel, timeout: float, what: str) -> None:
    try:
        grpc.channel_ready_future(channel).result(timeout=timeout)
    except grpc.FutureTimeoutError:
        raise HarnessError(f"{what} did not accept connections within {timeout:g}s") from None


def failure_from(error: grpc.RpcError) -> CallFailed:
    """A gRPC error as the suite's CallFailed: its ContextError detail, and every other detail as JSON."""
    code = error.code().name if error.code() else "UNKNOWN"
    context_error, details = None, []
    for detail in _status_details(error):
        if detail.type_url.endswith("/" + _CONTEXT_ERROR_TYPE):
            found = context_pb2.ContextError()
            detail.Unpack(found)
            context_error = forms.to_json(found)
        else:
            details.append(_detail_json(detail))
    return CallFailed(code, error.details() or "", context_error, details)


def _status_details(error: grpc.RpcError) -> list[any_pb2.Any]:
    try:
        status = rpc_status.from_call(error)
    except ValueError:
        # The detail's code or message disagrees with the call's. The call's own code is what the
        # checks judge, so the details still count: read them without grpc_status's consistency check.
        status = next((status_pb2.Status.FromString(value) for key, value in error.trailing_metadata()
                       if key == _DETAILS_KEY), None)
    return list(status.details) if status else []


def _detail_json(detail: any_pb2.Any) -> dict:
    try:
        return json_format.MessageToDict(detail, preserving_proto_field_name=True)
    except (TypeError, json_format.SerializeToJsonError):  # a type this process has no descriptor for
        return {"@type": detail.type_url}


def abort(context: grpc.ServicerContext, failure: CallFailed) -> None:
    """End an RPC with the failure's code, message, ContextError detail and other details."""
    code = getattr(grpc.StatusCode, failure.code, grpc.StatusCode.UNKNOWN)
    status = status_pb2.Status(code=code.value[0], message=failure.message)
    if failure.context_error:
        status.details.add().Pack(forms.parse("ContextError", failure.context_error))
    for extra in failure.details:
        status.details.append(json_format.ParseDict(extra, any_pb2.Any()))
    context.abort_with_status(rpc_status.to_status(status))
