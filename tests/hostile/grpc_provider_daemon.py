"""The reference file reader served over plain gRPC (as runners/python/grpc_provider_server.py
serves it, for `ctxconf provider --grpc-cmd`), but: with ARG holding `daemon`, it first starts a daemon
(double fork, setsid, environment cleared) that outlives it; with `linger`, it does not stop when its
stdin closes (the suite then kills it, which is how a gRPC server may well end)."""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "runners" / "python"))

import grpc  # noqa: E402

from common import ARG, sleeper  # noqa: E402
from conformance.bindings.grpc_wire import server, start  # noqa: E402
from conformance.wire.pb.pluggableharness.context.v1 import context_pb2_grpc  # noqa: E402
from provider_servicer import ContextServicer, KernelCallbacks, load  # noqa: E402

if "daemon" in ARG and os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        command = sleeper("grpc-daemon")
        os.execve(command[0], command, {})  # no token in its environment: only the subreaper finds it
    os._exit(0)
if "daemon" in ARG:
    os.wait()

callbacks = KernelCallbacks(grpc.insecure_channel(os.environ["CTXCONF_KERNEL_CALLBACK"]))
grpc_server = server()
context_pb2_grpc.add_ContextServiceServicer_to_server(
    ContextServicer(load("conformance.reference.filereader:create"), callbacks), grpc_server)
start(grpc_server, os.environ["CTXCONF_LISTEN"])
if "linger" in ARG:
    while True:
        time.sleep(60)
sys.stdin.read()
grpc_server.stop(grace=1).wait()
