"""The plugin side of hashicorp/go-plugin, for plugins written in Python: the
services every go-plugin gRPC server exposes besides its own (WIRE.md), and
the checks a plugin makes before it serves. Used by the reference plugin
template (runners/python/go_plugin_provider.py) and the fake provider plugins
(bindings/fake_plugin.py)."""

from __future__ import annotations

import os
import tempfile
import threading
from typing import Callable

import grpc

from conformance.bindings.go_plugin_protocol import DEFAULT_COOKIE, PROTOCOL_VERSION
from conformance.bindings.grpc_wire import server, start
from conformance.wire.pb.plugin import plugin_pb2, plugin_pb2_grpc


class Broker(plugin_pb2_grpc.GRPCBrokerServicer):
    """Hears the host's ConnInfo announcements; `on_offer(service_id, address)` for each."""

    def __init__(self, on_offer: Callable[[int, str], None]):
        self.on_offer = on_offer

    def StartStream(self, request_iterator, context):
        for info in request_iterator:
            if not info.knock.knock:
                self.on_offer(info.service_id, info.address)
        return iter(())


class Controller(plugin_pb2_grpc.GRPCControllerServicer):
    def __init__(self, stopping: threading.Event, on_shutdown: Callable[[], None] = lambda: None):
        self.stopping, self.on_shutdown = stopping, on_shutdown

    def Shutdown(self, request, context):
        self.on_shutdown()
        self.stopping.set()
        return plugin_pb2.Empty()


class Stdio(plugin_pb2_grpc.GRPCStdioServicer):
    def __init__(self, stopping: threading.Event):
        self.stopping = stopping

    def StreamStdio(self, request, context):
        self.stopping.wait()  # nothing worth relaying; hold the stream until shutdown
        return iter(())


def refusal(cookie: tuple[str, str] = DEFAULT_COOKIE) -> str | None:
    """Why this process must not serve (it was not launched by a host speaking our protocol), or None."""
    if os.environ.get(cookie[0]) != cookie[1]:
        return "This binary is a plugin. It is meant to be launched by a pluggableharness kernel, not run directly."
    if PROTOCOL_VERSION not in os.environ.get("PLUGIN_PROTOCOL_VERSIONS", PROTOCOL_VERSION).split(","):
        return f"the host offered no protocol version this plugin speaks ({PROTOCOL_VERSION})"
    return None


def serve(register: Callable[[grpc.Server], None], stopping: threading.Event,
          on_offer: Callable[[int, str], None], on_shutdown: Callable[[], None] = lambda: None) -> grpc.Server:
    """Serve the plugin's own services and go-plugin's on a unix socket, and print the handshake line."""
    folder = os.environ.get("PLUGIN_UNIX_SOCKET_DIR") or tempfile.gettempdir()
    path = os.path.join(folder, f"plugin-{os.getpid()}.sock")
    grpc_server = server()
    register(grpc_server)
    plugin_pb2_grpc.add_GRPCBrokerServicer_to_server(Broker(on_offer), grpc_server)
    plugin_pb2_grpc.add_GRPCControllerServicer_to_server(Controller(stopping, on_shutdown), grpc_server)
    plugin_pb2_grpc.add_GRPCStdioServicer_to_server(Stdio(stopping), grpc_server)
    start(grpc_server, f"unix:{path}")
    print(f"1|{PROTOCOL_VERSION}|unix|{path}|grpc", flush=True)
    return grpc_server
