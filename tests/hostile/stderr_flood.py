"""Writes 100 MB to stderr on load, as one line, then exits with code 3."""

import os
import sys

from common import serve


def misbehave(op, reply):
    if op == "load":
        chunk = b"e" * 1024 * 1024
        for _ in range(100):
            sys.stderr.buffer.write(chunk)
        sys.stderr.buffer.flush()
        os._exit(3)
    return False


serve(misbehave)
