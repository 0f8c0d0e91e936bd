"""Answers load with an id of 5,000 digits."""

from common import hang, serve, write


def misbehave(op, reply):
    if op == "load":
        write(b'{"id": ' + b"9" * 5000 + b', "result": {}}\n')
        hang()
    return False


serve(misbehave)
