"""The reference kernel's plugin machinery: it launches each provider's plugin
as a hashicorp/go-plugin host does, on the protocol pieces the suite's
`--plugin` binding uses too (bindings/go_plugin_protocol.py: the host
environment, the handshake line, the broker offer, Shutdown), and calls it over
gRPC. The process handling is its own: a kernel does not have the suite's
process-tree machinery, and its plugins inherit no more than an allowlist.

Used when Load names a command for a provider (`ctxconf kernel
--launch-plugins`). Every plugin is offered the kernel's
KernelCallbackService on broker ID 1 at handshake (kernel-callbacks.md#the-callback-channel),
and every plugin of a configuration is shut down when the kernel loads another
or stops. Each step is a method of its own, so that a mutant can break one.
"""

from __future__ import annotations

import os
import queue
import subprocess
import threading
from typing import Callable

import grpc
from google.protobuf import json_format

from conformance.bindings import jsonlines
from conformance.bindings.base import CallFailed
from conformance.bindings.go_plugin_protocol import (CALLBACK_BROKER_ID, DEFAULT_COOKIE, BrokerOffer, host_env,
                                                     parse_handshake, shutdown)
from conformance.bindings.grpc_wire import CHANNEL_OPTIONS, SocketDir, abort, failure_from, server, start
from conformance.wire import forms
from conformance.wire.pb.pluggableharness.context.v1 import context_pb2, context_pb2_grpc
from conformance.wire.pb.pluggableharness.kernel.v1 import kernel_pb2, kernel_pb2_grpc

# What a plugin may see of the kernel's environment (architecture.md#transport): what the suite gives the
# programs it launches, enough to run one, and the temporary directory.
ENV_ALLOWLIST = (*jsonlines.ENV_ALLOWLIST, "TMPDIR")
KILL_AFTER = 2.0   # after Shutdown, as go-plugin's client.Kill waits
SETUP_TIMEOUT = 10.0  # GetCapabilities, Configure, Describe: not hooks, so not under hook_timeout
REQUESTS = {"GetCapabilities": context_pb2.GetCapabilitiesRequest, "Configure": context_pb2.ConfigureRequest,
            "Contribute": context_pb2.ContextRequest, "Describe": context_pb2.DescribeRequest}


class Plugin:
    """One launched plugin process and the connection to it. How long it waits for the handshake line, how it
    reads the plugin's stdout and how it fails a plugin that never handshakes are the kernel's own choices, which
    the spec leaves open (architecture.md#transport names the handshake, not its timing or its failure): each is
    a class attribute or a method of its own, so that a conforming variant can take another."""

    HANDSHAKE_TIMEOUT = 30.0

    def __init__(self, argv: list[str], env: dict[str, str]):
        self.argv = argv
        self.channel: grpc.Channel | None = None
        self.process = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
        self.lines: queue.Queue = queue.Queue()
        self.start_reader()

    def start_reader(self) -> None:
        """A daemon thread drains the plugin's stdout: it keeps no kernel process alive that exits with plugins."""
        threading.Thread(target=self._read_stdout, args=(self.lines,), daemon=True).start()

    def connect(self) -> None:
        """Read the handshake line and dial the address it names."""
        try:
            line = self.lines.get(timeout=self.HANDSHAKE_TIMEOUT)
        except queue.Empty:
            line = None
        if not line:
            self.no_handshake()
        self.channel = grpc.insecure_channel(parse_handshake(line.strip()), options=CHANNEL_OPTIONS)
        self.stub = context_pb2_grpc.ContextServiceStub(self.channel)
        self.broker = BrokerOffer(self.channel)

    def no_handshake(self) -> None:
        """The plugin exited, or let HANDSHAKE_TIMEOUT pass, without a handshake line: the Load fails."""
        raise CallFailed("UNAVAILABLE", f"plugin {self.argv[0]!r} printed no handshake line")

    def _read_stdout(self, lines: queue.Queue) -> None:
        """Each line the plugin prints, then None when its stdout closes (it exited: no handshake is coming)."""
        for raw in self.process.stdout:  # the handshake line, then whatever the plugin prints: drained
            lines.put(raw.decode("utf-8", "replace"))
        lines.put(None)

    def ask_to_stop(self) -> None:
        if self.process.poll() is None and not (self.channel is not None and shutdown(self.channel)):
            self.process.terminate()  # Shutdown did not get through (a busy machine): SIGTERM asks the same

    def close(self) -> None:
        """After ask_to_stop: a grace period, then a kill, as go-plugin's client.Kill does."""
        try:
            self.process.wait(KILL_AFTER)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.channel is not None:
            self.broker.close()
            self.channel.close()


class _Callbacks(kernel_pb2_grpc.KernelCallbackServiceServicer):
    """The kernel's KernelCallbackService: CountTokens through the kernel's own resolution."""

    def __init__(self, count_tokens: Callable[[dict], dict]):
        self.count_tokens = count_tokens

    def CountTokens(self, request, context):
        try:
            return json_format.ParseDict(self.count_tokens(forms.to_json(request)), kernel_pb2.CountTokensResult())
        except CallFailed as failure:
            abort(context, failure)


class PluginFleet:
    """The plugins of one configuration. `route(call)` is the kernel's call function with the launched
    providers' calls going to their plugins, everything else (the model tokenizers) as before."""

    PLUGIN = Plugin  # a variant's Plugin takes its own handshake choices
    CALLBACK_SOCKET = "kernel-callback"  # the file name of the callback service's socket: the kernel's to choose

    def __init__(self, declared: list[dict], count_tokens: Callable[[dict], dict], hook_timeout_ms: int | None,
                 cookie: tuple[str, str] = DEFAULT_COOKIE):
        self.sockets = SocketDir()  # short enough for a unix socket path, wherever TMPDIR points
        self.deadline = (hook_timeout_ms or 10000) / 1000
        self.callbacks = server()
        kernel_pb2_grpc.add_KernelCallbackServiceServicer_to_server(_Callbacks(count_tokens), self.callbacks)
        self.callback_address = self.sockets.address(self.CALLBACK_SOCKET)
        start(self.callbacks, self.callback_address)
        self.env = self.plugin_env(cookie)
        self.plugins: dict[str, Plugin] = {}
        try:
            for entry in declared:  # all started at once, then each handshake read
                if entry.get("command"):
                    self.plugins[entry["name"]] = self.PLUGIN(list(entry["command"]), self.env)
            for index, plugin in enumerate(self.plugins.values()):
                plugin.connect()
                if self.offers_callbacks(index):
                    plugin.broker.offer(CALLBACK_BROKER_ID, self.callback_address)
        except BaseException:
            self.close()
            raise

    def plugin_env(self, cookie: tuple[str, str]) -> dict[str, str]:
        """An allowlist of the kernel's environment, and go-plugin's own variables: no secret of the kernel's."""
        allowed = {k: os.environ[k] for k in ENV_ALLOWLIST if k in os.environ}
        return {**allowed, **host_env(cookie, str(self.sockets.path))}

    def offers_callbacks(self, index: int) -> bool:
        """Every plugin gets the callback channel, whether or not it will use it."""
        return True

    def route(self, call):
        def routed(name: str, provider: str | None, request: dict) -> dict:
            plugin = self.plugins.get(provider) if name in REQUESTS else None
            if plugin is None:
                return call(name, provider, request)
            try:
                # hook_timeout bounds the hook, Contribute; the set-up calls get the kernel's own patience.
                deadline = self.deadline if name == "Contribute" else max(self.deadline, SETUP_TIMEOUT)
                reply = getattr(plugin.stub, name)(json_format.ParseDict(request, REQUESTS[name]()),
                                                   timeout=deadline)
            except grpc.RpcError as error:
                raise failure_from(error) from None
            return forms.to_json(reply)
        return routed

    def close(self) -> None:
        for plugin in self.plugins.values():
            plugin.ask_to_stop()
        for plugin in self.plugins.values():
            plugin.close()
        self.callbacks.stop(grace=None)
        self.sockets.remove()
