"""What the hostile shims share: the reference kernel behind ctxconf-kernel/1
(as tests/shims/bad_kernel.py), with a hook where each one misbehaves.

A shim runs as `python tests/hostile/NAME.py [ARG]`; the suite hands it
$HOSTILE_TOKEN (through --env) so the test can find whatever it leaves behind.
"""

import json
import os
import sys
import time

from conformance.bindings.base import CallFailed
from conformance.reference.kernel import create

TOKEN = os.environ.get("HOSTILE_TOKEN", "no-token")
ARG = sys.argv[1] if len(sys.argv) > 1 else ""


def write(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def send(message: dict) -> None:
    write(json.dumps(message).encode() + b"\n")


def call(name, provider, request):
    send({"cb": 1, "call": name, "request": request, **({"provider": provider} if provider else {})})
    answer = json.loads(sys.stdin.readline())
    if "error" in answer:
        raise CallFailed.from_json(answer["error"])
    return answer["result"]


def serve(misbehave=lambda op, reply: False) -> None:
    """Answer every op as the reference kernel does, unless misbehave(op, reply) says it took care of it."""
    kernel = create()
    for line in sys.stdin:
        request = json.loads(line)
        op = request["op"]
        fields = {k: v for k, v in request.items() if k not in ("id", "op")}
        reply = {"id": request["id"], "result": getattr(kernel, op)(fields, call)}
        if not misbehave(op, reply):
            send(reply)
        if op == "stop":
            return


def sleeper(*marks: str) -> list[str]:
    """A command that sleeps for four minutes, its command line marked so the test can find it (and
    unlike what tests/test_stdio_robustness.py looks for, which may run at the same time)."""
    return [sys.executable, "-c", "import time; time.sleep(240)", TOKEN, *marks]


def daemonize() -> None:
    """A daemon (double fork, setsid, environment cleared) holding stdout and stderr open."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            command = sleeper("daemon")
            os.execve(command[0], command, {})  # no token in its environment: only the subreaper finds it
        os._exit(0)
    os.wait()


def hang() -> None:
    time.sleep(300)
