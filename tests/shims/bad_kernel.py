"""A kernel shim that misbehaves on purpose, for the robustness tests.

    python tests/shims/bad_kernel.py MODE

MODE picks what goes wrong on the first assemble: crash (exit 3), garbage (a
line that is not JSON), hang (never answer), close (close stdout), wrong-id
(answer another id), error (an error reply), no-hello (exit at once),
spawn-and-hang (start a grandchild that would outlive a careless harness).
"""

import json
import os
import subprocess
import sys
import time

from conformance.reference.kernel import create

MODE = sys.argv[1]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def call(name, provider, request):
    send({"cb": 1, "call": name, "request": request, **({"provider": provider} if provider else {})})
    answer = json.loads(sys.stdin.readline())
    if "error" in answer:
        from conformance.bindings.base import CallFailed
        raise CallFailed.from_json(answer["error"])
    return answer["result"]


def misbehave():
    if MODE == "crash":
        print("simulated crash in assemble", file=sys.stderr)
        sys.exit(3)
    if MODE == "garbage":
        sys.stdout.write("this is not json\n")
        sys.stdout.flush()
        time.sleep(30)
    if MODE == "hang":
        time.sleep(300)
    if MODE == "spawn-and-hang":
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        time.sleep(300)
    if MODE == "close":
        os.close(1)
        time.sleep(30)


def main():
    if MODE == "no-hello":
        sys.exit(1)
    kernel = create()
    for line in sys.stdin:
        request = json.loads(line)
        op, fields = request["op"], {k: v for k, v in request.items() if k not in ("id", "op")}
        if op == "assemble":
            misbehave()
            if MODE == "wrong-id":
                send({"id": request["id"] + 100, "result": {}})
                continue
            if MODE == "error":
                send({"id": request["id"], "error": {"code": "INTERNAL", "message": "kernel exploded"}})
                continue
        send({"id": request["id"], "result": getattr(kernel, op)(fields, call)})
        if op == "stop":
            return


main()
