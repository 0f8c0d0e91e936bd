"""A gRPC kernel harness (ctxconf.harness.v1.KernelHarness) around any Python
kernel object; the reference peer of `ctxconf kernel --grpc-cmd`.

    ctxconf kernel --grpc-cmd "python runners/python/grpc_kernel_harness.py conformance.reference.kernel:create"

It listens on $CTXCONF_LISTEN (or --listen ADDR). On Load it dials the
ContextService of every provider and the suite's tokenizer at the addresses
given, and the kernel's callbacks become real gRPC calls: Contribute under the
configured hook deadline, every failure decoded from its status, ContextError
detail included.
"""

import argparse
import importlib
import os
import threading

import grpc
from google.protobuf import json_format

from conformance.bindings.base import CallFailed
from conformance.bindings.grpc_wire import CHANNEL_OPTIONS, abort, failure_from, server, start
from conformance.reference.plugin_host import SETUP_TIMEOUT
from conformance.wire import forms
from conformance.wire.pb.ctxconf.harness.v1 import harness_pb2, harness_pb2_grpc
from conformance.wire.pb.pluggableharness.context.v1 import context_pb2, context_pb2_grpc
from conformance.wire.pb.pluggableharness.kernel.v1 import kernel_pb2

CALLS = {"GetCapabilities": ("GetCapabilities", context_pb2.GetCapabilitiesRequest),
         "Configure": ("Configure", context_pb2.ConfigureRequest),
         "Contribute": ("Contribute", context_pb2.ContextRequest),
         "Describe": ("Describe", context_pb2.DescribeRequest)}


class Remote:
    """The kernel's `call`: provider and tokenizer calls over gRPC."""

    def __init__(self, config: dict, deadlines: bool = True):
        self.channels = []
        self.providers = {p["name"]: context_pb2_grpc.ContextServiceStub(self._channel(p["address"]))
                          for p in config["providers"] if p.get("address")}  # the others it launches itself
        self.tokenizer = harness_pb2_grpc.SuiteTokenizerStub(self._channel(config["tokenizer_address"])) \
            if config.get("tokenizer_address") else None
        self.deadline = (config.get("hook_timeout_ms") or 10000) / 1000 if deadlines else None
        # Only Contribute is a hook: the tokenizer and the setup calls get the longer of it and SETUP_TIMEOUT.
        self.other_deadline = max(self.deadline, SETUP_TIMEOUT) if deadlines else None

    def _channel(self, address: str) -> grpc.Channel:
        channel = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
        self.channels.append(channel)
        return channel

    def __call__(self, name: str, provider: str | None, request: dict) -> dict:
        try:
            if name == "CountTokens":
                reply = self.tokenizer.CountTokens(forms.parse("CountTokensRequest", request),
                                                   timeout=self.other_deadline)
            else:
                method, message = CALLS[name]
                deadline = self.deadline if name == "Contribute" else self.other_deadline
                reply = getattr(self.providers[provider], method)(forms.from_json(message, request), timeout=deadline)
        except grpc.RpcError as error:
            raise failure_from(error) from None
        return forms.to_json(reply)

    def close(self) -> None:
        for channel in self.channels:
            channel.close()


class Harness(harness_pb2_grpc.KernelHarnessServicer):
    def __init__(self, kernel, stopped: threading.Event, deadlines: bool = True):
        self.kernel, self.stopped, self.remote, self.deadlines = kernel, stopped, None, deadlines

    def _run(self, op: str, fields: dict, response_type, context):
        try:
            result = getattr(self.kernel, op)(fields, self.remote)
        except CallFailed as failure:
            abort(context, failure)
        except Exception as exc:  # the suite records it as a harness error
            abort(context, CallFailed("INTERNAL", f"{type(exc).__name__}: {exc}"))
        if result.get("error") is None:
            result = {k: v for k, v in result.items() if k != "error"}
        try:
            return forms.from_json(response_type, result)  # json_format once for each distinct result
        except json_format.ParseError:  # a field the response lacks, which json_format then drops (or a bad value)
            return json_format.ParseDict(result, response_type(), ignore_unknown_fields=True)

    def Hello(self, request, context):
        return self._run("hello", forms.to_json(request), harness_pb2.HelloResponse, context)

    def Load(self, request, context):
        config = forms.to_json(request.config)
        if self.remote:
            self.remote.close()
        self.remote = Remote(config, self.deadlines)
        return self._run("load", {"config": config}, harness_pb2.LoadResponse, context)

    def Assemble(self, request, context):
        return self._run("assemble", forms.to_json(request), harness_pb2.AssembleResponse, context)

    def CountTokens(self, request, context):
        return self._run("count_tokens", {"request": forms.to_json(request)}, kernel_pb2.CountTokensResult, context)

    def Stop(self, request, context):
        """The kernel's own stop first (it closes what it launched, its plugins), then the harness exits."""
        try:
            if callable(getattr(self.kernel, "stop", None)):
                return self._run("stop", {}, harness_pb2.StopResponse, context)
            return harness_pb2.StopResponse()
        finally:
            self.stopped.set()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", help="MODULE:FACTORY of the kernel object")
    parser.add_argument("--listen", default=os.environ.get("CTXCONF_LISTEN", "localhost:50151"))
    parser.add_argument("--no-deadline", action="store_true",
                        help="call providers without the hook deadline: a deliberately wrong harness (K-TIMEOUT)")
    args = parser.parse_args()
    module, _, factory = args.target.partition(":")
    stopped = threading.Event()
    harness = Harness(getattr(importlib.import_module(module), factory)(), stopped, deadlines=not args.no_deadline)
    grpc_server = server()
    harness_pb2_grpc.add_KernelHarnessServicer_to_server(harness, grpc_server)
    start(grpc_server, args.listen)
    stopped.wait()
    grpc_server.stop(grace=1).wait()


if __name__ == "__main__":
    main()
