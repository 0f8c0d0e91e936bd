"""Starts a daemon on load (double fork, setsid, environment cleared) that holds
stdout and stderr open, then behaves; with ARG `hang`, it then hangs instead.
Closing must neither wait for the daemon nor leave it running."""

from common import ARG, daemonize, hang, serve


def misbehave(op, reply):
    if op == "load":
        daemonize()
        if ARG == "hang":
            hang()
    return False


serve(misbehave)
