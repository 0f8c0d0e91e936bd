"""Answers every assemble twice, in the first process only (ARG: a flag file
it creates): the case that got the second reply is the one to blame."""

import json
import os

from common import ARG, serve, write

first = not os.path.exists(ARG)
open(ARG, "a").close()


def misbehave(op, reply):
    if op == "assemble" and first:
        line = json.dumps(reply).encode() + b"\n"
        write(line + line)
        return True
    return False


serve(misbehave)
