"""During contribute, writes a 200 MB file into the case directory (sparse: it costs no disk), then
answers as usual. ARG `source`: the file is the source fixture itself (which the suite reads back);
otherwise a new file beside it."""

import os

from provider_common import ARG, serve

SIZE = 200 * 1024 * 1024
source = ""


def misbehave(op, fields, reply):
    global source
    if op == "configure":
        source = fields["config"]["path"]
    if op == "contribute":
        name = source if ARG == "source" else "huge.bin"
        with open(os.path.join(fields["request"]["working_directory"], name), "wb") as huge:
            huge.truncate(SIZE)
    return False


serve(misbehave)
