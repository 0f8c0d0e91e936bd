"""A context-provider plugin that a hashicorp/go-plugin host can launch,
around any Python provider object: the reference peer of `ctxconf provider
--plugin`, and a template for a plugin written in Python.

    ctxconf provider --plugin "python conformance/runners/python/go_plugin_provider.py conformance.reference.filereader:create" \\
                     --manifest conformance/reference/manifests/filereader.yaml

What it does, as a go-plugin plugin must (WIRE.md): refuse to run without the
magic cookie; serve ContextService plus the go-plugin GRPCBroker,
GRPCController and GRPCStdio services on a unix socket in
$PLUGIN_UNIX_SOCKET_DIR; print the handshake line; reach the kernel's
KernelCallbackService through the connection the host announces on broker ID 1;
stop on GRPCController/Shutdown.
"""

import os
import sys
import tempfile
import threading

import grpc

from conformance.bindings.grpc_wire import server, start
from conformance.wire.pb.pluggableharness.context.v1 import context_pb2_grpc
from conformance.wire.pb.plugin import plugin_pb2, plugin_pb2_grpc
from provider_servicer import ContextServicer, KernelCallbacks, load

COOKIE = ("PLUGGABLEHARNESS_AGENT_PLUGIN", "pluggableharness-agent-v1-a6f3c9d2-plugin-handshake")
CALLBACK_BROKER_ID = 1


class BrokeredCallbacks(KernelCallbacks):
    """KernelCallbacks whose channel arrives later, over the broker."""

    def __init__(self):
        super().__init__(None)
        self.ready = threading.Event()

    def connect(self, address: str) -> None:
        super().__init__(grpc.insecure_channel(f"unix:{address}"))
        self.ready.set()

    def __call__(self, name, provider, request):
        self.ready.wait(timeout=10)
        return super().__call__(name, provider, request)


class Broker(plugin_pb2_grpc.GRPCBrokerServicer):
    def __init__(self, callbacks: BrokeredCallbacks):
        self.callbacks = callbacks

    def StartStream(self, request_iterator, context):
        for info in request_iterator:
            if info.service_id == CALLBACK_BROKER_ID and not info.knock.knock:
                self.callbacks.connect(info.address)
        return iter(())


class Controller(plugin_pb2_grpc.GRPCControllerServicer):
    def __init__(self, stopping: threading.Event):
        self.stopping = stopping

    def Shutdown(self, request, context):
        self.stopping.set()
        return plugin_pb2.Empty()


class Stdio(plugin_pb2_grpc.GRPCStdioServicer):
    def __init__(self, stopping: threading.Event):
        self.stopping = stopping

    def StreamStdio(self, request, context):
        self.stopping.wait()  # this plugin writes nothing worth relaying; hold the stream until shutdown
        return iter(())


def main(target: str) -> int:
    if os.environ.get(COOKIE[0]) != COOKIE[1]:
        print("This binary is a plugin. It is meant to be launched by a pluggableharness kernel, not run directly.",
              file=sys.stderr)
        return 1
    if "1" not in os.environ.get("PLUGIN_PROTOCOL_VERSIONS", "1").split(","):
        print("no protocol version this plugin speaks was offered", file=sys.stderr)
        return 1
    folder = os.environ.get("PLUGIN_UNIX_SOCKET_DIR") or tempfile.gettempdir()
    path = os.path.join(folder, f"plugin-{os.getpid()}.sock")
    stopping = threading.Event()
    callbacks = BrokeredCallbacks()
    grpc_server = server()
    context_pb2_grpc.add_ContextServiceServicer_to_server(ContextServicer(load(target), callbacks), grpc_server)
    plugin_pb2_grpc.add_GRPCBrokerServicer_to_server(Broker(callbacks), grpc_server)
    plugin_pb2_grpc.add_GRPCControllerServicer_to_server(Controller(stopping), grpc_server)
    plugin_pb2_grpc.add_GRPCStdioServicer_to_server(Stdio(stopping), grpc_server)
    start(grpc_server, f"unix:{path}")
    print(f"1|1|unix|{path}|grpc", flush=True)
    stopping.wait()
    grpc_server.stop(grace=1).wait()
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: go_plugin_provider.py MODULE:FACTORY")
    sys.exit(main(sys.argv[1]))
