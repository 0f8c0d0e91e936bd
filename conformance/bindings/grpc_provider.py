"""The gRPC bindings for providers: the suite dials the provider's real
pluggableharness.context.v1.ContextService and serves
pluggableharness.kernel.v1.KernelCallbackService back to it (CountTokens; every
other method answers UNIMPLEMENTED, as grpc does for undeclared methods).

    --grpc ADDR --callback ADDR   dial a running provider; the suite serves the callback at ADDR
    --grpc-cmd CMD                launch one: it listens on $CTXCONF_LISTEN and finds the
                                  callback service at $CTXCONF_KERNEL_CALLBACK

The go-plugin launch (go_plugin.py) reuses this binding once connected.
"""

from __future__ import annotations

from pathlib import Path

import grpc
from google.protobuf import json_format

from conformance.bindings import process_tree, trace
from conformance.bindings.base import (CALLBACK_WALL, AnsweringTime, CallFailed, HarnessError, OnCallback,
                                       OwnTimeLimit, no_callbacks)
from conformance.bindings.grpc_wire import SocketDir, abort, failure_from, server, start, wait_ready
from conformance.bindings.jsonlines import JsonLinesProcess
from conformance.wire import forms
from conformance.wire.pb.pluggableharness.context.v1 import context_pb2, context_pb2_grpc
from conformance.wire.pb.pluggableharness.kernel.v1 import kernel_pb2, kernel_pb2_grpc

LISTEN_ENV, CALLBACK_ENV = "CTXCONF_LISTEN", "CTXCONF_KERNEL_CALLBACK"
_OPS = {"get_capabilities": ("GetCapabilities", context_pb2.GetCapabilitiesRequest),
        "configure": ("Configure", context_pb2.ConfigureRequest),
        "contribute": ("Contribute", context_pb2.ContextRequest),
        "describe": ("Describe", context_pb2.DescribeRequest)}


def close_launched(process: JsonLinesProcess, grace: float, stop: str | None = None) -> str | None:
    """Close a launched server (JsonLinesProcess.close: stdin closed, `grace` to exit, then its whole
    tree killed) and say what of that broke the protocol, as StdioBinding.close does: a server that
    answered `stop` (the RPC that asks it to exit) and still had to be killed, and processes left
    running besides the server and its own session (a daemon that escaped it, or what outlived it).
    Without a stop RPC, being killed is how a gRPC server ends: that alone is not reported."""
    root = process.process.pid if process.process else None
    own = {pid for pid, row in process_tree.process_table().items() if row[3] == root} if root else set()
    killed = process.close(grace=grace)
    left = killed - {root} - own if root in killed else killed
    notes = []
    if stop and root in killed:
        notes.append(f"the implementation did not exit within {grace:g}s of {stop}; it was killed")
    if left:
        notes.append(f"at close, the implementation left {len(left)} process(es) running besides its server; killed")
    return "; ".join(notes) or None


class _KernelCallbacks(kernel_pb2_grpc.KernelCallbackServiceServicer):
    """The suite's side of the callback channel; answers through the current op's on_callback. The time it takes
    is the suite's, which the provider's per-call timeout gives back."""

    def __init__(self) -> None:
        self.on_callback: OnCallback = no_callbacks
        self.suite_time = AnsweringTime()

    def CountTokens(self, request, context):
        with self.suite_time.answering():
            try:
                return json_format.ParseDict(self.on_callback("CountTokens", None, forms.to_json(request)),
                                             kernel_pb2.CountTokensResult())
            except CallFailed as failure:
                abort(context, failure)


class GrpcProviderBinding:
    name = "grpc"

    def __init__(self, workdir: Path, timeout: float, address: str | None = None, command: str | None = None,
                 callback: str | None = None, env_extra: tuple[str, ...] = ()):
        self.sockets = SocketDir(workdir)
        self.address = address or self.sockets.address("provider")
        self.callback_address = callback or self.sockets.address("kernel-callback")
        self.process = JsonLinesProcess(command, workdir, timeout, env_extra,
                                        {LISTEN_ENV: self.address, CALLBACK_ENV: self.callback_address}) \
            if command else None
        self.timeout = timeout
        self.callbacks = _KernelCallbacks()
        self.callback_server: grpc.Server | None = None
        self.channel: grpc.Channel | None = None
        self.stub: context_pb2_grpc.ContextServiceStub | None = None
        self.limit: OwnTimeLimit | None = None
        self.features: tuple[str, ...] = ("reload", "real_transport")
        self.implementation: dict = {}
        self.broken = False
        self.stopped_by: str | None = None  # the stop RPC the server answered at close (go-plugin's Shutdown)
        self.closing_note: str | None = None  # set by close(): see close_launched

    def serve_callbacks(self, address: str) -> None:
        self.callback_server = server()
        kernel_pb2_grpc.add_KernelCallbackServiceServicer_to_server(self.callbacks, self.callback_server)
        start(self.callback_server, address)

    def start(self) -> dict:
        self.serve_callbacks(self.callback_address)
        if self.process:
            self.process.start()
            self.process.drain_stdout()
        self.connect(self.address)
        return self.hello()

    def connect(self, address: str) -> None:
        self.channel = grpc.insecure_channel(address)
        self.limit = OwnTimeLimit(self.channel.close)
        wait_ready(self.channel, self.timeout, f"the provider at {address}")
        self.stub = context_pb2_grpc.ContextServiceStub(trace.channel(self.name, self.channel))

    def hello(self) -> dict:
        """gRPC has no hello: the provider's Describe says who it is."""
        try:
            producer = self.request("describe", {}).get("producer", {})
        except CallFailed:
            producer = {}
        self.implementation = {"name": producer.get("name") or "unknown provider",
                               "version": producer.get("version", ""), "language": "unknown (gRPC)"}
        return {"implementation": self.implementation, "features": list(self.features)}

    def request(self, op: str, fields: dict, on_callback: OnCallback = no_callbacks) -> dict:
        if self.broken:
            raise HarnessError("the implementation is no longer usable after an earlier error")
        if op in ("hello", "stop"):
            return {}
        method, message = _OPS[op]
        payload = fields.get("request", {"config": fields["config"]} if op == "configure" else {})
        self.callbacks.on_callback = on_callback
        try:
            # The timeout bounds the provider's own time: the suite's answers to its CountTokens calls are given
            # back (the limit), as over stdio; CALLBACK_WALL timeouts of wall clock end the call all the same.
            with self.limit.watching(self.timeout, self.callbacks.suite_time.seconds):
                reply = getattr(self.stub, method)(json_format.ParseDict(payload, message()),
                                                   timeout=self.timeout * CALLBACK_WALL)
        except grpc.RpcError as error:
            if self.limit.fired or error.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                self.broken = True
                raise HarnessError(self._timed_out(method)) from None
            if error.code() == grpc.StatusCode.UNAVAILABLE and self.process is not None and not self.process.alive:
                self.broken = True
                raise HarnessError(self.process.died("went away")) from None
            raise failure_from(error) from None
        finally:
            self.callbacks.on_callback = no_callbacks
        if self.limit.fired:  # the answer came as the limit was reached: the channel is closed all the same
            self.broken = True
            raise HarnessError(self._timed_out(method))
        return forms.to_json(reply)

    def _timed_out(self, method: str) -> str:
        if self.limit.fired:
            return (f"{method} did not answer within {self.timeout:g}s of its own time (the per-call timeout, which "
                    "the suite's answers to its CountTokens calls do not use up; --timeout sets it)")
        return (f"{method} did not answer within {self.timeout * CALLBACK_WALL:g}s of wall clock, callbacks and "
                f"all ({CALLBACK_WALL} per-call timeouts)")

    def stderr(self) -> str:
        return self.process.stderr() if self.process else ""

    def close(self) -> None:
        if self.limit is not None:
            self.limit.stop()
        if self.channel is not None:
            self.channel.close()
        if self.process:
            # A broken server is killed without a word (its case already has an error), as over stdio.
            note = close_launched(self.process, 0.0 if self.broken else 2.0, self.stopped_by)
            self.closing_note = None if self.broken else note
        if self.callback_server is not None:
            self.callback_server.stop(grace=None)
        self.sockets.remove()
