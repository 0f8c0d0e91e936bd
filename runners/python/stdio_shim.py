"""A stdio shim around any Python implementation object: it speaks
ctxconf-kernel/1 or ctxconf-provider/1 in JSON lines, turning each op into a
call of the object's method of the same name. It is the stdio binding's
reference peer and a template for a shim in another language.

    ctxconf kernel   --stdio "python runners/python/stdio_shim.py conformance.reference.kernel:create"
    ctxconf provider --stdio "python runners/python/stdio_shim.py conformance.reference.filereader:create" \\
                     --manifest examples/manifests/filereader.yaml

While an op runs, the object's callbacks go out as {"cb": N, ...} lines and
the shim blocks until the suite's answer comes back.
"""

import importlib
import json
import sys
import threading

from conformance.bindings.base import CallFailed


class Channel:
    def __init__(self, stdin, stdout):
        self.stdin, self.stdout = stdin, stdout
        self.next_cb = 0
        self.lock = threading.Lock()  # a callback and its answer are one exchange, whichever thread makes it

    def send(self, message: dict) -> None:
        self.stdout.write(json.dumps(message, ensure_ascii=False) + "\n")
        self.stdout.flush()

    def receive(self) -> dict | None:
        line = self.stdin.readline()
        return json.loads(line) if line else None

    def call(self, name: str, provider: str | None, request: dict) -> dict:
        with self.lock:
            self.next_cb += 1
            message = {"cb": self.next_cb, "call": name, "request": request}
            if provider is not None:
                message["provider"] = provider
            self.send(message)
            answer = self.receive()
        if answer is None:
            raise SystemExit(0)  # the suite went away
        if "error" in answer:
            raise CallFailed.from_json(answer["error"])
        return answer["result"]


def main(target: str) -> int:
    module, _, factory = target.partition(":")
    implementation = getattr(importlib.import_module(module), factory)()
    channel = Channel(sys.stdin, sys.stdout)
    while (request := channel.receive()) is not None:
        op = request.get("op", "")
        fields = {k: v for k, v in request.items() if k not in ("id", "op")}
        method = getattr(implementation, op, None) if not op.startswith("_") else None
        try:
            if method is None:
                raise CallFailed("UNIMPLEMENTED", f"no op {op!r}")
            reply = {"result": method(fields, channel.call)}
        except CallFailed as failure:  # a structured error answer, e.g. a Configure that rejects
            reply = {"error": failure.to_json()}
        except Exception as exc:  # report and keep serving: the suite decides what an error means
            reply = {"error": {"code": "INTERNAL", "message": f"{type(exc).__name__}: {exc}"}}
        channel.send({"id": request.get("id"), **reply})
        if op == "stop":
            break
    return 0


USAGE = """usage: stdio_shim.py MODULE:FACTORY

Serves the Python object FACTORY() returns over ctxconf's stdio harness protocol (JSON lines on stdin and
stdout): ctxconf kernel --stdio "python stdio_shim.py mypkg.kernel:create"."""

if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
        print(USAGE)
        sys.exit(0)
    if len(sys.argv) != 2 or ":" not in sys.argv[1]:
        print(USAGE, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
