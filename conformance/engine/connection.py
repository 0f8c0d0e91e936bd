"""One implementation under test across a run: a binding per case, reused
when the implementation says it can start afresh (the `reload` feature),
replaced after any error, and always closed at the end."""

from __future__ import annotations

import sys
import time
from typing import Callable

from conformance.bindings import trace
from conformance.bindings.base import Binding, CallFailed, HarnessError
from conformance.engine.results import CaseResult

# After this many launches in a row fail, the rest of the run's cases error at once with the same cause
# instead of each paying for another launch (and often the whole timeout).
MAX_LAUNCH_FAILURES = 3


class Connection:
    def __init__(self, open_binding: Callable[[], Binding]):
        self.open_binding = open_binding
        self.current: Binding | None = None
        self.hello: dict = {}
        # The case the current binding last served. What closing it finds (a stop ignored, processes left
        # behind) is charged to that case, even when the binding is closed at the end of the run: the
        # report is built from the results after the connection closes.
        self.case: CaseResult | None = None
        self._warned: set[str] = set()
        self.failed_launches = 0
        self.launch_failure = ""

    def binding(self, case: CaseResult | None = None) -> Binding:
        """A started binding, fresh for this case. Raises HarnessError or LaunchError."""
        if case is not None:
            trace.set_case(case.id)
        if self.current is not None and not self._reusable():
            self.discard()
        if self.current is None:
            self.current, self.case = self._launch(), case
        elif case is not None:  # a caller with no case of its own (the property tests) leaves the last one charged
            self.case = case
        return self.current

    def binding_for(self, case: CaseResult) -> Binding | None:
        """The binding for a case; None, with the case's error said, when it could not be started."""
        try:
            return self.binding(case)  # what closing it finds is charged to this case
        except HarnessError as exc:
            _add_error(case, f"could not start the implementation: {exc}")
            return None

    def _reusable(self) -> bool:
        return "reload" in self.current.features and not self.current.broken

    def _launch(self) -> Binding:
        if self.failed_launches >= MAX_LAUNCH_FAILURES:
            raise HarnessError(f"not launched again after {self.failed_launches} failed launches in a row; "
                               f"the last one: {self.launch_failure}")
        binding = self.open_binding()
        try:
            self.hello = binding.start()
        except (HarnessError, CallFailed) as exc:
            binding.close()
            self.failed_launches += 1
            self.launch_failure = str(exc) if isinstance(exc, HarnessError) else f"hello answered {exc}"
            raise HarnessError(self.launch_failure) from None
        except BaseException:
            binding.close()
            raise
        self.failed_launches = 0
        return binding

    def run(self, result: CaseResult, play: Callable[[Binding], str | None], fresh: bool = False) -> CaseResult:
        """One case, for either role: a binding for it (or the case's error when none starts), the role's
        `play` (drive, judge, fill in `result`; it returns the error that cut the case short, if any),
        then the error path both roles share: the implementation's stderr with the error, and a binding
        that erred is not used again. `fresh`: a binding no earlier case used, even one that reloads."""
        started = time.perf_counter()
        if fresh:
            self.restart_for(result)
        binding = self.binding_for(result)
        if binding is not None:
            error = play(binding)
            if error:
                stderr = binding.stderr().strip()
                _add_error(result, error + (f"\n--- stderr ---\n{stderr[-2000:]}" if stderr else ""))
                self.discard()
            self.release()
        result.seconds = time.perf_counter() - started
        return result

    def restart_for(self, case: CaseResult) -> None:
        """Close the binding a `fresh` case will not share, as the first thing that case does: its stop is
        traced under that case and what closing finds is charged to it. The case the binding last served is
        done and reported by now, and in a parallel run it is whichever case that worker ran before, not the
        vector before this one, so charging it would make the trace and the report depend on the spread."""
        trace.set_case(case.id)
        if self.current is not None:
            self.case = case
        self.discard()

    def release(self) -> None:
        """At the end of a case: a binding that will not serve another is closed now, so that what closing
        finds is in the case's result before it is reported."""
        if self.current is not None and not self._reusable():
            self.discard()

    def discard(self) -> None:
        if self.current is not None:
            binding, self.current = self.current, None
            binding.close()
            note = binding.closing_note  # see StdioBinding.close
            if note and self.case is not None:
                _add_error(self.case, note)
            elif note and note not in self._warned:  # a binding no case claimed: say so at least, once
                self._warned.add(note)
                print(f"ctxconf: warning: {note}", file=sys.stderr)

    @property
    def implementation(self) -> dict:
        return dict(self.hello.get("implementation", {})) if isinstance(self.hello, dict) else {}

    def close(self) -> None:
        self.discard()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _add_error(case: CaseResult, message: str) -> None:
    """The case's error, after any it has already (what closing the binding a fresh case would not share found)."""
    case.error = f"{case.error}\n{message}" if case.error else message
