"""Answers stop (or, with ARG `silent`, does not) and carries on running."""

from common import ARG, hang, send, serve


def misbehave(op, reply):
    if op == "stop":
        if ARG != "silent":
            send(reply)
        hang()
    return False


serve(misbehave)
