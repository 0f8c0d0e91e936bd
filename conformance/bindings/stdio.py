"""The stdio binding: a command speaking ctxconf-kernel/1 or ctxconf-provider/1
in JSON lines (DESIGN §5, §6). The same framing serves both roles."""

from __future__ import annotations

from pathlib import Path

from conformance import schemas
from conformance.bindings.base import (CallFailed, Hang, HarnessError, OnCallback, deadline_exceeded,
                                       no_callbacks)
from conformance.bindings.jsonlines import JsonLinesProcess


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
        self.broken = False

    def start(self) -> dict:
        self.process.start()
        hello = self.request("hello", {"protocol": self.protocol})
        schemas_problems = schemas.problems(f"{self.schema}#/$defs/HelloResult", hello)
        if schemas_problems:
            self.broken = True
            field, message = schemas_problems[0]
            raise HarnessError(f"hello result is malformed at {field}: {message}")
        self.implementation = hello["implementation"]
        self.features = tuple(hello.get("features", ()))
        return hello

    def request(self, op: str, fields: dict, on_callback: OnCallback = no_callbacks) -> dict:
        if self.broken:
            raise HarnessError("the implementation is no longer usable after an earlier error")
        try:
            return self._exchange(op, fields, on_callback)
        except HarnessError:
            self.broken = True
            raise

    def _exchange(self, op: str, fields: dict, on_callback: OnCallback) -> dict:
        self._next_id += 1
        request_id = self._next_id
        self.process.send({"id": request_id, "op": op, **fields})
        while True:
            message = self.process.receive()
            kind = "Callback" if "cb" in message else "Reply"  # FromShim is one of the two
            found = schemas.problems(f"{self.schema}#/$defs/{kind}", message)
            if found:
                field, problem = found[0]
                raise HarnessError(f"during {op}: malformed message at {field}: {problem}: {str(message)[:200]}")
            if "cb" in message:
                self.process.send({"cb": message["cb"], **self._answer(on_callback, message)})
                continue
            if message["id"] != request_id:
                raise HarnessError(f"answered id {message['id']} while request {request_id} ({op}) was in flight")
            if "error" in message:
                raise CallFailed.from_json(message["error"])
            return message["result"]

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
        if self.process.alive and not self.broken:
            try:
                self.process.send({"id": self._next_id + 1, "op": "stop"})
                self.process.receive(timeout=2)
            except (HarnessError, CallFailed):
                pass
        self.process.close(grace=0.0 if self.broken else 2.0)  # a broken child gets no second chance
