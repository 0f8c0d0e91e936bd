"""A pluggableharness.context.v1.ContextService around any Python provider
object (the object the python binding takes), for the gRPC runners in this
folder. The provider's CountTokens callbacks go to a KernelCallbackService
channel; its CallFailed errors become gRPC statuses with a ContextError detail.
"""

import importlib

import grpc
from google.protobuf import json_format

from conformance.bindings.base import CallFailed
from conformance.bindings.grpc_wire import abort, failure_from
from conformance.wire import forms
from conformance.wire.pb.pluggableharness.context.v1 import context_pb2, context_pb2_grpc
from conformance.wire.pb.pluggableharness.kernel.v1 import kernel_pb2_grpc


def load(target: str):
    module, _, factory = target.partition(":")
    return getattr(importlib.import_module(module), factory)()


class KernelCallbacks:
    """The provider's `call`: CountTokens through the kernel's callback service."""

    def __init__(self, channel: grpc.Channel | None):
        self.stub = kernel_pb2_grpc.KernelCallbackServiceStub(channel) if channel else None

    def __call__(self, name: str, provider, request: dict) -> dict:
        if self.stub is None or name != "CountTokens":
            raise CallFailed("UNAVAILABLE", f"no kernel callback channel for {name}")
        try:
            return forms.to_json(self.stub.CountTokens(forms.parse("CountTokensRequest", request), timeout=10))
        except grpc.RpcError as error:
            raise failure_from(error) from None


class ContextServicer(context_pb2_grpc.ContextServiceServicer):
    def __init__(self, provider, callbacks: KernelCallbacks):
        self.provider, self.callbacks = provider, callbacks

    def _run(self, op: str, fields: dict, response_type, context):
        try:
            result = getattr(self.provider, op)(fields, self.callbacks)
        except CallFailed as failure:
            abort(context, failure)
        except Exception as exc:
            abort(context, CallFailed("INTERNAL", f"{type(exc).__name__}: {exc}"))
        return json_format.ParseDict(result, response_type())

    def GetCapabilities(self, request, context):
        return self._run("get_capabilities", {}, context_pb2.GetCapabilitiesResponse, context)

    def Configure(self, request, context):
        return self._run("configure", forms.to_json(request), context_pb2.ConfigureResponse, context)

    def Contribute(self, request, context):
        return self._run("contribute", {"request": forms.to_json(request)}, context_pb2.ContextContribution, context)

    def Describe(self, request, context):
        return self._run("describe", {}, context_pb2.DescribeResponse, context)
