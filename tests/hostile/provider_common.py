"""What the hostile provider shims share: the reference file reader behind
ctxconf-provider/1 (as runners/python/stdio_shim.py serves it),
with a hook where each one misbehaves.

A shim runs as `python tests/hostile/provider_NAME.py [ARG...]`; as with the
kernel shims (common.py), the suite hands it $HOSTILE_TOKEN through --env.
"""

import json
import sys

from common import ARG, TOKEN, call, daemonize, hang, send, sleeper, write  # noqa: F401  (for the shims)
from conformance.bindings.base import CallFailed
from conformance.reference.filereader import create

ARGS = sys.argv[1:]


def serve(misbehave=lambda op, fields, reply: False) -> None:
    """Answer every op as the reference file reader does (a refusal as its error reply), unless
    misbehave(op, fields, reply) says it took care of it."""
    provider = create()
    for line in sys.stdin:
        request = json.loads(line)
        op = request["op"]
        fields = {k: v for k, v in request.items() if k not in ("id", "op")}
        try:
            reply = {"id": request["id"], "result": getattr(provider, op)(fields, call)}
        except CallFailed as failure:
            reply = {"id": request["id"], "error": failure.to_json()}
        if not misbehave(op, fields, reply):
            send(reply)
        if op == "stop":
            return
