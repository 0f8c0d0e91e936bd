"""What both reference providers share: the error builder, counting through
the kernel's CountTokens, the fit-to-budget search, and the answers that do
not depend on the provider's content."""

from __future__ import annotations

import bisect
import copy
import re
from typing import Callable

from conformance import __version__
from conformance.bindings.base import CallFailed
from conformance.wire import errors

_WORD = re.compile(r"\S+")
_BLANK_LINES = re.compile(r"\n\s*\n")


def context_failure(category: str, message: str, retryable: bool = False) -> CallFailed:
    """A failure with its ContextError, under its category's code (context/conformance.md#error-taxonomy)."""
    return CallFailed(errors.GRPC_CODE[category], message,
                      {"category": errors.enum_name(category), "message": message, "retryable": retryable})


def text_block(text: str) -> list[dict]:
    return [{"text": {"text": text}}]


def paragraphs(text: str) -> list[str]:
    """The runs of non-blank lines, blank lines being separators; indentation is kept."""
    runs = ["\n".join(line.rstrip() for line in run.split("\n")) for run in _BLANK_LINES.split(text)]
    return [run.strip("\n") for run in runs if run.strip()]


class CountUnavailable(CallFailed):
    """The kernel's CountTokens failed, so no honest token figure can be given."""


class Counter:
    """One firing's token counts, each asked of the kernel's CountTokens once and
    never estimated (context/data-types.md#contextsection)."""

    def __init__(self, call, model_id: str):
        self.call, self.model_id, self.seen = call, model_id, {}

    def __call__(self, content: list[dict]) -> int:
        # Only text travels to CountTokens (kernel-callbacks.md#counttokens).
        texts = tuple(block["text"].get("text", "") for block in content if "text" in block)
        if texts not in self.seen:
            self.seen[texts] = int(self.ask(texts, self.model_id)["count"])
        return self.seen[texts]

    def model_ref(self, model_id: str) -> dict:
        # A ModelTarget names no model provider: only the model's id can be given.
        return {"provider": "", "id": model_id}

    def ask(self, texts: tuple[str, ...], model_id: str) -> dict:
        """The kernel's CountTokensResult for these texts, counted for model_id (none: the fallback)."""
        request: dict = {"content": [{"text": {"text": text}} for text in texts]}
        if model_id:  # with no model named, the kernel counts with its fallback
            request["model_ref"] = self.model_ref(model_id)
        try:
            return self.call("CountTokens", None, request)
        except CallFailed as failure:  # no kernel figure, no honest count to report
            unknown = context_failure("unknown", f"CountTokens failed: {failure.code} {failure.message}", True)
            raise CountUnavailable(unknown.code, unknown.message, unknown.context_error) from None


def longest_fitting(n: int, fits: Callable[[int], bool]) -> int:
    """The largest k in 1..n with fits(k), or 0: a binary search, since more text never counts fewer tokens."""
    return bisect.bisect_left(range(1, n + 1), True, key=lambda k: not fits(k))


def fit_pieces(pieces: list[str], sep: str, fits: Callable[[str], bool]) -> tuple[str, bool] | None:
    """The producer's own reduction (context/data-types.md#budget-mechanics): all pieces,
    else the most leading pieces that fit, else the longest word-boundary prefix
    of the first. Returns (text, cut), or None when not one word fits."""
    if not pieces:
        return None
    whole = sep.join(pieces)
    if fits(whole):
        return whole, False
    kept = longest_fitting(len(pieces) - 1, lambda k: fits(sep.join(pieces[:k])))
    if kept:
        return sep.join(pieces[:kept]), True
    first = pieces[0]
    ends = [match.end() for match in _WORD.finditer(first)]
    words = longest_fitting(len(ends) - 1, lambda w: fits(first[:ends[w - 1]]))
    return (first[:ends[words - 1]], True) if words else None


class ReferenceProvider:
    """What both reference providers answer the same way."""

    NAME = ""
    CAPABILITIES: dict = {}

    def hello(self, request: dict, call) -> dict:
        return {"implementation": {"name": f"ctxconf-reference-{self.NAME}", "version": __version__,
                                   "language": "python"}, "features": ["reload"]}

    def get_capabilities(self, request: dict, call) -> dict:
        # Fixed properties, never read from the source (context/protocol.md#getcapabilities).
        return {"capabilities": copy.deepcopy(self.CAPABILITIES)}

    def counter(self, call, request: dict) -> Counter:
        """Counts for this firing, for the model the request targets."""
        return Counter(call, (request.get("model_target") or {}).get("id", ""))

    def describe(self, request: dict, call) -> dict:
        return {"producer": {"name": self.NAME, "version": __version__,
                             "source": f"github.com/ctxconf/ctxconf/reference/{self.NAME}",
                             "category": "CATEGORY_CONTEXT", "protocol_version": 1}}

    def stop(self, request: dict, call) -> dict:
        return {}

    def section(self, label: str, text: str, tokens: int, truncated: bool) -> dict:
        return {"provider": self.NAME, "label": label, "content": text_block(text), "tokens": tokens,
                "stability": self.CAPABILITIES["stability"], "truncated": truncated}
