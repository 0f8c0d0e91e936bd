"""How much each binding costs, measured in one run against the bare transport.

    python runners/benchmark.py [--firings 300] [--repeats 3] [--check]

A firing is one assemble of a three-provider chain: one op and three
Contribute callbacks, four round trips in all, each through the driver's own
per-call path (the callback recorder, the result checks). Beside each binding
the script times a bare echo round trip over the same transport (a JSON line
through a child process; a unary RPC over a unix socket), right before it, in
each of --repeats rounds; the medians are reported. With the null kernel,
which does nothing but make the calls, the ratio is what the binding and the
suite's own work (validating, recording, playing the providers) add over the
transport; with the reference kernel it includes a real kernel's work too.
The python binding has no transport: its time per round trip is the suite's
own work in-process. Absolute figures depend on the machine; the ratios are
the result.

--check exits 1 when a target is missed: stdio at most 2x its bare transport,
and in-process at most 100 us per round trip, both with the null kernel. gRPC
is reported only: its bare round trip (HTTP/2 through grpcio's C core, a
thread hand-off each way) already varies by more than the binding adds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc

from conformance.bindings.base import KERNEL_PROTOCOL
from conformance.bindings.grpc_kernel import GrpcKernelBinding
from conformance.bindings.grpc_wire import SocketDir, server, start, wait_ready
from conformance.bindings.jsonlines import JsonLinesProcess
from conformance.bindings.python import PythonBinding
from conformance.bindings.stdio import StdioBinding
from conformance.engine.fake_providers import FakeProviders
from conformance.engine.kernel_driver import _assemble_result, _Recorder
from conformance.engine.scenario import from_vector
from conformance.reference.kernel import create
from conformance.wire.pb.pluggableharness.context.v1 import context_pb2, context_pb2_grpc

RUNNERS = Path(__file__).resolve().parent / "python"
ROUND_TRIPS_PER_FIRING = 4
TARGETS = {"stdio ratio": 2.0, "in-process us": 100.0}  # --check; see the docstring
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
# The least any JSON-lines peer does: read each line as JSON and write it back as JSON, nothing else.
JSON_ECHO = ("import json, sys\nfor line in sys.stdin:\n    sys.stdout.write(json.dumps(json.loads(line)) + '\\n')\n"
             "    sys.stdout.flush()\n")


def time_firings(binding, firings: int) -> float:
    """Seconds per firing, after a warm-up, through the driver's per-call path (kernel_driver.drive's)."""
    fakes = FakeProviders(SCENARIO)
    recorder = _Recorder(fakes)
    binding.start()
    try:
        binding.request("load", {"config": SCENARIO.load_config()}, recorder)
        turn = SCENARIO.turns[0]
        fakes.turn = turn

        def fire() -> None:
            recorder.calls = []
            _assemble_result(binding.request("assemble", {"turn": turn.input}, recorder))

        for _ in range(20):
            fire()
        started = time.perf_counter()
        for _ in range(firings):
            fire()
        return (time.perf_counter() - started) / firings
    finally:
        binding.close()


def time_stdio_echo(trips: int, program: str = ECHO) -> float:
    """Seconds per round trip of a JSON line through a child that echoes it (by default, without reading it)."""
    child = subprocess.Popen([sys.executable, "-c", program], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
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


def time_stdio_floor(shim: str, work: Path, firings: int) -> float:
    """Seconds per firing of the stdio shim answered with a fixed reply: its transport and the shim's own
    work, with no suite work at all (no validation, no recording, no providers played). Below it the
    binding cannot go, whatever the suite stops doing."""
    child = JsonLinesProcess(shim, work, 10, ("PYTHONPATH",))
    child.start()
    answer = {"result": {"sections": [{"provider": "p", "label": "P", "content": [{"text": {"text": "text"}}],
                                       "tokens": 1, "stability": "STABILITY_STATIC", "truncated": False}]}}
    try:
        for request_id, op, fields in ((1, "hello", {"protocol": KERNEL_PROTOCOL}),
                                       (2, "load", {"config": SCENARIO.load_config()})):
            child.send({"id": request_id, "op": op, **fields}), child.receive()

        def fire(request_id: int) -> None:
            child.send({"id": request_id, "op": "assemble", "turn": SCENARIO.turns[0].input})
            while "cb" in (message := child.receive()):
                child.send({"cb": message["cb"], **answer})

        for request_id in range(3, 23):
            fire(request_id)
        started = time.perf_counter()
        for request_id in range(100, 100 + firings):
            fire(request_id)
        return (time.perf_counter() - started) / firings
    finally:
        child.close()


class _Echo(context_pb2_grpc.ContextServiceServicer):
    def Describe(self, request, context):
        return context_pb2.DescribeResponse()


def time_grpc_echo(trips: int) -> float:
    """Seconds per unary RPC over a unix socket to a server that answers at once."""
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


def measure(firings: int, repeats: int) -> list[dict]:
    """One row per binding and kernel: the median seconds per round trip and, where there is one, the median
    seconds per bare round trip of its transport, each bare time taken just before the binding's."""
    trips = firings * ROUND_TRIPS_PER_FIRING
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parent),
                                                              os.environ.get("PYTHONPATH")]))
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as workdir:
        work = Path(workdir)
        for _ in range(repeats):
            for kernel, target, factory in (("null kernel", "benchmark:NullKernel", NullKernel),
                                            ("reference kernel", "conformance.reference.kernel:create", create)):
                shim = f"{sys.executable} {RUNNERS / 'stdio_shim.py'} {target}"
                harness = f"{sys.executable} {RUNNERS / 'grpc_kernel_harness.py'} {target}"
                for binding, bare, opener in (
                        ("python", None, lambda: PythonBinding("bench", KERNEL_PROTOCOL, 10, factory=factory)),
                        ("stdio", time_stdio_echo, lambda: StdioBinding(shim, KERNEL_PROTOCOL, "kernel-protocol.json",
                                                                        work, 10, ("PYTHONPATH",))),
                        ("gRPC", time_grpc_echo, lambda: GrpcKernelBinding(work, 10, command=harness,
                                                                           env_extra=("PYTHONPATH",)))):
                    row = rows.setdefault(f"{binding}, {kernel}", {"name": f"{binding}, {kernel}", "trip": [],
                                                                   "bare": []})
                    if bare:
                        row["bare"].append(bare(trips))
                    row["trip"].append(time_firings(opener(), firings) / ROUND_TRIPS_PER_FIRING)
                if kernel == "null kernel":
                    for name, floor in (("stdio JSON echo", lambda: time_stdio_echo(trips, JSON_ECHO)),
                                        ("stdio shim alone",
                                         lambda: time_stdio_floor(shim, work, firings) / ROUND_TRIPS_PER_FIRING)):
                        row = rows.setdefault(name, {"name": name, "trip": [], "bare": []})
                        row["bare"].append(time_stdio_echo(trips))
                        row["trip"].append(floor())
    return [{"name": r["name"], "trip": statistics.median(r["trip"]),
             "bare": statistics.median(r["bare"]) if r["bare"] else None,
             "ratio": statistics.median(t / b for t, b in zip(r["trip"], r["bare"])) if r["bare"] else None}
            for r in rows.values()]


def misses(rows: list[dict]) -> list[str]:
    """The targets the null-kernel rows miss, each said with its figure."""
    by_name = {r["name"]: r for r in rows}
    found = []
    stdio, in_process = by_name["stdio, null kernel"]["ratio"], by_name["python, null kernel"]["trip"] * 1e6
    if stdio > TARGETS["stdio ratio"]:
        found.append(f"stdio binding {stdio:.1f}x its bare transport (target: at most {TARGETS['stdio ratio']:g}x)")
    if in_process > TARGETS["in-process us"]:
        found.append(f"in-process suite work {in_process:.0f} us per round trip (target: at most "
                     f"{TARGETS['in-process us']:g} us)")
    return found


def render(rows: list[dict], firings: int, repeats: int) -> str:
    lines = [f"{firings} firings of a three-provider chain ({ROUND_TRIPS_PER_FIRING} round trips each), "
             f"median of {repeats} rounds", "",
             f"{'binding':<28}{'per round trip':>16}{'bare transport':>16}{'ratio':>8}"]
    for row in rows:
        bare = f"{row['bare'] * 1e6:.0f} us" if row["bare"] else "-"
        ratio = f"{row['ratio']:.1f}x" if row["ratio"] else "-"
        lines.append(f"{row['name']:<28}{row['trip'] * 1e6:>13.0f} us{bare:>16}{ratio:>8}")
    by_name = {r["name"]: r for r in rows}
    lines += ["", f"in-process suite work (python binding, null kernel): {by_name['python, null kernel']['trip'] * 1e6:.0f}"
              f" us per round trip",
              f"stdio binding vs its bare transport (null kernel): {by_name['stdio, null kernel']['ratio']:.1f}x "
              f"(floors: a child that only parses and writes back each line as JSON, "
              f"{by_name['stdio JSON echo']['ratio']:.1f}x; the shim alone, answered with a fixed reply and no "
              f"suite work, {by_name['stdio shim alone']['ratio']:.1f}x)",
              f"gRPC binding vs its bare transport (null kernel): {by_name['gRPC, null kernel']['ratio']:.1f}x"]
    return "\n".join(lines)


def main(argv: list[str] | None = None, measure=measure) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--firings", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3, help="rounds; each figure is the median (default: 3)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    rows = measure(args.firings, args.repeats)
    print(render(rows, args.firings, args.repeats))
    if not args.check:
        return 0
    missed = misses(rows)
    for miss in missed:
        print(f"MISSED: {miss}")
    print("targets: " + ("missed" if missed else "met"))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
