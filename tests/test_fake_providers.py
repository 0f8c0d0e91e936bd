"""The fake providers make each reply once and hand out copies (engine/fake_providers.py): over every kernel
vector, driven by the reference kernel, every Contribute answered from the cache equals the answer a fresh
FakeProviders makes from scratch for the same request, even after the caller scribbled over an earlier copy."""

from __future__ import annotations

import copy

from conformance.engine import kernel_driver
from conformance.engine.fake_providers import FakeProviders
from conformance.reference.kernel import create

from conftest import certify_python


def _scribble(value) -> None:
    """Change every dict and list in `value` in place, as a careless caller might."""
    if isinstance(value, dict):
        for item in value.values():
            _scribble(item)
        value["scribbled"] = True
    elif isinstance(value, list):
        for item in value:
            _scribble(item)
        value.append("scribbled")


def test_cached_replies_are_the_replies_made_from_scratch(kernel_vectors, monkeypatch):
    compared: list[tuple[bool, bool]] = []  # (equal, the request carried a prior chain)

    class CheckedFakes(FakeProviders):
        def answer(self, call, provider, request):
            fake = next((f for f in self.scenario.providers if f.name == provider), None)
            action = fake.action(self.turn.index if self.turn else 0) if fake else {}
            if call != "Contribute" or not fake or action.get("delay_ms"):
                return super().answer(call, provider, request)
            scratch = FakeProviders(self.scenario)
            scratch.turn = self.turn
            try:
                want = scratch.answer(call, provider, copy.deepcopy(request))
            except Exception:  # scripted failures are not cached: answered once, as they are
                return super().answer(call, provider, request)
            _scribble(super().answer(call, provider, request))
            got = super().answer(call, provider, request)
            compared.append((got == want, bool(request.get("prior_sections"))))
            return got

    monkeypatch.setattr(kernel_driver, "FakeProviders", CheckedFakes)
    results = certify_python(create, kernel_vectors)
    assert not [r.id for r in results if r.error], "the reference kernel errs on a vector"
    assert compared and all(equal for equal, _ in compared), \
        f"{sum(not e for e, _ in compared)} of {len(compared)} cached replies differ from the ones made afresh"
    assert sum(prior for _, prior in compared) >= 50, "too few replies to a prior chain were compared"
