"""The hashicorp/go-plugin protocol as both ends speak it (WIRE.md): the
upstream kernel's handshake constants, the environment a host gives a plugin,
the handshake line, the broker offer that carries the kernel's callback
service, and the shutdown call. Shared by the suite's `--plugin` binding
(bindings/go_plugin.py), the plugins the suite provides (plugin_side.py,
fake_plugin.py) and the reference kernel's plugin host."""

from __future__ import annotations

import queue
import threading

import grpc

from conformance.bindings.base import HarnessError, LaunchError
from conformance.wire.pb.plugin import plugin_pb2, plugin_pb2_grpc

# The upstream kernel's constants (pkg/common of pluggableharness/agent).
DEFAULT_COOKIE = ("PLUGGABLEHARNESS_AGENT_PLUGIN", "pluggableharness-agent-v1-a6f3c9d2-plugin-handshake")
PROTOCOL_VERSION = "1"
CALLBACK_BROKER_ID = 1


def parse_cookie(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise LaunchError(f"--cookie expects KEY=VALUE, got {text!r}")
    return key, value


def parse_handshake(line: str) -> str:
    """The gRPC target named by a go-plugin handshake line, or a clear complaint."""
    parts = line.split("|")
    if len(parts) not in (5, 6):
        raise HarnessError(f"malformed handshake line {line[:120]!r}: expected CORE|APP|NETWORK|ADDRESS|PROTOCOL")
    core, app, network, address, protocol = parts[:5]
    if core != "1":
        raise HarnessError(f"handshake core protocol version {core!r}; go-plugin speaks 1")
    if app != PROTOCOL_VERSION:
        raise HarnessError(f"handshake app protocol version {app!r}; the host offered {PROTOCOL_VERSION}")
    if protocol != "grpc":
        raise HarnessError(f"handshake protocol {protocol!r}; context providers speak grpc")
    if len(parts) == 6 and parts[5]:
        raise HarnessError("the plugin sent a server certificate (AutoMTLS); the suite runs without it")
    if network == "unix":
        return f"unix:{address}"
    if network == "tcp":
        return address
    raise HarnessError(f"handshake network {network!r}; expected unix or tcp")


def host_env(cookie: tuple[str, str], socket_dir: str) -> dict[str, str]:
    """What a go-plugin host adds to a plugin's environment (no AutoMTLS: see WIRE.md)."""
    return {cookie[0]: cookie[1], "PLUGIN_PROTOCOL_VERSIONS": PROTOCOL_VERSION,
            "PLUGIN_MIN_PORT": "10000", "PLUGIN_MAX_PORT": "25000", "PLUGIN_UNIX_SOCKET_DIR": socket_dir}


class BrokerOffer:
    """The host side of broker.AcceptAndServe(id, ...): announce, on the plugin's GRPCBroker stream,
    where a host service listens. The stream stays open until close()."""

    def __init__(self, channel: grpc.Channel):
        self.outbox: queue.Queue = queue.Queue()
        stream = plugin_pb2_grpc.GRPCBrokerStub(channel).StartStream(iter(self.outbox.get, None))
        threading.Thread(target=self._consume, args=(stream,), daemon=True).start()

    def offer(self, service_id: int, unix_address: str) -> None:
        self.outbox.put(plugin_pb2.ConnInfo(service_id=service_id, network="unix",
                                            address=unix_address.removeprefix("unix:")))

    def close(self) -> None:
        self.outbox.put(None)

    @staticmethod
    def _consume(stream) -> None:
        """Read what the plugin sends on the broker stream (knock acks) until it closes."""
        try:
            for _ in stream:
                pass
        except grpc.RpcError:
            pass


def shutdown(channel: grpc.Channel) -> bool:
    """GRPCController/Shutdown: whether the plugin took it. The host then waits about 2s before a kill."""
    try:
        plugin_pb2_grpc.GRPCControllerStub(channel).Shutdown(plugin_pb2.Empty(), timeout=2)
        return True
    except grpc.RpcError:
        return False
