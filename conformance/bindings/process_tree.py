"""Every process one launch of an implementation started, found and killed:
the child, its process group and session, their descendants, whatever
carries the launch's token in its environment, and (on Linux, where the
suite makes itself a subreaper) orphans that escaped by double-forking.
Closing a launch leaves nothing running, whatever the implementation did."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

LAUNCH_ENV = "CTXCONF_LAUNCH"  # a token in every launched process's environment: kill() finds escapees by it
PR_SET_CHILD_SUBREAPER = 36

_subreaper: int | None = None  # the pid of this process once it is a subreaper: a forked child is not one
_live: set[int] = set()  # the pids of launched children not yet closed


def become_subreaper() -> bool:
    """Make this process the one that inherits orphans among its descendants (Linux), so a daemonizing
    grandchild stays in our process tree, where kill() finds and reaps it, instead of going to init.
    Elsewhere kill() still kills the child's session and whatever carries its token."""
    global _subreaper
    if _subreaper != os.getpid() and sys.platform.startswith("linux"):
        try:
            if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0:
                _subreaper = os.getpid()
        except (OSError, AttributeError):
            pass
    return _subreaper == os.getpid()


def stat(pid: int | str) -> tuple[str, int, int, int, int] | None:
    """(state, parent, process group, session, start time) of a process; None if it is gone or there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            fields = file.read().rpartition(b")")[2].split()  # the name before it may hold anything
        return fields[0].decode(), int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def process_table() -> dict[int, tuple[str, int, int, int, int]]:
    try:
        entries = os.listdir("/proc")
    except OSError:
        return {}
    table = {int(name): stat(name) for name in entries if name.isdigit()}
    return {pid: row for pid, row in table.items() if row is not None}


def age(pid: int | str = "self") -> float:
    """Seconds since a process was created (its interpreter's start-up included); 0 without /proc."""
    row = stat(pid)
    try:
        with open("/proc/uptime", encoding="ascii") as uptime:
            return max(float(uptime.read().split()[0]) - row[4] / os.sysconf("SC_CLK_TCK"), 0.0) if row else 0.0
    except (OSError, ValueError, IndexError):
        return 0.0


def ages_of(marker: str) -> dict[int, float]:
    """The age of each live process whose command line holds `marker`."""
    found = {}
    for pid in process_table():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                if marker.encode() in cmdline.read():
                    found[pid] = age(pid)
        except OSError:
            continue
    return found


def launched(pid: int) -> int:
    """Note a new child; its start time (clock ticks since boot), which tells later orphans from older ones."""
    _live.add(pid)
    return (stat(pid) or ("", 0, 0, 0, 0))[4]


def kill(root: int, token: str, started: int, child_exited: bool) -> set[int]:
    """SIGKILL, round by round until none is left running, every process of this launch: the child,
    what is in its group or session, what descends from those, and whatever carries its token in
    the environment (as a double-forked, setsid'd daemon still does). The first look is taken
    before any kill, while the tree still shows who descends from whom."""
    me = os.getpid()
    killed: set[int] = set()
    dead: set[int] = set()  # members already dead: those of them that are ours need reaping too
    for _ in range(100):  # a process forking while it is killed needs another round; 100 is plenty
        table = process_table()
        members = _members(table, me, root, token, started, child_exited)
        running = {pid for pid in members if table[pid][0] not in "ZX"}
        dead |= members - running
        for send, target in [(os.killpg, root), *((os.kill, pid) for pid in running)]:
            try:
                send(target, signal.SIGKILL)  # the group kill is all there is without /proc
            except (ProcessLookupError, PermissionError):
                pass
        killed |= running
        if not running:
            break
        time.sleep(0.01)
    _reap((killed | dead) - {root})  # Popen reaps the child itself
    _live.discard(root)
    return killed


def _reap(pids: set[int]) -> None:
    """Collect the killed orphans the subreaper made ours, so that they do not linger as zombies."""
    deadline = time.monotonic() + 0.5
    while pids and time.monotonic() < deadline:
        for pid in list(pids):
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    pids.discard(pid)
            except ChildProcessError:  # not our child: its own parent reaps it
                pids.discard(pid)
        time.sleep(0.01 if pids else 0)


def _members(table: dict[int, tuple[str, int, int, int, int]], me: int, root: int, token: str, started: int,
             child_exited: bool) -> set[int]:
    """The processes of this launch that `table` shows. The child's pid is its own until Popen reaps
    it; its group's and session's ids stay its own for as long as a process uses them; the token is
    ours alone. An orphan the subreaper gave us, started since the launch and launched by no one
    else here, escaped this launch (as a double-forked daemon that cleared its environment does)."""
    members = set()
    for pid, (_, parent, group, session, since) in table.items():
        child = pid == root and not child_exited
        orphan = _subreaper == me and parent == me and pid not in _live and since >= started
        if pid != me and (child or root in (group, session) or orphan or _carries(pid, token)):
            members.add(pid)
    for pid in table:  # and whatever descends from those
        seen, up = set(), pid
        while up in table and up not in members and up not in seen and up != me:
            seen.add(up)
            up = table[up][1]
        if up in members:
            members |= seen
    return members


def _carries(pid: int, token: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            return f"{LAUNCH_ENV}={token}".encode() in environ.read().split(b"\0")
    except OSError:
        return False
