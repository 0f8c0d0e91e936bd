"""Exits, with a word on stderr, when asked for its capabilities."""

import os
import sys

from provider_common import serve


def misbehave(op, fields, reply):
    if op == "get_capabilities":
        sys.stderr.write("provider: out of cheese\n")
        sys.stderr.flush()
        os._exit(5)
    return False


serve(misbehave)
