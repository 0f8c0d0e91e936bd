"""A context-provider plugin that a hashicorp/go-plugin host can launch,
around any Python provider object: the reference peer of `ctxconf provider
--plugin`, and a template for a plugin written in Python.

    ctxconf provider --plugin "python runners/python/go_plugin_provider.py conformance.reference.filereader:create" \\
                     --manifest examples/manifests/filereader.yaml

What it does, as a go-plugin plugin must (WIRE.md): refuse to run without the
magic cookie; serve ContextService plus the go-plugin GRPCBroker,
GRPCController and GRPCStdio services on a unix socket in
$PLUGIN_UNIX_SOCKET_DIR; print the handshake line; reach the kernel's
KernelCallbackService through the connection the host announces on broker ID 1;
stop on GRPCController/Shutdown.
"""

import sys
import threading

import grpc

from conformance.bindings.go_plugin_protocol import CALLBACK_BROKER_ID
from conformance.bindings.plugin_side import refusal, serve
from conformance.wire.pb.pluggableharness.context.v1 import context_pb2_grpc
from provider_servicer import ContextServicer, KernelCallbacks, load


class BrokeredCallbacks(KernelCallbacks):
    """KernelCallbacks whose channel arrives later, over the broker."""

    def __init__(self):
        super().__init__(None)
        self.ready = threading.Event()

    def offered(self, service_id: int, address: str) -> None:
        if service_id == CALLBACK_BROKER_ID:
            super().__init__(grpc.insecure_channel(f"unix:{address}"))
            self.ready.set()

    def __call__(self, name, provider, request):
        self.ready.wait(timeout=10)
        return super().__call__(name, provider, request)


def main(target: str) -> int:
    problem = refusal()
    if problem:
        print(problem, file=sys.stderr)
        return 1
    stopping = threading.Event()
    callbacks = BrokeredCallbacks()
    servicer = ContextServicer(load(target), callbacks)
    grpc_server = serve(lambda s: context_pb2_grpc.add_ContextServiceServicer_to_server(servicer, s),
                        stopping, callbacks.offered)
    stopping.wait()
    grpc_server.stop(grace=1).wait()
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: go_plugin_provider.py MODULE:FACTORY")
    sys.exit(main(sys.argv[1]))
