"""During its first contribute (or ARGS[2], `configure`), replaces a fixture file in the case directory
(ARGS[1], in the request's working_directory, or the configured root) with a symlink to ARGS[0], a
file outside it: a later `write` or `delete` step of the vector must not reach through it."""

import os

from provider_common import ARGS, serve

swapped = False


def misbehave(op, fields, reply):
    global swapped
    sentinel, name, when = (*ARGS, "contribute")[:3]
    if op == when and not swapped:
        folder = fields["request"]["working_directory"] if op == "contribute" else fields["config"]["root"]
        target = os.path.join(folder, name)
        os.unlink(target)
        os.symlink(sentinel, target)
        swapped = True
    return False


serve(misbehave)
