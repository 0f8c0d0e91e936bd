"""Starts a daemon on configure (double fork, setsid, environment cleared) that holds stdout and stderr
open, then behaves; with ARG `hang`, it then hangs instead. Closing must neither wait for the daemon nor
leave it running. (As setsid_grandchild.py does for a kernel; that one cannot be imported: it serves.)"""

import os

from provider_common import ARG, hang, serve, sleeper


def daemonize() -> None:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            command = sleeper("daemon")
            os.execve(command[0], command, {})  # no token in its environment: only the subreaper finds it
        os._exit(0)
    os.wait()


def misbehave(op, fields, reply):
    if op == "configure":
        daemonize()
        if ARG == "hang":
            hang()
    return False


serve(misbehave)
