"""One implementation under test across a run: a binding per case, reused
when the implementation says it can start afresh (the `reload` feature),
replaced after any error, and always closed at the end."""

from __future__ import annotations

from typing import Callable

from conformance.bindings.base import Binding


class Connection:
    def __init__(self, open_binding: Callable[[], Binding]):
        self.open_binding = open_binding
        self.current: Binding | None = None
        self.hello: dict = {}

    def binding(self) -> Binding:
        """A started binding, fresh for this case. Raises HarnessError or LaunchError."""
        if self.current is not None and ("reload" not in self.current.features or self.current.broken):
            self.discard()
        if self.current is None:
            binding = self.open_binding()
            try:
                self.hello = binding.start()
            except BaseException:
                binding.close()
                raise
            self.current = binding
        return self.current

    def discard(self) -> None:
        if self.current is not None:
            self.current.close()
            self.current = None

    @property
    def implementation(self) -> dict:
        return dict(self.hello.get("implementation", {})) if isinstance(self.hello, dict) else {}

    def close(self) -> None:
        self.discard()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
