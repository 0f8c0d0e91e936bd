"""The gRPC binding for kernels: the kernel under test wraps its kernel in the
ctxconf.harness.v1.KernelHarness service; the suite serves every fake
provider as a real pluggableharness.context.v1.ContextService on its own unix
socket, and a tokenizer for models that have one, and hands their addresses
to the kernel in Load.

    --grpc ADDR        dial a harness that is already listening
    --grpc-cmd CMD     launch one; it listens on $CTXCONF_LISTEN
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import grpc
from google.protobuf import json_format

from conformance.bindings import trace
from conformance.bindings.base import CallFailed, Hang, HarnessError, OnCallback, no_callbacks
from conformance.bindings.grpc_provider import close_launched
from conformance.bindings.grpc_wire import SocketDir, abort, failure_from, server, start, wait_ready
from conformance.bindings.jsonlines import JsonLinesProcess
from conformance.wire import forms
from conformance.wire.pb.ctxconf.harness.v1 import harness_pb2, harness_pb2_grpc
from conformance.wire.pb.pluggableharness.context.v1 import context_pb2, context_pb2_grpc
from conformance.wire.pb.pluggableharness.kernel.v1 import kernel_pb2

LISTEN_ENV = "CTXCONF_LISTEN"


class _Relay:
    """Hands each incoming RPC to whatever on_callback the current op installed."""

    def __init__(self, hang_limit: float):
        self.on_callback: OnCallback = no_callbacks
        self.hang_limit = hang_limit
        self.holding = 0
        self.settled = threading.Condition()

    def settle(self, timeout: float) -> None:
        """Wait until every held call has seen its caller give up (or the suite stop waiting)."""
        with self.settled:
            self.settled.wait_for(lambda: self.holding == 0, timeout)

    def answer(self, call: str, provider: str | None, request, response_type, context: grpc.ServicerContext):
        try:
            result = self.on_callback(call, provider, forms.to_json(request))
            return json_format.ParseDict(result, response_type())
        except Hang as hang:
            with self.settled:
                self.holding += 1
            try:
                self.hold(hang, context)
            finally:
                with self.settled:
                    self.holding -= 1
                    self.settled.notify_all()
        except CallFailed as failure:
            abort(context, failure)

    def hold(self, hang: Hang, context: grpc.ServicerContext) -> None:
        """Never answer: wait until the kernel gives up on the call, and note when it did."""
        started = time.monotonic()
        while time.monotonic() - started < self.hang_limit:
            if not context.is_active():
                hang.abandoned_after = time.monotonic() - started
                return
            time.sleep(0.01)
        abort(context, CallFailed("UNAVAILABLE", "the suite stopped waiting for the kernel to give up"))


class _FakeProvider(context_pb2_grpc.ContextServiceServicer):
    def __init__(self, name: str, relay: _Relay):
        self.name, self.relay = name, relay

    def GetCapabilities(self, request, context):
        return self.relay.answer("GetCapabilities", self.name, request, context_pb2.GetCapabilitiesResponse, context)

    def Configure(self, request, context):
        return self.relay.answer("Configure", self.name, request, context_pb2.ConfigureResponse, context)

    def Contribute(self, request, context):
        return self.relay.answer("Contribute", self.name, request, context_pb2.ContextContribution, context)

    def Describe(self, request, context):
        return self.relay.answer("Describe", self.name, request, context_pb2.DescribeResponse, context)


class _Tokenizer(harness_pb2_grpc.SuiteTokenizerServicer):
    def __init__(self, relay: _Relay):
        self.relay = relay

    def CountTokens(self, request, context):
        return self.relay.answer("CountTokens", None, request, kernel_pb2.CountTokensResult, context)


class GrpcKernelBinding:
    name = "grpc"

    def __init__(self, workdir: Path, timeout: float, address: str | None = None, command: str | None = None,
                 env_extra: tuple[str, ...] = ()):
        self.sockets = SocketDir(workdir)
        self.address = address or self.sockets.address("harness")
        self.process = JsonLinesProcess(command, workdir, timeout, env_extra, {LISTEN_ENV: self.address}) \
            if command else None
        self.timeout = timeout
        self.relay = _Relay(hang_limit=timeout)
        self.servers: list[grpc.Server] = []
        self.channel: grpc.Channel | None = None
        self.stub: harness_pb2_grpc.KernelHarnessStub | None = None
        self.features: tuple[str, ...] = ()
        self.implementation: dict = {}
        self.broken = False
        self.closing_note: str | None = None  # set by close(): see close_launched

    def start(self) -> dict:
        if self.process:
            self.process.start()
            self.process.drain_stdout()
        self.channel = grpc.insecure_channel(self.address)
        wait_ready(self.channel, self.timeout, f"the kernel harness at {self.address}")
        self.stub = harness_pb2_grpc.KernelHarnessStub(trace.channel(self.name, self.channel))
        hello = self._rpc(self.stub.Hello, harness_pb2.HelloRequest(protocol="ctxconf-kernel/1"))
        self.implementation = hello.get("implementation", {})
        # A real transport can hold a call open, so the kernel's own deadline is observable.
        self.features = (*hello.get("features", ()), "real_transport", "concurrent_callbacks")
        return hello

    def request(self, op: str, fields: dict, on_callback: OnCallback = no_callbacks) -> dict:
        if self.broken:
            raise HarnessError("the implementation is no longer usable after an earlier error")
        self.relay.on_callback = on_callback
        try:
            if op == "load":
                return self._load(fields["config"])
            if op == "assemble":
                result = self._rpc(self.stub.Assemble, json_format.ParseDict(fields, harness_pb2.AssembleRequest()))
                result.setdefault("error", None)
                self.relay.settle(self.relay.hang_limit)
                return result
            if op == "count_tokens":
                return self._rpc(self.stub.CountTokens, forms.parse("CountTokensRequest", fields["request"]))
            if op == "stop":
                return self._rpc(self.stub.Stop, harness_pb2.StopRequest())
            raise HarnessError(f"the gRPC harness has no op {op!r}")
        except HarnessError:
            self.broken = True
            raise
        finally:
            self.relay.on_callback = no_callbacks

    def _load(self, config: dict) -> dict:
        """Serve each fake provider (and the tokenizer) on its own socket, then Load."""
        self._stop_servers()
        # How long a held call waits for the kernel to give up: twice its deadline and a second, per load.
        hook = config.get("hook_timeout_ms")
        self.relay.hang_limit = min(self.timeout, 2 * hook / 1000 + 1) if hook else self.timeout
        providers = []
        for declared in config["providers"]:
            address = self.sockets.address(f"provider-{len(self.servers)}")
            self._serve(address, lambda s, d=declared: context_pb2_grpc.add_ContextServiceServicer_to_server(
                _FakeProvider(d["name"], self.relay), s))
            entry = {"name": declared["name"], "config": declared.get("config", {}), "address": address}
            if declared.get("token_budget_override") is not None:
                entry["token_budget_override"] = declared["token_budget_override"]
            providers.append(entry)
        tokenizer = self.sockets.address("tokenizer")
        self._serve(tokenizer, lambda s: harness_pb2_grpc.add_SuiteTokenizerServicer_to_server(_Tokenizer(self.relay), s))
        request = json_format.ParseDict({"config": {**{k: v for k, v in config.items() if k != "providers"},
                                                    "providers": providers, "tokenizer_address": tokenizer}},
                                        harness_pb2.LoadRequest())
        return self._rpc(self.stub.Load, request)

    def _serve(self, address: str, register) -> None:
        grpc_server = server()
        register(grpc_server)
        start(grpc_server, address)
        self.servers.append(grpc_server)

    def _rpc(self, method, message) -> dict:
        try:
            return forms.to_json(method(message, timeout=self.timeout))
        except grpc.RpcError as error:
            failure = failure_from(error)
            if error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED) and \
                    (self.process is None or not self.process.alive):
                raise HarnessError(f"the kernel harness is gone: {failure.code}: {failure.message}") from None
            if error.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                raise HarnessError(f"no answer within {self.timeout:g}s (the per-call timeout)") from None
            raise failure from None

    def _stop_servers(self) -> None:
        for grpc_server in self.servers:
            grpc_server.stop(grace=None)
        self.servers = []

    def stderr(self) -> str:
        return self.process.stderr() if self.process else ""

    def close(self) -> None:
        """Stop, then close; a launched harness that answered Stop must exit, and leave nothing running
        (a closing_note otherwise, which the connection charges to the last case, as over stdio)."""
        stopped = False
        if self.stub is not None and not self.broken:
            try:
                self.stub.Stop(harness_pb2.StopRequest(), timeout=2)
                stopped = True
            except grpc.RpcError:
                pass
        if self.channel is not None:
            self.channel.close()
        self._stop_servers()
        if self.process:
            note = close_launched(self.process, 0.0 if self.broken else 2.0, "Stop" if stopped else None)
            self.closing_note = None if self.broken else note
        self.sockets.remove()
