"""Drive one kernel scenario through a binding: load, then each turn, playing
every provider and tokenizer the kernel calls back. The result is a
transcript of everything observed; judging it is kernel_checks' job."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from conformance.data import schemas
from conformance.bindings.base import Binding, CallFailed, Crash, Hang, HarnessError
from conformance.engine.fake_providers import FakeProviders
from conformance.engine.scenario import KernelScenario, Turn
from conformance.wire import forms

REQUEST_TYPES = {"Contribute": "ContextRequest", "CountTokens": "CountTokensRequest"}


@dataclass
class CallRecord:
    call: str
    provider: str | None
    request: dict                # canonical form when it parsed
    result: dict | None = None
    error: dict | None = None    # CallFailed.to_json() of the answer
    hang: Hang | None = None     # set when the provider was scripted never to answer
    overlapped: bool = False     # a Contribute begun while another was still in flight
    crashed: bool = False        # the provider was scripted to die during the call (R-PLUGIN-CRASH)
    late: bool = False           # its answer was ready at or past the kernel's deadline: it may have timed out

    @property
    def hung(self) -> bool:
        return self.hang is not None


@dataclass
class TurnRecord:
    turn: Turn
    calls: list[CallRecord] = field(default_factory=list)
    result: dict | None = None   # canonical op result
    skipped: str | None = None

    def contributes(self) -> list[CallRecord]:
        return [c for c in self.calls if c.call == "Contribute"]


@dataclass
class Transcript:
    features: tuple[str, ...] = ()
    load_calls: list[CallRecord] = field(default_factory=list)
    load: dict | None = None
    load_failed: str | None = None     # "CODE: message" of a Load the scenario lets fail (a plugin that never starts)
    turns: list[TurnRecord] = field(default_factory=list)
    error: str | None = None
    plugins: list[dict] | None = None  # in the plugin-launching mode: what each launched plugin observed
    bypassed: tuple[str, ...] = ()     # ... and the provider calls the kernel made round its plugins


class _Recorder:
    """The on_callback the binding calls: answers from the fakes, records everything."""

    def __init__(self, fakes: FakeProviders):
        self.fakes = fakes
        self.calls: list[CallRecord] = []
        self._lock = threading.Lock()
        self._in_flight = 0

    def __call__(self, call: str, provider: str | None, request: dict) -> dict:
        if call != "Contribute":  # only Contribute calls must not overlap (K-SEQUENTIAL); a plugin may ask the
            return self._answer(call, provider, request, False)  # kernel to count while its Contribute runs
        with self._lock:
            overlapped = self._in_flight > 0
            self._in_flight += 1
        try:
            return self._answer(call, provider, request, overlapped)
        finally:
            with self._lock:
                self._in_flight -= 1

    def mark_late(self, call: str, provider: str | None) -> None:
        """The transport saw the answer to this provider's latest such call come at the kernel's deadline."""
        record = next((c for c in reversed(self.calls) if (c.call, c.provider) == (call, provider)), None)
        if record is not None:
            record.late = True

    def _answer(self, call: str, provider: str | None, request: dict, overlapped: bool) -> dict:
        record = CallRecord(call, provider, request, overlapped=overlapped)
        self.calls.append(record)
        if call in REQUEST_TYPES:
            try:
                record.request = forms.normalize(REQUEST_TYPES[call], request)
            except forms.WireFormError as exc:
                raise HarnessError(f"the kernel sent {call} a malformed request: {exc}") from None
        try:
            record.result = self.fakes.answer(call, provider, record.request)
            return record.result
        except Hang as hang:
            record.hang = hang
            raise
        except CallFailed as failure:
            record.error, record.crashed = failure.to_json(), isinstance(failure, Crash)
            raise


def drive(binding: Binding, scenario: KernelScenario) -> Transcript:
    transcript = Transcript(features=binding.features)
    fakes = FakeProviders(scenario)
    recorder = _Recorder(fakes)
    try:
        try:
            load = binding.request("load", {"config": scenario.load_config()}, recorder)
        except CallFailed as failure:
            transcript.load_failed, transcript.load_calls = _allowed_load_failure(scenario, failure), recorder.calls
            load = None
        if load is not None:
            _check_shape("LoadResult", load, "load")
            transcript.load, transcript.load_calls = load, recorder.calls
        for turn in scenario.turns if load is not None else ():
            record = TurnRecord(turn)
            transcript.turns.append(record)
            if turn.kind == "count_tokens" and "count_tokens" not in binding.features:
                record.skipped = "the kernel shim does not offer the count_tokens op"
                continue
            fakes.turn, recorder.calls = turn, record.calls
            if turn.kind == "assemble":
                record.result = _assemble_result(binding.request("assemble", {"turn": turn.input}, recorder))
            else:
                result = binding.request("count_tokens", {"request": turn.input}, recorder)
                record.result = _parsed("CountTokensResult", result, "count_tokens")
        check_quiet(binding)
    except (HarnessError, CallFailed) as exc:
        transcript.error = _why(exc)
    end_case = getattr(binding, "end_case", None)  # the plugin-launching mode's; see LaunchingKernel
    if end_case is not None:  # after an error too: what the plugins saw may explain it
        try:
            transcript.plugins = end_case(stop=scenario.ends_with == "stop")
            transcript.bypassed = tuple(dict.fromkeys(binding.bypassed))
        except (HarnessError, CallFailed) as exc:
            transcript.error = transcript.error or _why(exc)
    return transcript


def _allowed_load_failure(scenario: KernelScenario, failure: CallFailed) -> str:
    """A Load that failed where the scenario lets it (a plugin that never handshakes: the spec leaves the kernel
    to fail the Load, with any error, or to go on without that provider), as "CODE: message"; otherwise, or with
    an error that is no harness error (a gRPC code name and a message), the failure stands."""
    if not scenario.load_may_fail or schemas.problems("kernel-protocol.json#/$defs/HarnessError",
                                                      {"code": failure.code, "message": failure.message}):
        raise failure
    return f"{failure.code}: {failure.message}"


def _why(exc: HarnessError | CallFailed) -> str:
    if isinstance(exc, CallFailed):  # a kernel shim has no business answering an op with an error
        return f"the kernel could not perform an op: {exc.code}: {exc.message}"
    return str(exc)


def check_quiet(binding: Binding) -> None:
    """The case is over: a binding that reads lines (stdio) makes sure nothing came after the last reply,
    so that a second reply is charged to this case rather than the next. Raises HarnessError."""
    check = getattr(binding, "check_quiet", None)
    if check is not None:
        check()


def _check_shape(name: str, result: dict, op: str) -> None:
    found = schemas.problems(f"kernel-protocol.json#/$defs/{name}", result)
    if found:
        field_path, message = found[0]
        raise HarnessError(f"the {op} result is malformed at {field_path}: {message}")


def _parsed(type_name: str, data, what: str):
    try:
        return forms.normalize_list(type_name, data) if isinstance(data, list) else forms.normalize(type_name, data)
    except forms.WireFormError as exc:
        raise HarnessError(f"{what}: {exc}") from None


def _assemble_result(result: dict) -> dict:
    _check_shape("AssembleResult", result, "assemble")
    return {
        "sections": _parsed("ContextSection", result["sections"], "assemble result sections"),
        "prompt": result["prompt"],
        "history": _parsed("Message", result["history"], "assemble result history"),
        "turn_failed": result["turn_failed"],
        "error": result.get("error"),
        "diagnostics": result["diagnostics"],
    }
