"""Starts a daemon on load (double fork, setsid, environment cleared) that holds
stdout and stderr open, then behaves; with ARG `hang`, it then hangs instead.
Closing must neither wait for the daemon nor leave it running."""

import os

from common import ARG, hang, serve, sleeper


def daemonize() -> None:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            command = sleeper("daemon")
            os.execve(command[0], command, {})  # no token in its environment: only the subreaper finds it
        os._exit(0)
    os.wait()


def misbehave(op, reply):
    if op == "load":
        daemonize()
        if ARG == "hang":
            hang()
    return False


serve(misbehave)
