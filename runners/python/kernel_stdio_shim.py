"""A ctxconf-kernel/1 shim around the reference kernel: the stdio binding's
reference peer, and a template for wrapping a kernel written in Python.

    ctxconf kernel --stdio "python runners/python/kernel_stdio_shim.py"

Reads one JSON request per line on stdin, writes one JSON message per line
on stdout. While an op runs, the kernel's callbacks go out as {"cb": N, ...}
lines and the shim blocks until the suite's answer comes back.
"""

import json
import sys

from conformance.bindings.base import CallFailed
from conformance.reference.kernel import create

OPS = ("hello", "load", "assemble", "count_tokens", "stop")


class Channel:
    def __init__(self, stdin, stdout):
        self.stdin, self.stdout = stdin, stdout
        self.next_cb = 0

    def send(self, message: dict) -> None:
        self.stdout.write(json.dumps(message, ensure_ascii=False) + "\n")
        self.stdout.flush()

    def receive(self) -> dict | None:
        line = self.stdin.readline()
        return json.loads(line) if line else None

    def call(self, name: str, provider: str | None, request: dict) -> dict:
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


def main() -> int:
    channel = Channel(sys.stdin, sys.stdout)
    kernel = create()
    while (request := channel.receive()) is not None:
        op = request.get("op")
        fields = {k: v for k, v in request.items() if k not in ("id", "op")}
        if op not in OPS:
            channel.send({"id": request.get("id"), "error": {"code": "UNIMPLEMENTED", "message": f"unknown op {op!r}"}})
            continue
        try:
            result = getattr(kernel, op)(fields, channel.call)
        except Exception as exc:  # report, keep serving: the suite decides what an error means
            channel.send({"id": request["id"], "error": {"code": "INTERNAL", "message": f"{type(exc).__name__}: {exc}"}})
            continue
        channel.send({"id": request["id"], "result": result})
        if op == "stop":
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
