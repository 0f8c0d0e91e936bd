"""During its first contribute, asks CountTokens again and again for ARG seconds (then answers as
usual): each callback is answered at once, so no single wait runs out, but the call as a whole has to end
within the per-call timeout all the same."""

import time

from provider_common import ARG, call, serve

flooded = False


def misbehave(op, fields, reply):
    global flooded
    if op == "contribute" and not flooded:
        flooded = True
        until = time.monotonic() + float(ARG or 5)
        while time.monotonic() < until:
            call("CountTokens", None, {"content": [{"text": "again"}]})
    return False


serve(misbehave)
