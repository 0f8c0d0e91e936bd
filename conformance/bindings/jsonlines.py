"""A child process spoken to in JSON lines: the transport under the stdio
bindings of both roles (DESIGN §5, §6).

The child runs in its own process group, in a per-run working directory,
with an allow-listed environment; every wait has a deadline; closing always
leaves nothing running.
"""

from __future__ import annotations

import collections
import json
import os
import select
import shlex
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

from conformance.bindings.base import HarnessError, LaunchError

ENV_ALLOWLIST = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT", "VIRTUAL_ENV",
                 "PYTHONPATH", "GOCACHE", "GOPATH")


def resolve_command(command: str, cwd: Path | None = None) -> list[str]:
    """Split a command line; make arguments naming existing relative paths
    absolute (the child runs elsewhere) and find the program on PATH."""
    try:
        args = shlex.split(command)
    except ValueError as exc:
        raise LaunchError(f"cannot parse command {command!r}: {exc}") from None
    if not args:
        raise LaunchError("the command is empty")
    base = cwd or Path.cwd()
    args = [os.path.abspath(base / a) if not a.startswith("-") and (base / a).exists() and not os.path.isabs(a)
            else a for a in args]
    program = args[0] if os.sep in args[0] else shutil.which(args[0])
    if not program or not os.access(program, os.X_OK):
        raise LaunchError(f"cannot run {args[0]!r}: no such executable")
    return [program, *args[1:]]


def child_env(workdir: Path, extra: tuple[str, ...] = ()) -> dict[str, str]:
    env = {k: os.environ[k] for k in (*ENV_ALLOWLIST, *extra) if k in os.environ}
    env["TMPDIR"] = str(workdir)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


class JsonLinesProcess:
    """The child and its pipes. Its stdout is read in the caller's thread, a line
    at a time with a deadline (no thread hand-off on the hot path); a child that
    is not spoken to in lines after start-up gets drain_stdout() instead."""

    def __init__(self, command: str, workdir: Path, timeout: float, env_extra: tuple[str, ...] = (),
                 extra_env: dict[str, str] | None = None):
        self.args = resolve_command(command)
        self.command = command
        self.workdir = workdir
        self.timeout = timeout
        self.env = {**child_env(workdir, env_extra), **(extra_env or {})}
        self.process: subprocess.Popen | None = None
        self._buffer = bytearray()
        self._eof = False
        self._stderr: collections.deque[str] = collections.deque(maxlen=200)
        self._readers: list[threading.Thread] = []

    def start(self) -> None:
        try:
            self.process = subprocess.Popen(
                self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                cwd=self.workdir, env=self.env, start_new_session=True)
        except OSError as exc:
            raise LaunchError(f"cannot start {self.command!r}: {exc.strerror}") from None
        os.set_blocking(self.process.stdout.fileno(), False)
        self._read_in_background(self._read_stderr)

    def _read_in_background(self, target) -> None:
        def read() -> None:
            try:
                target()
            except (OSError, ValueError):  # the pipe was closed under it: a child that outlived close()
                pass
        thread = threading.Thread(target=read, daemon=True)
        self._readers.append(thread)
        thread.start()

    def _read_stderr(self) -> None:
        assert self.process and self.process.stderr
        for raw in self.process.stderr:
            self._stderr.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def drain_stdout(self) -> None:
        """Keep reading stdout in the background so the child never blocks on a full pipe."""
        def drain() -> None:
            while self._read_line(None) is not None:
                pass
        self._read_in_background(drain)

    def _read_line(self, timeout: float | None) -> bytes | None:
        """One line of stdout without its newline; None at end of output; TimeoutError when none comes in time."""
        deadline = None if timeout is None else time.monotonic() + timeout
        fd = self.process.stdout.fileno()
        while True:
            cut = self._buffer.find(b"\n")
            if cut >= 0:
                line = bytes(self._buffer[:cut])
                del self._buffer[:cut + 1]
                return line
            if self._eof:
                return None
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                raise TimeoutError
            readable, _, _ = select.select([fd], [], [], wait)
            if not readable:
                continue
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True
                if self._buffer:  # a last line without its newline
                    line, self._buffer = bytes(self._buffer), bytearray()
                    return line

    def stderr(self) -> str:
        return "\n".join(self._stderr)

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def send(self, message: dict) -> None:
        assert self.process and self.process.stdin
        try:
            self.process.stdin.write(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            raise HarnessError(self.died("closed its stdin")) from None

    def receive_line(self, timeout: float) -> str | None:
        """One raw line of output (None at end of output), for protocols that are not JSON lines."""
        try:
            raw = self._read_line(timeout)
        except TimeoutError:
            raise HarnessError(f"no output within {timeout:g}s") from None
        return None if raw is None else raw.decode("utf-8", "replace").rstrip("\r")

    def receive(self, timeout: float | None = None) -> dict:
        wait = self.timeout if timeout is None else timeout
        try:
            raw = self._read_line(wait)
        except TimeoutError:
            raise HarnessError(f"no answer within {wait:g}s (the per-call timeout; --timeout sets it)"
                               + self._stderr_note()) from None
        if raw is None:
            raise HarnessError(self.died("closed its stdout"))
        try:
            message = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            text = raw.decode("utf-8", "replace").strip()
            raise HarnessError(f"wrote a line that is not JSON: {text[:200]!r}{self._stderr_note()}") from None
        if not isinstance(message, dict):
            raise HarnessError(f"wrote a JSON line that is not an object: {raw[:200]!r}{self._stderr_note()}")
        return message

    def _stderr_note(self) -> str:
        """The end of stderr, which often says why stdout went wrong; its reader may lag a moment behind."""
        deadline = time.monotonic() + 0.3
        while not self._stderr and time.monotonic() < deadline:
            time.sleep(0.02)
        tail = self.stderr()[-1500:]
        return f"; stderr ends:\n{tail}" if tail else ""

    def died(self, what: str) -> str:
        code = self.process.poll() if self.process else None
        if code is None and self.process:
            try:
                code = self.process.wait(timeout=1)
            except subprocess.TimeoutExpired:
                code = None
        status = f"exited with code {code}" if code is not None else "is still running"
        return f"the implementation {what} ({status})" + self._stderr_note()

    def close(self, grace: float = 2.0) -> None:
        """Wait briefly for the child to exit, then kill its whole process group."""
        if not self.process:
            return
        try:
            if self.process.stdin:
                self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for reader in self._readers:  # they stop at end of output; closing a pipe under one is a race
            reader.join(timeout=1)
        for stream in (self.process.stdout, self.process.stderr):
            try:
                if stream:
                    stream.close()
            except OSError:
                pass
