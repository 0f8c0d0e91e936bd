"""Writes half a reply to load, without its newline, and exits."""

import os

from common import serve, write


def misbehave(op, reply):
    if op == "load":
        write(b'{"id": 2, "res')
        os._exit(0)
    return False


serve(misbehave)
