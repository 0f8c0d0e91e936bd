"""Starts a daemon on configure (double fork, setsid, environment cleared) that holds stdout and stderr
open, then behaves; with ARG `hang`, it then hangs instead. Closing must neither wait for the daemon nor
leave it running. (As setsid_grandchild.py does for a kernel; that one cannot be imported: it serves.)"""

from provider_common import ARG, daemonize, hang, serve


def misbehave(op, fields, reply):
    if op == "configure":
        daemonize()
        if ARG == "hang":
            hang()
    return False


serve(misbehave)
