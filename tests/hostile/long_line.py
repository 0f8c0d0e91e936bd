"""Answers load with a 50 MB line, written a megabyte at a time."""

from common import hang, serve, write


def misbehave(op, reply):
    if op == "load":
        for _ in range(50):
            write(b"x" * 1024 * 1024)
        write(b"\n")
        hang()
    return False


serve(misbehave)
