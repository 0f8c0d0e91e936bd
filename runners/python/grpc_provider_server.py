"""A context provider served over plain gRPC; the reference peer of
`ctxconf provider --grpc-cmd`.

    ctxconf provider --grpc-cmd "python runners/python/grpc_provider_server.py conformance.reference.filereader:create" \\
                     --manifest examples/manifests/filereader.yaml

It listens on $CTXCONF_LISTEN and reaches the kernel's callback service at
$CTXCONF_KERNEL_CALLBACK; it stops on SIGTERM or when stdin closes.
"""

import os
import sys
import threading

import grpc

from conformance.bindings.grpc_wire import server, start
from conformance.wire.pb.pluggableharness.context.v1 import context_pb2_grpc
from provider_servicer import ContextServicer, KernelCallbacks, load


def main(target: str) -> None:
    callback = os.environ.get("CTXCONF_KERNEL_CALLBACK")
    callbacks = KernelCallbacks(grpc.insecure_channel(callback) if callback else None)
    grpc_server = server()
    context_pb2_grpc.add_ContextServiceServicer_to_server(ContextServicer(load(target), callbacks), grpc_server)
    start(grpc_server, os.environ.get("CTXCONF_LISTEN", "localhost:50152"))
    done = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()  # parent gone: stop
    done.wait()
    grpc_server.stop(grace=1).wait()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: grpc_provider_server.py MODULE:FACTORY")
    main(sys.argv[1])
