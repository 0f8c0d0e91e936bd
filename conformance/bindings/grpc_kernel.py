"""The gRPC binding for kernels: the kernel under test wraps its kernel in the
ctxconf.harness.v1.KernelHarness service; the suite serves every fake
provider as a real pluggableharness.context.v1.ContextService on its own unix
socket, and a tokenizer for models that have one, and hands their addresses
to the kernel in Load.

    --grpc ADDR        dial a harness that is already listening
    --grpc-cmd CMD     launch one; it listens on $CTXCONF_LISTEN
"""

from __future__ import annotations

from pathlib import Path

import grpc
from google.protobuf import json_format

from conformance.bindings import trace
from conformance.bindings.base import (CALLBACK_WALL, HarnessError, OnCallback, OwnTimeLimit, no_callbacks,
                                       no_suite_time)
from conformance.bindings.fake_services import FakeServers, Relay, hang_limit
from conformance.bindings.grpc_provider import close_launched
from conformance.bindings.grpc_wire import SocketDir, failure_from, wait_ready
from conformance.bindings.jsonlines import JsonLinesProcess
from conformance.wire import forms
from conformance.wire.pb.ctxconf.harness.v1 import harness_pb2, harness_pb2_grpc

LISTEN_ENV = "CTXCONF_LISTEN"


class GrpcKernelBinding:
    name = "grpc"

    def __init__(self, workdir: Path, timeout: float, address: str | None = None, command: str | None = None,
                 env_extra: tuple[str, ...] = ()):
        self.sockets = SocketDir(workdir)
        self.address = address or self.sockets.address("harness")
        self.process = JsonLinesProcess(command, workdir, timeout, env_extra, {LISTEN_ENV: self.address}) \
            if command else None
        self.timeout = timeout
        self.relay = Relay(hang_limit=timeout)
        self.fakes = FakeServers(self.sockets, self.relay)
        self.channel: grpc.Channel | None = None
        self.stub: harness_pb2_grpc.KernelHarnessStub | None = None
        self.features: tuple[str, ...] = ()
        self.implementation: dict = {}
        self.broken = False
        self.closing_note: str | None = None  # set by close(): see close_launched
        self.suite_seconds = no_suite_time  # the plugin-launching mode's plugins: see base.no_suite_time

    def start(self) -> dict:
        if self.process:
            self.process.start()
            self.process.drain_stdout()
        self.channel = grpc.insecure_channel(self.address)
        self.limit = OwnTimeLimit(self.channel.close)
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
                result = self._rpc(self.stub.Assemble, forms.from_json(harness_pb2.AssembleRequest, fields))
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
        """Serve each fake provider (and the tokenizer) on its own socket, then Load. A provider the
        kernel is to launch itself (the plugin-launching mode) comes with its command instead."""
        self.fakes.stop()
        self.relay.hang_limit = hang_limit(config, self.timeout)
        providers = []
        for declared in config["providers"]:
            entry = {"name": declared["name"], "config": declared.get("config", {})}
            if "command" in declared:
                entry["command"] = declared["command"]
            else:
                entry["address"] = self.fakes.provider(declared["name"])
            if declared.get("token_budget_override") is not None:
                entry["token_budget_override"] = declared["token_budget_override"]
            providers.append(entry)
        request = json_format.ParseDict({"config": {**{k: v for k, v in config.items() if k != "providers"},
                                                    "providers": providers, "tokenizer_address": self.fakes.tokenizer()}},
                                        harness_pb2.LoadRequest())
        return self._rpc(self.stub.Load, request)

    def _rpc(self, method, message) -> dict:
        """The call's result. The timeout bounds the kernel's own time: what the suite's fakes spend answering
        (or holding) its calls is not charged to it, as over stdio; a whole op still ends at CALLBACK_WALL
        timeouts of wall clock. The call blocks this thread; the binding's OwnTimeLimit ends it once the
        kernel's own time is spent."""
        with self.limit.watching(self.timeout, self._suite_seconds):
            try:
                reply = method(message, timeout=self.timeout * CALLBACK_WALL)
            except grpc.RpcError as error:
                failure = self._failure(error)
            else:
                failure = None
        if self.limit.fired:  # even where the answer came as the limit was reached: the channel is closed
            raise HarnessError(f"no answer within {self.timeout:g}s of its own time (the per-call timeout, "
                               "which the suite's answers to its calls do not use up; --timeout sets it)")
        if failure is not None:
            raise failure
        return forms.to_json(reply)

    def _suite_seconds(self) -> float:
        """The suite's own time while the kernel works: its fakes answering, and its plugins (suite_seconds)."""
        return self.relay.suite_time.seconds() + self.suite_seconds()

    def _failure(self, error: grpc.RpcError) -> Exception:
        failure = failure_from(error)
        if error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED) and \
                (self.process is None or not self.process.alive):
            return HarnessError(f"the kernel harness is gone: {failure.code}: {failure.message}")
        if error.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
            return HarnessError(f"no answer within {self.timeout * CALLBACK_WALL:g}s of wall clock, callbacks and "
                                f"all ({CALLBACK_WALL} per-call timeouts)")
        return failure

    def stderr(self) -> str:
        return self.process.stderr() if self.process else ""

    def close(self) -> None:
        """Stop, then close; a launched harness that answered Stop must exit, and leave nothing running
        (a closing_note otherwise, which the connection charges to the last case, as over stdio)."""
        stopped = getattr(self, "stopped", False)
        if self.stub is not None and not self.broken and not stopped:
            try:
                self.stub.Stop(harness_pb2.StopRequest(), timeout=2)
                stopped = True
            except grpc.RpcError:
                pass
        if self.channel is not None:
            self.limit.stop()
            self.channel.close()
        self.fakes.stop()
        if self.process:
            note = close_launched(self.process, 0.0 if self.broken else 2.0, "Stop" if stopped else None)
            self.closing_note = None if self.broken else note
        self.sockets.remove()

