"""What the suite costs per round trip, measured in one run against the floors it cannot go below.

    python runners/benchmark.py [--firings 300] [--rounds 7] [--check] [--properties 25]

A firing is one assemble of a three-provider chain: one op and three
Contribute callbacks, four round trips in all, each through the driver's own
per-call path (the callback recorder, the fake providers, the result checks).
Each binding is timed beside its floor, right before it in every round, and
each figure is the median over the rounds (a ratio: the median of the rounds'
ratios):

- stdio: the floor is the same stdio shim answered with a fixed reply, with
  no suite work at all (no validation, no recording, no providers played). The
  ratio says how much the suite's own work adds to what the shim costs.
- gRPC: the floor is a bare unary call over a unix socket to a server that
  answers at once.
- python (in-process): no transport, so no floor; its time per round trip is
  the suite's own work.

With the null kernel, which does nothing but make the calls, the figures are the
binding's and the suite's; the reference kernel's rows add a real kernel's work
and are reported only. Absolute figures depend on the machine and its load; the
ratios taken side by side in one run are the result.

--check exits 1 when a target is missed, all with the null kernel: stdio at most
1.25x the shim alone, gRPC at most 1.5x its bare unary call, in-process at most
20 us per round trip.

--properties N runs the kernel property tests in-process on the reference
kernel (N scenarios, a fixed seed) and prints, per scenario, hypothesis' time
generating it beside the suite's time driving and judging it
(conformance/properties/runner.py's ScenarioTiming says what each covers).
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
TARGETS = {"stdio ratio": 1.25, "gRPC ratio": 1.5, "in-process us": 20.0}  # --check; see the docstring
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


def time_firings(binding, firings: int, cpu: list | None = None) -> float:
    """Seconds per firing, after a warm-up, through the driver's per-call path (kernel_driver.drive's); `cpu`
    gets the CPU seconds per firing of this process, all its threads."""
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
        started, cpu_started = time.perf_counter(), time.process_time()
        for _ in range(firings):
            fire()
        if cpu is not None:
            cpu.append((time.process_time() - cpu_started) / firings)
        return (time.perf_counter() - started) / firings
    finally:
        binding.close()


def time_stdio_echo(trips: int) -> float:
    """Seconds per round trip of a JSON line through a child that echoes it without reading it."""
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


def measure(firings: int, rounds: int) -> list[dict]:
    """One row per binding and kernel: the median seconds per round trip and, where it has one, the median
    seconds per round trip of its floor, taken right before it in the same round, and the median ratio."""
    trips = firings * ROUND_TRIPS_PER_FIRING
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parent),
                                                              os.environ.get("PYTHONPATH")]))
    rows: dict[str, dict] = {}

    def timed(name: str, floor_name: str | None, floor, trip) -> None:
        row = rows.setdefault(name, {"name": name, "floor name": floor_name, "trip": [], "floor": [], "cpu": []})
        if floor is not None:
            row["floor"].append(floor())
        row["trip"].append(trip(row["cpu"]))

    with tempfile.TemporaryDirectory() as workdir:
        work = Path(workdir)
        for _ in range(rounds):
            for kernel, target, factory in (("null kernel", "benchmark:NullKernel", NullKernel),
                                            ("reference kernel", "conformance.reference.kernel:create", create)):
                shim = f"{sys.executable} {RUNNERS / 'stdio_shim.py'} {target}"
                harness = f"{sys.executable} {RUNNERS / 'grpc_kernel_harness.py'} {target}"

                def shim_alone() -> float:
                    return time_stdio_floor(shim, work, firings) / ROUND_TRIPS_PER_FIRING

                def per_trip(binding, cpu: list | None = None) -> float:
                    return time_firings(binding, firings, cpu) / ROUND_TRIPS_PER_FIRING

                null = kernel == "null kernel"  # the fixed reply is no floor for a real kernel, which reads it
                if null:  # the shim's own cost against the bare echo, for the record
                    timed("stdio shim alone", "bare echo", lambda: time_stdio_echo(trips), lambda cpu: shim_alone())
                timed(f"python, {kernel}", None, None,  # in-process, the CPU time is the suite's (and the kernel's)
                      lambda cpu: per_trip(PythonBinding("bench", KERNEL_PROTOCOL, 10, factory=factory), cpu))
                timed(f"stdio, {kernel}", "shim alone" if null else None, shim_alone if null else None,
                      lambda cpu: per_trip(StdioBinding(shim, KERNEL_PROTOCOL, "kernel-protocol.json", work, 10,
                                                    ("PYTHONPATH",))))
                timed(f"gRPC, {kernel}", "bare unary call", lambda: time_grpc_echo(trips),
                      lambda cpu: per_trip(GrpcKernelBinding(work, 10, command=harness, env_extra=("PYTHONPATH",))))
    return [{"name": r["name"], "floor name": r["floor name"], "trip": statistics.median(r["trip"]),
             "floor": statistics.median(r["floor"]) if r["floor"] else None,
             "ratio": statistics.median(t / f for t, f in zip(r["trip"], r["floor"])) if r["floor"] else None,
             "cpu": statistics.median(r["cpu"]) / ROUND_TRIPS_PER_FIRING if r["cpu"] else None}
            for r in rows.values()]


def misses(rows: list[dict]) -> list[str]:
    """The targets the null-kernel rows miss, each said with its figure."""
    by_name = {r["name"]: r for r in rows}
    found = []
    stdio, grpc_ratio = by_name["stdio, null kernel"]["ratio"], by_name["gRPC, null kernel"]["ratio"]
    in_process = by_name["python, null kernel"]["trip"] * 1e6
    if stdio > TARGETS["stdio ratio"]:
        found.append(f"stdio binding {stdio:.2f}x the shim alone (target: at most {TARGETS['stdio ratio']:g}x)")
    if grpc_ratio > TARGETS["gRPC ratio"]:
        found.append(f"gRPC binding {grpc_ratio:.2f}x its bare unary call (target: at most {TARGETS['gRPC ratio']:g}x)")
    if in_process > TARGETS["in-process us"]:
        found.append(f"in-process suite work {in_process:.1f} us per round trip (target: at most "
                     f"{TARGETS['in-process us']:g} us)")
    return found


def render(rows: list[dict], firings: int, rounds: int) -> str:
    lines = [f"{firings} firings of a three-provider chain ({ROUND_TRIPS_PER_FIRING} round trips each), "
             f"median of {rounds} rounds", "",
             f"{'binding':<26}{'per round trip':>15}   {'floor':<16}{'floor time':>11}{'ratio':>8}"]
    for row in rows:
        floor = f"{row['floor'] * 1e6:.1f} us" if row["floor"] else "-"
        ratio = f"{row['ratio']:.2f}x" if row["ratio"] else "-"
        lines.append(f"{row['name']:<26}{row['trip'] * 1e6:>12.1f} us   {row['floor name'] or '-':<16}{floor:>11}"
                     f"{ratio:>8}")
    by_name = {r["name"]: r for r in rows}
    lines += ["", "targets (null kernel):",
              f"  stdio binding / shim alone: {by_name['stdio, null kernel']['ratio']:.2f}x "
              f"(at most {TARGETS['stdio ratio']:g}x)",
              f"  gRPC binding / bare unary call: {by_name['gRPC, null kernel']['ratio']:.2f}x "
              f"(at most {TARGETS['gRPC ratio']:g}x)",
              f"  in-process suite work: {by_name['python, null kernel']['trip'] * 1e6:.1f} us per round trip "
              f"(at most {TARGETS['in-process us']:g} us)"]
    if by_name["python, null kernel"].get("cpu"):  # less moved by a busy machine than the wall clock; not checked
        lines.append(f"  in-process suite work, CPU time: {by_name['python, null kernel']['cpu'] * 1e6:.1f} us per "
                     f"round trip (reported only)")
    return "\n".join(lines)


def property_timings(scenarios: int) -> list:
    """Each scenario's ScenarioTiming, from the kernel property tests on the reference kernel in-process
    (ci profile: a fixed seed, so every run times the same scenarios)."""
    from conformance.engine.connection import Connection
    from conformance.data.disk_cache import ENV
    from conformance.properties.runner import PropertyRun, kernel_property
    os.environ.pop(ENV, None)  # drawn here, not played back from another process's search
    run = PropertyRun(profile="ci", examples=scenarios, shrink=False, timings=[])
    with Connection(lambda: PythonBinding("conformance.reference.kernel:create", KERNEL_PROTOCOL, 10)) as connection:
        kernel_property(connection, run)
    return run.timings


def render_timings(timings: list) -> str:
    lines = ["kernel property tests, reference kernel in-process, ci profile: per scenario, ms", "",
             f"{'scenario':>8}{'generating':>12}{'driving':>10}{'judging':>10}"]
    for number, timing in enumerate(timings, 1):
        lines.append(f"{number:>8}{timing.generating * 1e3:>12.2f}{timing.driving * 1e3:>10.2f}"
                     f"{timing.judging * 1e3:>10.2f}")
    for what, figure in (("total", sum), ("median", statistics.median)):
        lines.append(f"{what:>8}" + "".join(f"{figure([getattr(t, part) for t in timings]) * 1e3:>{width}.2f}"
                                            for part, width in (("generating", 12), ("driving", 10),
                                                                ("judging", 10))))
    return "\n".join(lines)


def main(argv: list[str] | None = None, measure=measure) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--firings", type=int, default=300)
    parser.add_argument("--rounds", "--repeats", type=int, default=7,
                        help="rounds; each figure is the median (default: 7)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--properties", type=int, default=0, metavar="N",
                        help="also time N generated kernel scenarios: generating, driving, judging")
    args = parser.parse_args(argv)
    rows = measure(args.firings, args.rounds)
    print(render(rows, args.firings, args.rounds))
    if args.properties:
        print("\n" + render_timings(property_timings(args.properties)))
    if not args.check:
        return 0
    missed = misses(rows)
    for miss in missed:
        print(f"MISSED: {miss}")
    print("targets: " + ("missed" if missed else "met"))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
