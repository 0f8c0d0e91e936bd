"""The suite's fake providers and model tokenizer as real gRPC services: each
fake provider a pluggableharness.context.v1.ContextService on a unix socket of
its own, answering through whatever on_callback the current op installed.
The gRPC kernel binding hands their addresses to the kernel; in the
plugin-launching mode (bindings/launch_plugins.py) the fake provider plugins
relay the kernel's calls to them."""

from __future__ import annotations

import threading
import time

import grpc

from conformance.bindings.base import AnsweringTime, CallFailed, Crash, Hang, OnCallback, no_callbacks
from conformance.bindings.grpc_wire import SocketDir, abort, server, start
from conformance.wire import forms
from conformance.wire.pb.ctxconf.harness.v1 import harness_pb2_grpc
from conformance.wire.pb.pluggableharness.context.v1 import context_pb2, context_pb2_grpc
from conformance.wire.pb.pluggableharness.kernel.v1 import kernel_pb2

# Trailing metadata on a relayed failure that tells a fake provider plugin to die on the spot.
CRASH_METADATA = ("ctxconf-crash", "1")


def hang_limit(config: dict, timeout: float) -> float:
    """How long a held call waits for the kernel to give up: twice its deadline and a second, per load."""
    hook = config.get("hook_timeout_ms")
    return min(timeout, 2 * hook / 1000 + 1) if hook else timeout


LATE_MARGIN = 0.15  # seconds before the kernel's deadline within which an answer may not reach it in time


class Relay:
    """Hands each incoming RPC to whatever on_callback the current op installed."""

    def __init__(self, hang_limit: float):
        self.on_callback: OnCallback = no_callbacks
        self.hang_limit = hang_limit
        self.holding = 0  # calls being answered or held: an op's judgment waits for them (settle)
        self.settled = threading.Condition()
        self.suite_time = AnsweringTime()  # answering (or holding) the kernel's calls: the suite's time, not the kernel's

    def settle(self, timeout: float) -> None:
        """Wait until every call is answered, and every held one has seen its caller give up (or the suite
        stop waiting): an answer that comes after the op may still say it was late."""
        with self.settled:
            self.settled.wait_for(lambda: self.holding == 0, timeout)

    def answer(self, call: str, provider: str | None, request, response_type, context: grpc.ServicerContext):
        with self.settled:
            self.holding += 1
        try:
            with self.suite_time.answering():
                return self._answer(call, provider, request, response_type, context)
        finally:
            with self.settled:
                self.holding -= 1
                self.settled.notify_all()

    def _answer(self, call: str, provider: str | None, request, response_type, context: grpc.ServicerContext):
        on_callback = self.on_callback  # the op's, though the op may be over when the answer is ready
        try:
            result = on_callback(call, provider, forms.to_json(request))
            self._note_if_late(on_callback, call, provider, context)
            return forms.from_json(response_type, result)
        except Hang as hang:
            self.hold(hang, context)
        except CallFailed as failure:
            self._note_if_late(on_callback, call, provider, context)
            if isinstance(failure, Crash):
                context.set_trailing_metadata((CRASH_METADATA,))
            abort(context, failure)

    @staticmethod
    def _note_if_late(on_callback: OnCallback, call: str, provider: str | None, context: grpc.ServicerContext) -> None:
        """An answer ready when the kernel's deadline has passed, or all but: the kernel may never see it
        (on a loaded machine, say), and its deadline may rightly treat the provider as failed (K-TIMEOUT)."""
        remaining = context.time_remaining()
        if not context.is_active() or (remaining is not None and remaining < LATE_MARGIN):
            mark = getattr(on_callback, "mark_late", None)
            if mark is not None:
                mark(call, provider)

    def hold(self, hang: Hang, context: grpc.ServicerContext) -> None:
        """Never answer: wait until the kernel gives up on the call, and note when it did."""
        started = time.monotonic()
        while time.monotonic() - started < self.hang_limit:
            if not context.is_active():
                hang.abandoned_after = time.monotonic() - started
                return
            time.sleep(0.01)
        abort(context, CallFailed("UNAVAILABLE", "the suite stopped waiting for the kernel to give up"))


class FakeContextService(context_pb2_grpc.ContextServiceServicer):
    def __init__(self, name: str, relay: Relay):
        self.name, self.relay = name, relay

    def GetCapabilities(self, request, context):
        return self.relay.answer("GetCapabilities", self.name, request, context_pb2.GetCapabilitiesResponse, context)

    def Configure(self, request, context):
        return self.relay.answer("Configure", self.name, request, context_pb2.ConfigureResponse, context)

    def Contribute(self, request, context):
        return self.relay.answer("Contribute", self.name, request, context_pb2.ContextContribution, context)

    def Describe(self, request, context):
        return self.relay.answer("Describe", self.name, request, context_pb2.DescribeResponse, context)


class SuiteTokenizer(harness_pb2_grpc.SuiteTokenizerServicer):
    def __init__(self, relay: Relay):
        self.relay = relay

    def CountTokens(self, request, context):
        return self.relay.answer("CountTokens", None, request, kernel_pb2.CountTokensResult, context)


class FakeServers:
    """The servers of one load: a ContextService per declared provider, and the tokenizer."""

    def __init__(self, sockets: SocketDir, relay: Relay):
        self.sockets, self.relay = sockets, relay
        self.servers: list[grpc.Server] = []
        # Every server of the binding's life gets a socket path of its own: a path reused by the next load
        # raced the stopped server's connections on a loaded machine (the kernel's call over a connection
        # its old server was closing failed "Stream removed ... Broken pipe").
        self.served = 0

    def provider(self, name: str) -> str:
        """Serve the fake provider `name`; its address."""
        return self._serve("provider", f"the suite's fake provider {name!r}",
                           lambda s: context_pb2_grpc.add_ContextServiceServicer_to_server(
                               FakeContextService(name, self.relay), s))

    def tokenizer(self) -> str:
        return self._serve("tokenizer", "the suite's tokenizer", lambda s: harness_pb2_grpc.add_SuiteTokenizerServicer_to_server(
            SuiteTokenizer(self.relay), s))

    def _serve(self, name: str, what: str, register) -> str:
        self.served += 1
        address = self.sockets.address(f"{name}-{self.served}")
        grpc_server = server()
        register(grpc_server)
        start(grpc_server, address, what)
        self.servers.append(grpc_server)
        return address

    def stop(self) -> None:
        for grpc_server in self.servers:
            grpc_server.stop(grace=None)
        self.servers = []
