"""Answers load one byte every 200 ms: never a whole line within the timeout."""

import json
import time

from common import serve, write


def misbehave(op, reply):
    if op == "load":
        for byte in json.dumps(reply).encode() + b"\n":
            write(bytes([byte]))
            time.sleep(0.2)
        return True
    return False


serve(misbehave)
