"""Launching a real plugin binary as a hashicorp/go-plugin host does
(WIRE.md): the cookie and protocol environment, the handshake line, a unix
socket, no AutoMTLS, the kernel callback service offered on broker ID 1,
stdio drained, and GRPCController/Shutdown before a kill.

    ctxconf provider --plugin ./my-plugin --cookie KEY=VALUE --manifest manifest.yaml
"""

from __future__ import annotations

import threading
from pathlib import Path

import grpc
from google.protobuf import empty_pb2

from conformance.bindings.base import HarnessError
from conformance.bindings.go_plugin_protocol import CALLBACK_BROKER_ID, BrokerOffer, host_env, parse_handshake, shutdown
from conformance.bindings.grpc_provider import GrpcProviderBinding
from conformance.bindings.jsonlines import JsonLinesProcess
from conformance.wire.pb.plugin import plugin_pb2_grpc


class GoPluginBinding(GrpcProviderBinding):
    name = "go-plugin"

    def __init__(self, command: str, cookie: tuple[str, str], workdir: Path, timeout: float,
                 handshake_timeout: float = 60.0, env_extra: tuple[str, ...] = ()):
        super().__init__(workdir, timeout)
        self.handshake_timeout = handshake_timeout
        self.process = JsonLinesProcess(command, workdir, timeout, env_extra, host_env(cookie, str(self.sockets.path)))
        self.broker: BrokerOffer | None = None
        self.stdio: list[bytes] = []

    def start(self) -> dict:
        self.serve_callbacks(self.callback_address)
        self.process.start()
        target = parse_handshake(self._handshake_line())
        self.process.drain_stdout()  # after the handshake, stdout is only the plugin's chatter
        self.connect(target)
        self._offer_callback_channel()
        threading.Thread(target=self._drain_stdio, daemon=True).start()
        return self.hello()

    def _handshake_line(self) -> str:
        try:
            line = self.process.receive_line(self.handshake_timeout)
        except HarnessError:
            raise HarnessError(f"the plugin printed no handshake line within {self.handshake_timeout:g}s "
                               "(--handshake-timeout sets it)") from None
        if line is None:
            raise HarnessError(self.process.died("ended before its handshake"))
        return line

    def _offer_callback_channel(self) -> None:
        self.broker = BrokerOffer(self.channel)
        self.broker.offer(CALLBACK_BROKER_ID, self.callback_address)

    def _drain_stdio(self) -> None:
        try:
            for chunk in plugin_pb2_grpc.GRPCStdioStub(self.channel).StreamStdio(empty_pb2.Empty()):
                self.stdio.append(chunk.data)
        except grpc.RpcError:
            pass  # the stream ends with the plugin, or the plugin does not offer it

    def stderr(self) -> str:
        relayed = b"".join(self.stdio).decode("utf-8", "replace")
        return "\n".join(part for part in (self.process.stderr(), relayed) if part)

    def close(self) -> None:
        """GRPCController/Shutdown, a short wait, then the kill the base class does."""
        if self.channel is not None and self.process.alive and shutdown(self.channel):
            self.stopped_by = "GRPCController/Shutdown"  # so it must exit: see close_launched
        if self.broker is not None:
            self.broker.close()
        super().close()
