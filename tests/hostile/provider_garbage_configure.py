"""Answers configure with 4 KB of bytes that are neither UTF-8 nor JSON."""

from provider_common import hang, serve, write


def misbehave(op, fields, reply):
    if op == "configure":
        write(bytes(b for b in range(128, 256)) * 32 + b"\n")
        hang()
    return False


serve(misbehave)
