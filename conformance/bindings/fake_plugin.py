"""A fake provider as a real go-plugin plugin: what `ctxconf kernel
--launch-plugins` hands the kernel to launch, one per declared provider.

    python -m conformance.bindings.fake_plugin --name NAME --relay ADDR --report FILE [--cookie KEY=VALUE]

It behaves as a plugin must: it refuses to serve without the magic cookie and
protocol version, prints the handshake line, serves ContextService with
go-plugin's own services, and stops on GRPCController/Shutdown (or, with
--ignore-stop, hears it and goes on until it is killed). Each
ContextService call is relayed, deadline and cancellation included, to the
suite's fake provider at --relay, which answers from the case's script; a
scripted crash makes the process exit on the spot. On its first Contribute it
calls CountTokens on the kernel's callback service, reached through broker ID 1,
as a provider counting its sections would; with --count-at-offer it counts once
more as soon as the service is offered, during the kernel's Load (its
GetCapabilities waits for that count, and the report says whether the answer
came only after the plugin was set up).

What it observes goes to --report as JSON lines, one event each, so the suite
can judge the kernel's plugin machinery (kernel_checks.check_plugins): its
environment (names only), the cookie and protocol versions it was given, every
broker offer, the CountTokens probe, a Shutdown, a crash.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time

import grpc

from conformance.bindings import process_tree
from conformance.bindings.fake_services import CRASH_METADATA
from conformance.bindings.go_plugin_protocol import CALLBACK_BROKER_ID, DEFAULT_COOKIE, parse_cookie
from conformance.bindings.grpc_wire import CHANNEL_OPTIONS, abort, failure_from
from conformance.bindings.plugin_side import refusal, serve
from conformance.wire import forms
from conformance.wire.pb.pluggableharness.context.v1 import context_pb2_grpc
from conformance.wire.pb.pluggableharness.kernel.v1 import kernel_pb2_grpc

PROBE_TEXT = "ctxconf: a provider counting its section through the kernel"
OFFER_WAIT = 5.0   # how long the probe waits for the host to announce broker ID 1
INLINE_WAIT = 1.0  # how much of that the first Contribute (or GetCapabilities) may spend waiting for the offer
COUNT_TIMEOUT = 5.0  # the deadline of each count the plugin makes through the kernel
# How long GetCapabilities waits for the count made at the offer: past the count's own deadline, so the count has
# ended, answered or failed, before the plugin is set up. Were the two equal, a kernel that answers the count only
# once GetCapabilities has returned could still, by a few milliseconds, beat the count's deadline.
SET_UP_WAIT = COUNT_TIMEOUT + 1.0
CRASH_EXIT = 70


class Observer:
    """Appends one JSON line per event to the report file."""

    def __init__(self, path: str):
        self.path = path
        self.lock = threading.Lock()

    def __call__(self, event: str, **fields) -> None:
        line = json.dumps({"event": event, "pid": os.getpid(), "t": time.time(), **fields}) + "\n"
        with self.lock, open(self.path, "a", encoding="utf-8") as report:
            report.write(line)


class CallbackChannel:
    """The kernel's KernelCallbackService, as announced on broker ID 1."""

    def __init__(self, observe: Observer, model: str = "", count_at_offer: bool = False):
        self.observe = observe
        self.model = model     # "PROVIDER/ID" of a declared model with a tokenizer, to count for too; or ""
        self.address: str | None = None
        self.offered = threading.Event()
        self.probed = False
        self.count_at_offer = count_at_offer
        self.counted_at_offer = threading.Event()  # set once that count is answered (or there is none to make)
        if not count_at_offer:
            self.counted_at_offer.set()
        self.set_up = threading.Event()  # the plugin has answered the kernel's (first) GetCapabilities

    def on_offer(self, service_id: int, address: str) -> None:
        self.observe("offer", service_id=service_id)
        if service_id == CALLBACK_BROKER_ID:
            self.address = address
            self.offered.set()
            if self.count_at_offer and not self.counted_at_offer.is_set():
                threading.Thread(target=self._count_at_offer, daemon=True).start()

    def _count_at_offer(self) -> None:
        try:
            self._count("probe_offer", {}, lambda: {"after_set_up": self.set_up.is_set()})
        finally:
            self.counted_at_offer.set()

    def before_set_up(self) -> None:
        """GetCapabilities waits for the count made at the offer, so that a kernel that offers (and answers) at
        handshake answers it inside the Load; an offer on its way as the call came is waited for as long as the
        probe waits for one (the offer and this call travel on streams of their own: a loaded machine may deliver
        the offer seconds late). One that offers, or answers, only once the plugin is set up shows as the
        count's `after_set_up`."""
        if self.count_at_offer and self.offered.wait(OFFER_WAIT):
            self.counted_at_offer.wait(SET_UP_WAIT)

    def probe(self) -> None:
        """Once, inside the first Contribute: count a text through the kernel, as a provider computing its
        `tokens` does. It runs while the call is in flight, the one time a kernel over stdio can answer (a
        callback between ops breaks ctxconf-kernel/1); only a broker offer that is late moves it beside the call,
        so a kernel that never offers costs no deadline."""
        if self.probed:
            return
        self.probed = True
        if self.offered.wait(INLINE_WAIT):
            self._counts()
        else:
            threading.Thread(target=self._probe, daemon=True).start()

    def _probe(self) -> None:
        if not self.offered.wait(OFFER_WAIT):
            self.observe("probe", ok=False, error=f"no broker ID {CALLBACK_BROKER_ID} offer within {OFFER_WAIT:g}s")
            return
        self._counts()

    def _counts(self) -> None:
        self._count("probe", {})
        if self.model:  # the same text for a model with a tokenizer: the kernel routes it to that model's provider
            provider, _, model_id = self.model.partition("/")
            self._count("probe_model", {"model_ref": {"provider": provider, "id": model_id}})

    def _count(self, event: str, ref: dict, noted=dict) -> None:
        """One count through the kernel, observed as `event` with what `noted()` says as the answer came."""
        request = forms.parse("CountTokensRequest", {"content": [{"text": {"text": PROBE_TEXT}}], **ref})
        try:
            with grpc.insecure_channel(f"unix:{self.address}") as channel:
                reply = kernel_pb2_grpc.KernelCallbackServiceStub(channel).CountTokens(request, timeout=COUNT_TIMEOUT)
        except grpc.RpcError as error:
            self.observe(event, ok=False, error=f"{error.code().name}: {error.details()}", **ref, **noted())
            return
        self.observe(event, ok=True, text=PROBE_TEXT, **ref, **forms.to_json(reply), **noted())


class Relay(context_pb2_grpc.ContextServiceServicer):
    """Forwards each call to the suite's fake provider and hands back its answer, error details included."""

    def __init__(self, stub: context_pb2_grpc.ContextServiceStub, callbacks: CallbackChannel, observe: Observer):
        self.stub, self.callbacks, self.observe = stub, callbacks, observe

    def _forward(self, method: str, request, context: grpc.ServicerContext):
        remaining = context.time_remaining()
        future = getattr(self.stub, method).future(request, timeout=remaining if remaining and remaining < 3600 else None)
        context.add_callback(future.cancel)  # the kernel gave up: so does the call it is waiting on
        try:
            return future.result()
        except grpc.FutureCancelledError:
            context.abort(grpc.StatusCode.CANCELLED, "the kernel cancelled the call")
        except grpc.RpcError as error:
            trailing = dict(error.trailing_metadata() or ())
            if trailing.get(CRASH_METADATA[0]) == CRASH_METADATA[1]:
                self.observe("crash", method=method)
                os._exit(CRASH_EXIT)
            abort(context, failure_from(error))  # the same code, message, ContextError and details

    def GetCapabilities(self, request, context):
        self.callbacks.before_set_up()
        try:
            return self._forward("GetCapabilities", request, context)
        finally:
            self.callbacks.set_up.set()

    def Configure(self, request, context):
        return self._forward("Configure", request, context)

    def Describe(self, request, context):
        return self._forward("Describe", request, context)

    def Contribute(self, request, context):
        self.callbacks.probe()
        return self._forward("Contribute", request, context)


def main(argv: list[str] | None = None) -> int | None:
    parser = argparse.ArgumentParser(prog="fake_plugin", description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True, help="the provider this plugin plays")
    parser.add_argument("--relay", required=True, help="the suite's fake provider to relay calls to")
    parser.add_argument("--report", required=True, help="JSON lines file for what this plugin observes")
    parser.add_argument("--cookie", default="=".join(DEFAULT_COOKIE), help="KEY=VALUE the host must set")
    parser.add_argument("--probe-model", default="", help="PROVIDER/ID of a model to count the probe for too")
    parser.add_argument("--no-handshake", action="store_true",
                        help="exit at once without a handshake line, as a plugin that cannot start does")
    parser.add_argument("--handshake-delay", type=float, default=0.0, metavar="SECONDS",
                        help="serve (and print the handshake line), or give up without one, that much later")
    parser.add_argument("--count-at-offer", action="store_true",
                        help="call CountTokens as soon as the callback service is offered, during Load, too")
    parser.add_argument("--ignore-stop", action="store_true",
                        help="hear Shutdown and SIGTERM but keep running, as a hung plugin does: only a kill ends it")
    args = parser.parse_args(argv)
    cookie = parse_cookie(args.cookie)
    observe = Observer(args.report)
    stopping = threading.Event()
    asked = threading.Event() if args.ignore_stop else stopping  # what a request to stop sets
    # A SIGTERM asks it to stop as Shutdown does (the drain before a kill); a SIGKILL is not asking. Heard from
    # the start: a host giving up on its launch may send it while this plugin is still starting.
    signal.signal(signal.SIGTERM, lambda *_: (observe("terminated"), asked.set()))
    given = os.environ.get(cookie[0])
    observe("started", name=args.name, env=sorted(os.environ),
            cookie="ok" if given == cookie[1] else "missing" if given is None else "wrong",
            protocol_versions=os.environ.get("PLUGIN_PROTOCOL_VERSIONS"))
    time.sleep(args.handshake_delay)  # slow to start: it serves, or gives up without a handshake, that much later
    problem = refusal(cookie)  # as a go-plugin plugin refuses; without PLUGIN_PROTOCOL_VERSIONS it serves its own
    if problem:
        print(problem, file=sys.stderr)
        observe("refused", why=problem)
        return 1
    if args.no_handshake:  # as a plugin that cannot start: gone without a handshake line
        observe("refused", why="told to print no handshake line (--no-handshake)")
        return 1
    callbacks = CallbackChannel(observe, args.probe_model, args.count_at_offer)
    channel = grpc.insecure_channel(args.relay, options=CHANNEL_OPTIONS)
    relay = Relay(context_pb2_grpc.ContextServiceStub(channel), callbacks, observe)
    grpc_server = serve(lambda s: context_pb2_grpc.add_ContextServiceServicer_to_server(relay, s),
                        asked, callbacks.on_offer, lambda: observe("shutdown"))
    observe("serving", startup_seconds=process_tree.age())  # the suite's own cost, which the kernel's timeout does not bear
    stopping.wait()
    grpc_server.stop(grace=0.2).wait()  # the host's broker and stdio streams stay open until it lets go
    os._exit(0)  # at once: tearing down grpc's threads at interpreter exit costs more than the whole shutdown


if __name__ == "__main__":
    sys.exit(main())
