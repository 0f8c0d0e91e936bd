"""Answers the first contribute twice."""

import json

from provider_common import serve, write

sent = False


def misbehave(op, fields, reply):
    global sent
    if op == "contribute" and not sent:
        sent = True
        line = json.dumps(reply).encode() + b"\n"
        write(line + line)
        return True
    return False


serve(misbehave)
