"""How much each binding costs, measured in one run against the bare transport.

    python conformance/runners/benchmark.py [--firings 300]

A firing is one assemble of a three-provider chain: one op and three
Contribute callbacks, four round trips in all. Beside each binding the script
times a bare echo round trip over the same transport (a JSON line through a
child process; a unary RPC over a unix socket). With the null kernel, which
does nothing but make the calls, the ratio is what the binding and the suite's
own work (validating, recording, playing the providers) add over the
transport; with the reference kernel it includes a real kernel's work too.
Absolute figures depend on the machine; the ratios are the result.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc

from conformance.bindings.base import KERNEL_PROTOCOL
from conformance.bindings.grpc_kernel import GrpcKernelBinding
from conformance.bindings.grpc_wire import SocketDir, server, start, wait_ready
from conformance.bindings.python import PythonBinding
from conformance.bindings.stdio import StdioBinding
from conformance.engine.fake_providers import FakeProviders
from conformance.engine.scenario import from_vector
from conformance.reference.kernel import create
from conformance.wire.pb.pluggableharness.context.v1 import context_pb2, context_pb2_grpc

RUNNERS = Path(__file__).resolve().parent / "python"
ROUND_TRIPS_PER_FIRING = 4
SCENARIO = from_vector({
    "id": "kernel/bench/three", "title": "three providers", "requirements": ["K-PRIOR-SECTIONS"],
    "setup": {"models": [{"id": "m", "context_window": 100000, "reserved_output": 0, "system_overhead": 0}],
              "primary_model": "m",
              "providers": [{"name": f"p{i}", "capabilities": {"default_token_budget": 100, "stability": "STABILITY_STATIC"},
                             "script": [{"append": [{"label": f"P{i}", "text": "a section of ordinary text"}]}]}
                            for i in range(3)]},
    "turns": [{"assemble": {"session_id": "s", "turn_id": "t", "model": "m"}}]})

class NullKernel:
    """A kernel that only makes the calls: the binding's cost with no kernel work behind it."""

    def hello(self, request, call):
        return {"implementation": {"name": "null-kernel", "version": "0", "language": "python"}, "features": ["reload"]}

    def load(self, request, call):
        self.names = [p["name"] for p in request["config"]["providers"]]
        return {"warnings": []}

    def assemble(self, request, call):
        for name in self.names:
            call("Contribute", name, {"token_budget": 100})
        return {"sections": [], "prompt": "", "history": [], "turn_failed": False, "diagnostics": []}

    def stop(self, request, call):
        return {}


ECHO = "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line)\n    sys.stdout.flush()\n"


def per_second(count: int, seconds: float) -> float:
    return count / seconds if seconds else float("inf")


def time_firings(binding, firings: int) -> float:
    """Seconds per firing, after a warm-up."""
    fakes = FakeProviders(SCENARIO)
    binding.start()
    try:
        binding.request("load", {"config": SCENARIO.load_config()}, fakes.answer)
        turn = SCENARIO.turns[0]
        fakes.turn = turn
        for _ in range(20):
            binding.request("assemble", {"turn": turn.input}, fakes.answer)
        started = time.perf_counter()
        for _ in range(firings):
            binding.request("assemble", {"turn": turn.input}, fakes.answer)
        return (time.perf_counter() - started) / firings
    finally:
        binding.close()


def time_stdio_echo(trips: int) -> float:
    child = subprocess.Popen([sys.executable, "-c", ECHO], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             bufsize=1)
    line = json.dumps({"id": 1, "result": {"sections": []}}) + "\n"
    try:
        for _ in range(50):
            child.stdin.write(line), child.stdin.flush(), child.stdout.readline()
        started = time.perf_counter()
        for _ in range(trips):
            child.stdin.write(line)
            child.stdin.flush()
            json.loads(child.stdout.readline())
        return (time.perf_counter() - started) / trips
    finally:
        child.stdin.close()
        child.wait()


class _Echo(context_pb2_grpc.ContextServiceServicer):
    def Describe(self, request, context):
        return context_pb2.DescribeResponse()


def time_grpc_echo(trips: int) -> float:
    sockets = SocketDir()
    address = sockets.address("echo")
    grpc_server = server()
    context_pb2_grpc.add_ContextServiceServicer_to_server(_Echo(), grpc_server)
    start(grpc_server, address)
    channel = grpc.insecure_channel(address)
    try:
        wait_ready(channel, 5, "the echo server")
        stub = context_pb2_grpc.ContextServiceStub(channel)
        for _ in range(50):
            stub.Describe(context_pb2.DescribeRequest())
        started = time.perf_counter()
        for _ in range(trips):
            stub.Describe(context_pb2.DescribeRequest(), timeout=5)
        return (time.perf_counter() - started) / trips
    finally:
        channel.close()
        grpc_server.stop(None)
        sockets.remove()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--firings", type=int, default=300)
    args = parser.parse_args()
    trips = args.firings * ROUND_TRIPS_PER_FIRING
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parent),
                                                              os.environ.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory() as workdir:
        work = Path(workdir)
        stdio_echo, grpc_echo = time_stdio_echo(trips), time_grpc_echo(trips)
        rows = []
        for kernel, target, factory in (("null kernel", "benchmark:NullKernel", NullKernel),
                                        ("reference kernel", "conformance.reference.kernel:create", create)):
            shim = f"{sys.executable} {RUNNERS / 'stdio_shim.py'} {target}"
            harness = f"{sys.executable} {RUNNERS / 'grpc_kernel_harness.py'} {target}"
            rows += [
                (f"python, {kernel}", time_firings(PythonBinding("bench", KERNEL_PROTOCOL, 10, factory=factory),
                                                   args.firings), None),
                (f"stdio, {kernel}", time_firings(StdioBinding(shim, KERNEL_PROTOCOL, "kernel-protocol.json", work, 10,
                                                               ("PYTHONPATH",)), args.firings), stdio_echo),
                (f"gRPC, {kernel}", time_firings(GrpcKernelBinding(work, 10, command=harness, env_extra=("PYTHONPATH",)),
                                                 args.firings), grpc_echo),
            ]
    print(f"{args.firings} firings of a three-provider chain ({ROUND_TRIPS_PER_FIRING} round trips each)\n")
    print(f"{'binding':<30}{'firings/s':>10}{'per round trip':>16}{'bare transport':>16}{'ratio':>8}")
    for name, seconds, echo in rows:
        per_trip = seconds / ROUND_TRIPS_PER_FIRING
        transport = f"{echo * 1e6:.0f} us" if echo else "-"
        ratio = f"{per_trip / echo:.1f}x" if echo else "-"
        print(f"{name:<30}{per_second(1, seconds):>10.0f}{per_trip * 1e6:>13.0f} us{transport:>16}{ratio:>8}")
    print(f"\nper firing, gRPC binding vs stdio binding: {rows[2][1] / rows[1][1]:.1f}x (null kernel), "
          f"{rows[5][1] / rows[4][1]:.1f}x (reference kernel)")


if __name__ == "__main__":
    main()
