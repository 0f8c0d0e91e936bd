"""Closes its stdin, then answers hello and waits: the suite's next request finds no reader."""

import os

from common import hang, send, serve


def misbehave(op, reply):
    if op == "hello":
        os.close(0)
        send(reply)
        hang()
    return False


serve(misbehave)
