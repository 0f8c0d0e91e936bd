"""Answers load with JSON nested too deep: `[` 200,000 times (ARG `unclosed`),
or a well-formed reply nested 100 levels (ARG `deep`)."""

import json

from common import ARG, hang, send, serve, write


def misbehave(op, reply):
    if op == "load":
        if ARG == "unclosed":
            write(b"[" * 200_000 + b"\n")
        else:
            send({**reply, "result": {**reply["result"], "deep": json.loads("[" * 100 + "]" * 100)}})
        hang()
    return False


serve(misbehave)
