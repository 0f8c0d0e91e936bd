"""On load, a fork bomb, kept safe twice over: RLIMIT_NPROC allows this user
only 40 more processes (not enforced for root), and the bomb itself stops at
five generations (at most 31 processes). Some of them leave the session. Then
it hangs."""

import os
import resource

from common import hang, serve


def mine(pid: str) -> bool:
    try:
        return os.stat(f"/proc/{pid}").st_uid == os.getuid()
    except OSError:
        return False


def bomb() -> None:
    limit = sum(1 for pid in os.listdir("/proc") if pid.isdigit() and mine(pid)) + 40
    hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    resource.setrlimit(resource.RLIMIT_NPROC, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    for generation in range(5):
        try:
            if os.fork() == 0 and generation % 2:
                os.setsid()
        except OSError:  # the limit: this one stops forking
            break


def misbehave(op, reply):
    if op == "load":
        bomb()
        hang()
    return False


serve(misbehave)
