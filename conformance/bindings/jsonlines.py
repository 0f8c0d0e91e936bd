"""A child process spoken to in JSON lines: the transport under the stdio
bindings of both roles (docs/kernel-protocol.md, docs/provider-protocol.md).

The child runs in its own session, in a per-run working directory, with an
allow-listed environment; every wait has a deadline; what it writes is read
within caps; closing always leaves nothing running, not even a descendant
that left the child's session.
"""

from __future__ import annotations

import collections
import json
import os
import select
import shlex
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from conformance.bindings import process_tree, trace
from conformance.bindings.base import HarnessError, LaunchError
from conformance.data.schemas import MAX_DEPTH, depth

ENV_ALLOWLIST = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT", "VIRTUAL_ENV",
                 "PYTHONPATH", "GOCACHE", "GOPATH")

# Caps on what an implementation writes. Replies to the suite's vectors are a few KB; a line of 4 MiB
# still parses in about 120 MB at worst (`{},` repeated), which keeps the suite under 300 MB.
MAX_LINE = 4 * 1024 * 1024
STDERR_LINE = 4096      # bytes kept of one stderr line, and lines kept: at most ~800 KB, however much is written
STDERR_LINES = 200
# json.dumps(message, ensure_ascii=False), without building an encoder for every line (dumps builds one for any
# argument but the defaults).
_ENCODE = json.JSONEncoder(ensure_ascii=False).encode


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


class NoAnswer(HarnessError):
    """Nothing came within the time the call had (a binding may give back time the suite itself used)."""


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
        self.token = uuid.uuid4().hex
        self.env = {**child_env(workdir, env_extra), **(extra_env or {}), process_tree.LAUNCH_ENV: self.token}
        self.process: subprocess.Popen | None = None
        self._buffer = bytearray()
        self._scanned = 0  # how much of _buffer is known to hold no newline
        self._eof = False
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self._readers: list[threading.Thread] = []
        self._closing = threading.Event()
        self._started = 0  # the child's start time, in clock ticks since boot

    def start(self) -> None:
        process_tree.become_subreaper()
        try:
            self.process = subprocess.Popen(
                self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                cwd=self.workdir, env=self.env, start_new_session=True)
        except OSError as exc:
            raise LaunchError(f"cannot start {self.command!r}: {exc.strerror}") from None
        self._started = process_tree.launched(self.process.pid)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            os.set_blocking(stream.fileno(), False)
        self._read_in_background(self._read_stderr)

    def _read_in_background(self, target) -> None:
        def read() -> None:
            try:
                target()
            except (OSError, ValueError):  # the pipe was closed under it
                pass
        thread = threading.Thread(target=read, daemon=True)
        self._readers.append(thread)
        thread.start()

    def _chunks(self, stream) -> Iterator[bytes]:
        """What a pipe delivers until end of output, or until close(): a descendant holding the pipe open
        never keeps a reader (and so close()) waiting."""
        fd = stream.fileno()
        while not self._closing.is_set():
            if select.select([fd], [], [], 0.2)[0]:
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    return
                yield chunk

    def _read_stderr(self) -> None:
        line = bytearray()  # the line being read, never kept past STDERR_LINE + 1 bytes
        for chunk in self._chunks(self.process.stderr):
            *ends, rest = chunk.split(b"\n")
            for end in ends:
                self._keep_stderr(line + end)
                line = bytearray()
            line += rest[:max(0, STDERR_LINE + 1 - len(line))]
        if line:
            self._keep_stderr(line)

    def _keep_stderr(self, raw: bytes) -> None:
        text = bytes(raw[:STDERR_LINE]).decode("utf-8", "replace").rstrip("\r")
        self._stderr.append(text + (" [line cut]" if len(raw) > STDERR_LINE else ""))

    def drain_stdout(self) -> None:
        """Keep reading stdout in the background so the child never blocks on a full pipe."""
        def drain() -> None:
            for _ in self._chunks(self.process.stdout):
                pass
        self._read_in_background(drain)

    def _read_line(self, timeout: float) -> bytes | None:
        """One line of stdout without its newline; None at end of output; TimeoutError when none comes in time."""
        deadline = time.monotonic() + timeout
        fd = self.process.stdout.fileno()
        while True:
            cut = self._buffer.find(b"\n", self._scanned)
            if cut >= 0:
                line = bytes(self._buffer[:cut])
                del self._buffer[:cut + 1]
                self._scanned = 0
                return line
            self._scanned = len(self._buffer)
            if self._scanned > MAX_LINE:
                raise HarnessError(f"wrote a line longer than {MAX_LINE} bytes (the suite's cap)")
            if self._eof:
                if not self._buffer:
                    return None
                line, self._buffer, self._scanned = bytes(self._buffer), bytearray(), 0
                return line  # a last line without its newline
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise TimeoutError
            if not select.select([fd], [], [], wait)[0]:
                continue
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True

    def stderr(self) -> str:
        return "\n".join(self._stderr)

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def send(self, message: dict) -> None:
        """Write one line, giving up after the per-call timeout: a child that stops reading its stdin
        must not hang the suite once the pipe is full."""
        assert self.process and self.process.stdin
        trace.record("stdio", trace.TO_IMPL, message)
        data = _ENCODE(message).encode("utf-8") + b"\n"
        deadline = time.monotonic() + self.timeout
        try:
            fd = self.process.stdin.fileno()
            while data:
                try:  # the pipe has room nearly always: write first, wait only when it is full
                    data = data[os.write(fd, data):]
                    continue
                except BlockingIOError:
                    pass
                if not select.select([], [fd], [], max(0.0, deadline - time.monotonic()))[1]:
                    raise HarnessError(f"did not read its stdin within {self.timeout:g}s" + self._stderr_note())
        except (BrokenPipeError, ValueError, OSError):
            raise HarnessError(self.died("closed its stdin")) from None

    def receive_line(self, timeout: float) -> str | None:
        """One raw line of output (None at end of output), for protocols that are not JSON lines."""
        try:
            raw = self._read_line(timeout)
        except TimeoutError:
            raise HarnessError(f"no output within {timeout:g}s") from None
        return None if raw is None else raw.decode("utf-8", "replace").rstrip("\r")

    def receive(self, timeout: float | None = None, deadline: float | None = None) -> dict:
        """The next message, within `timeout` seconds, or by the monotonic `deadline` of a whole call."""
        wait = self.timeout if timeout is None else timeout
        try:
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError  # even with more lines waiting: a flood of callbacks is no answer
            raw = self._read_line(wait if deadline is None else deadline - time.monotonic())
        except TimeoutError:
            raise NoAnswer(f"no answer within {wait:g}s of its own time (the per-call timeout, which the "
                               "suite's answers to its callbacks do not use up, but a whole op with its callbacks "
                               "may take 10 of; --timeout sets it)" + self._stderr_note()) from None
        if raw is None:
            raise HarnessError(self.died("closed its stdout"))
        return self._parse(raw)

    def poll(self, wait: float) -> dict | None:
        """A message if one comes within `wait` seconds; None if none does, or at end of output."""
        try:
            raw = self._read_line(wait)
        except TimeoutError:
            return None
        return None if raw is None else self._parse(raw)

    def _parse(self, raw: bytes) -> dict:
        """One line as a JSON object, within the caps: json's own limits (recursion, the digits of an
        integer) become the implementation's error, and so does nesting deeper than MAX_DEPTH, which
        the suite's recursive checks could not follow."""
        try:
            message = json.loads(raw)
        except RecursionError:
            raise HarnessError(f"wrote JSON nested too deeply to read: {raw[:60]!r}...") from None
        except (json.JSONDecodeError, UnicodeDecodeError):
            text = raw.decode("utf-8", "replace").strip()
            raise HarnessError(f"wrote a line that is not JSON: {text[:200]!r}{self._stderr_note()}") from None
        except ValueError as exc:  # an integer longer than sys.get_int_max_str_digits()
            raise HarnessError(f"wrote JSON the suite cannot read: {exc}: {raw[:100]!r}...") from None
        if not isinstance(message, dict):
            raise HarnessError(f"wrote a JSON line that is not an object: {raw[:200]!r}{self._stderr_note()}")
        # Nesting never exceeds the count of opening brackets (those inside strings only add to it): most
        # lines are let through by two counts in C, without walking the parsed message.
        if raw.count(b"{") + raw.count(b"[") > MAX_DEPTH and depth(message) > MAX_DEPTH:
            raise HarnessError(f"wrote JSON nested deeper than {MAX_DEPTH} levels (the suite's cap): {raw[:100]!r}...")
        trace.record("stdio", trace.FROM_IMPL, message)
        return message

    def _stderr_note(self) -> str:
        """The end of stderr, which often says why stdout went wrong; its reader may lag a moment behind
        (no longer than until it reaches the end of stderr)."""
        deadline = time.monotonic() + 0.3
        stderr_reader = self._readers[0] if self._readers else None
        while not self._stderr and time.monotonic() < deadline and stderr_reader and stderr_reader.is_alive():
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

    def close(self, grace: float = 2.0) -> set[int]:
        """Wait up to `grace` for the child to exit once its stdin closes, then kill it and everything it
        started. Returns the processes that had to be killed (the child's own pid among them if it
        had not exited). Never waits on a pipe a descendant holds open."""
        if not self.process:
            return set()
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
        killed = process_tree.kill(self.process.pid, self.token, self._started, self.process.returncode is not None)
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self._closing.set()
        for reader in self._readers:  # they stop within 0.2s of _closing; only then are the pipes closed
            reader.join(timeout=1)
        for stream in (self.process.stdout, self.process.stderr):
            try:
                stream.close()
            except OSError:
                pass
        return killed
