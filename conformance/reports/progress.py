"""Progress while a certification runs, on stderr so stdout stays the report:
a live bar on a terminal (rich), one plain line per case in a CI log."""

from __future__ import annotations

import sys
import time
from typing import Callable

from rich.console import Console

from conformance.engine.results import CaseResult


UPDATE_EVERY = 10.0  # seconds between progress lines of one long step, in a log


class RunProgress:
    def __init__(self, total: int, pending: Callable[[CaseResult], bool] = lambda case: False):
        """`pending`: whether what a case fails may yet be withdrawn when the whole run is judged."""
        self.total, self.done, self.pending = total, 0, pending
        self.console = Console(file=sys.stderr, highlight=False, markup=False)
        self.live = None
        self.last_update = time.monotonic()

    def __enter__(self) -> RunProgress:
        if self.console.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
            self.live = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=self.console, transient=True)
            self.live.start()
            self.task = self.live.add_task("starting", total=self.total)
        return self

    def __exit__(self, *exc) -> None:
        if self.live:
            self.live.stop()

    def starting(self, what: str) -> None:
        """A long step with no cases to count, such as the property tests."""
        if self.live:
            self.live.update(self.task, description=what)
        else:
            self.console.print(f"[{self.done + 1}/{self.total}] {what} ...", soft_wrap=True)

    def update(self, what: str) -> None:
        """How far a long step has got (scenario N of M): live on a terminal, a line every 10 s in a log."""
        if self.live:
            self.live.update(self.task, description=what)
        elif time.monotonic() - self.last_update >= UPDATE_EVERY:
            self.last_update = time.monotonic()
            self.console.print(f"[{self.done + 1}/{self.total}]   {what}", soft_wrap=True)

    def finished(self, case: CaseResult) -> None:
        self.done += 1
        if self.live:
            self.live.update(self.task, advance=1, description=case.id)
        else:
            status = "wait" if self.pending(case) else case.status
            note = " (settled when the run is judged whole)" if status == "wait" else ""
            self.console.print(f"[{self.done}/{self.total}] {status:<5} {case.id} ({case.seconds:.2f}s){note}",
                               soft_wrap=True)
