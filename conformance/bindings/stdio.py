"""The stdio binding: a command speaking ctxconf-kernel/1 or ctxconf-provider/1
in JSON lines (docs/kernel-protocol.md, docs/provider-protocol.md). The same framing serves both roles."""

from __future__ import annotations

import time
from pathlib import Path

from conformance.data import schemas
from conformance.bindings.base import (CALLBACK_WALL, CallFailed, Hang, HarnessError, OnCallback, checked_hello,
                                       deadline_exceeded, no_callbacks, no_suite_time)
from conformance.bindings.jsonlines import JsonLinesProcess, NoAnswer

# How long the end of a case waits for a stray line. A reply written twice is usually written back to back,
# so the second is already there; a longer wait would cost every case of every run.
QUIET_WINDOW = 0.005
STOP_WAIT = 2.0  # for the answer to stop, and then for the exit


class StdioBinding:
    name = "stdio"

    def __init__(self, command: str, protocol: str, schema: str, workdir: Path, timeout: float,
                 env_extra: tuple[str, ...] = ()):
        self.protocol = protocol
        self.schema = schema  # e.g. "kernel-protocol.json"
        self.process = JsonLinesProcess(command, workdir, timeout, env_extra)
        self.features: tuple[str, ...] = ()
        self.implementation: dict = {}
        self._next_id = 0
        self._answered: dict[int, str] = {}  # request id: its op, to name a second reply to it
        self.broken = False
        self.closing_note: str | None = None  # set by close() when the implementation had to be killed
        self.suite_seconds = no_suite_time
        # Every message is checked: the yes/no of its kind, looked up once here rather than on each message.
        self._valid = {kind: schemas.is_valid(f"{schema}#/$defs/{kind}") for kind in ("Callback", "Reply")}

    def start(self) -> dict:
        self.process.start()
        try:
            hello = checked_hello(self.request("hello", {"protocol": self.protocol}), self.protocol)
        except HarnessError:
            self.broken = True
            raise
        self.implementation = hello["implementation"]
        self.features = tuple(hello.get("features", ()))
        return hello

    def request(self, op: str, fields: dict, on_callback: OnCallback = no_callbacks) -> dict:
        if self.broken:
            raise HarnessError("the implementation is no longer usable after an earlier error")
        try:
            return self._exchange(op, fields, on_callback)
        except (HarnessError, KeyboardInterrupt):  # a reply may still be on its way: nothing more may be sent
            self.broken = True
            raise

    def _exchange(self, op: str, fields: dict, on_callback: OnCallback) -> dict:
        self._next_id += 1
        request_id = self._next_id
        self.process.send({"id": request_id, "op": op, **fields})
        # The timeout bounds the implementation's own time: the suite's, answering its callbacks, is not charged
        # to it. Endless callbacks still end, at CALLBACK_WALL timeouts of wall clock.
        # What the suite's own plugins spend meanwhile (suite_seconds) is given back the same way.
        remaining, wall = self.process.timeout, time.monotonic() + self.process.timeout * CALLBACK_WALL
        credited = self.suite_seconds()
        while True:
            waited = time.monotonic()
            try:
                message = self.process.receive(deadline=min(waited + remaining, wall))
            except NoAnswer:
                gained = self.suite_seconds() - credited
                if gained <= 0 or time.monotonic() >= wall:
                    raise
                credited, remaining = credited + gained, remaining - (time.monotonic() - waited) + gained
                continue
            remaining -= time.monotonic() - waited
            kind = "Callback" if "cb" in message else "Reply"  # FromShim is one of the two
            if not self._valid[kind](message):
                field, problem = schemas.problems(f"{self.schema}#/$defs/{kind}", message)[0]
                raise HarnessError(f"during {op}: malformed message at {field}: {problem}: {str(message)[:200]}")
            if kind == "Callback":
                self.process.send({"cb": message["cb"], **self._answer(on_callback, message)})
                continue
            if message["id"] != request_id:
                what = self._second_reply(message) or f"an answer to id {message['id']}"
                raise HarnessError(f"sent {what} while request {request_id} ({op}) was in flight")
            self._answered[request_id] = op
            if "error" in message:
                raise CallFailed.from_json(message["error"])
            return message["result"]

    def _second_reply(self, message: dict) -> str | None:
        request_id = message.get("id")
        op = self._answered.get(request_id) if isinstance(request_id, int) else None
        return f"a second reply to request {request_id} ({op})" if op else None

    def check_quiet(self, wait: float = QUIET_WINDOW) -> None:
        """At the end of a case: a line written after the last reply (a second reply, say) is this case's
        error, not a puzzle for the next case. Raises HarnessError."""
        if self.broken:
            return
        try:
            message = self.process.poll(wait)
        except HarnessError:
            self.broken = True
            raise
        if message is not None:
            self.broken = True
            what = self._second_reply(message) or f"a line after its last reply: {str(message)[:200]}"
            raise HarnessError(f"the implementation sent {what}")

    @staticmethod
    def _answer(on_callback: OnCallback, message: dict) -> dict:
        try:
            return {"result": on_callback(message["call"], message.get("provider"), message["request"])}
        except Hang:
            return {"error": deadline_exceeded().to_json()}
        except CallFailed as failure:
            return {"error": failure.to_json()}

    def stderr(self) -> str:
        return self.process.stderr()

    def close(self) -> None:
        """Send stop, then close. An implementation that then has to be killed, or leaves processes
        behind, broke the protocol: closing_note says so, and the connection charges it to the case
        the binding last served. A broken one is killed without a word: its case already has an error."""
        asked = answered = getattr(self, "stopped", False)
        try:
            if self.process.alive and not self.broken and not asked:
                self.process.send({"id": self._next_id + 1, "op": "stop"})
                asked = True
                self.process.receive(timeout=STOP_WAIT)
                answered = True
        except HarnessError:
            pass
        finally:  # even when a signal cuts the stop short
            # A broken child gets no second chance; one that did not answer stop, a short one.
            killed = self.process.close(grace=STOP_WAIT if answered else 0.5 if asked else 0.0)
        root = self.process.process.pid if self.process.process else None
        if asked and root in killed:
            self.closing_note = (f"the implementation did not exit after stop"
                                 f"{'' if answered else ' (which it did not answer either)'}; it was killed")
        elif asked and killed:
            self.closing_note = f"after stop, the implementation left {len(killed)} process(es) running; killed"
