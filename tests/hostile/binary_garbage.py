"""Answers load with 4 KB of bytes that are neither UTF-8 nor JSON."""

from common import hang, serve, write


def misbehave(op, reply):
    if op == "load":
        write(bytes(b for b in range(128, 256)) * 32 + b"\n")
        hang()
    return False


serve(misbehave)
