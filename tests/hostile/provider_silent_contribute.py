"""Never answers contribute."""

from provider_common import hang, serve


def misbehave(op, fields, reply):
    if op == "contribute":
        hang()
    return False


serve(misbehave)
