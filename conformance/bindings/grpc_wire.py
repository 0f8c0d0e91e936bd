"""What every gRPC binding shares: addresses, servers, and the error form.

A failure travels as a gRPC status whose details carry the ContextError
(WIRE.md: google.rpc.Status details, type URL of
pluggableharness.context.v1.ContextError). A google.rpc.ErrorInfo detail,
which the upstream SDK sends instead, is recognized only to say so
(ruling R-ERROR-DETAIL-FORM).
"""

from __future__ import annotations

import shutil
import tempfile
from concurrent import futures
from pathlib import Path

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

from conformance.bindings.base import CallFailed, HarnessError
from conformance.wire import forms
from conformance.wire.pb.pluggableharness.context.v1 import context_pb2

_DETAILS_KEY = "grpc-status-details-bin"
_CONTEXT_ERROR_TYPE = "pluggableharness.context.v1.ContextError"
_UPSTREAM_DOMAIN = "context.pluggableharness.dev"


class SocketDir:
    """A private directory for unix sockets, removed with everything in it."""

    def __init__(self, parent: Path | None = None):
        if parent is not None:
            parent.mkdir(parents=True, exist_ok=True)
        self.path = Path(tempfile.mkdtemp(prefix="ctxconf-sock-", dir=str(parent) if parent else None))

    def address(self, name: str) -> str:
        return f"unix:{self.path / (name + '.sock')}"

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def server(workers: int = 8) -> grpc.Server:
    return grpc.server(futures.ThreadPoolExecutor(max_workers=workers))


def start(grpc_server: grpc.Server, address: str) -> None:
    if grpc_server.add_insecure_port(address) == 0 and not address.startswith("unix:"):
        raise HarnessError(f"cannot listen on {address}")
    grpc_server.start()


def wait_ready(channel: grpc.Channel, timeout: float, what: str) -> None:
    try:
        grpc.channel_ready_future(channel).result(timeout=timeout)
    except grpc.FutureTimeoutError:
        raise HarnessError(f"{what} did not accept connections within {timeout:g}s") from None


def failure_from(error: grpc.RpcError) -> CallFailed:
    """A gRPC error as the suite's CallFailed, with its ContextError when it carries one."""
    code = error.code().name if error.code() else "UNKNOWN"
    message = error.details() or ""
    context_error, note = None, ""
    for key, value in (error.trailing_metadata() or ()):
        if key != _DETAILS_KEY:
            continue
        status = status_pb2.Status.FromString(value)
        for detail in status.details:
            if detail.type_url.endswith("/" + _CONTEXT_ERROR_TYPE):
                found = context_pb2.ContextError()
                detail.Unpack(found)
                context_error = forms.to_json(found)
            elif detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                detail.Unpack(info)
                if info.domain == _UPSTREAM_DOMAIN:
                    note = f" [carries a google.rpc.ErrorInfo (reason {info.reason}) but no ContextError]"
    return CallFailed(code, message + note, context_error)


def abort(context: grpc.ServicerContext, failure: CallFailed) -> None:
    """End an RPC with the failure's code, message and ContextError detail."""
    code = getattr(grpc.StatusCode, failure.code, grpc.StatusCode.UNKNOWN)
    status = status_pb2.Status(code=code.value[0], message=failure.message)
    if failure.context_error:
        detail = any_pb2.Any()
        detail.Pack(forms.parse("ContextError", failure.context_error))
        status.details.append(detail)
    context.set_trailing_metadata(((_DETAILS_KEY, status.SerializeToString()),))
    context.abort(code, failure.message)


