"""The reference file reader (conformance.reference.filereader:create): one
convention file, such as a CLAUDE.md, contributed as one static section.

Its first half is shared with the reference compactor. Methods stay small so a
mutant can override one to break one requirement.
"""

from __future__ import annotations

import bisect
import copy
import re
from pathlib import Path
from typing import Callable

from conformance import __version__
from conformance.bindings.base import CallFailed
from conformance.wire import errors

_WORD = re.compile(r"\S+")
_BLANK_LINES = re.compile(r"\n\s*\n")


# --- shared by both reference providers -------------------------------------------


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


class Counter:
    """One firing's token counts, each asked of the kernel's CountTokens once and
    never estimated (context/data-types.md#contextsection)."""

    def __init__(self, call, model_id: str):
        self.call, self.model_id, self.seen = call, model_id, {}

    def __call__(self, content: list[dict]) -> int:
        # Only text travels to CountTokens (kernel-callbacks.md#counttokens).
        texts = tuple(block["text"].get("text", "") for block in content if "text" in block)
        if texts in self.seen:
            return self.seen[texts]
        request: dict = {"content": [{"text": {"text": text}} for text in texts]}
        if self.model_id:  # with no model to name, the kernel uses its fallback
            request["model_ref"] = {"provider": "", "id": self.model_id}
        try:
            self.seen[texts] = int(self.call("CountTokens", None, request)["count"])
        except CallFailed as failure:  # no kernel figure, no honest count to report
            raise context_failure("unknown", f"CountTokens failed: {failure.code} {failure.message}",
                                  retryable=True) from None
        return self.seen[texts]


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
                                   "language": "python"}, "features": []}

    def get_capabilities(self, request: dict, call) -> dict:
        # Fixed properties, never read from the source (context/protocol.md#getcapabilities).
        return {"capabilities": copy.deepcopy(self.CAPABILITIES)}

    def describe(self, request: dict, call) -> dict:
        return {"producer": {"name": self.NAME, "version": __version__,
                             "source": f"github.com/ctxconf/ctxconf/reference/{self.NAME}",
                             "category": "CATEGORY_CONTEXT", "protocol_version": 1}}

    def stop(self, request: dict, call) -> dict:
        return {}

    def section(self, label: str, text: str, tokens: int, truncated: bool) -> dict:
        return {"provider": self.NAME, "label": label, "content": text_block(text), "tokens": tokens,
                "stability": self.CAPABILITIES["stability"], "truncated": truncated}


# --- the file reader ----------------------------------------------------------------

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(?:.*?\n)?---[ \t]*(?:\n|\Z)", re.DOTALL)
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


class FileReader(ReferenceProvider):
    NAME = "filereader"
    CAPABILITIES = {
        "default_token_budget": 2000,
        "stability": "STABILITY_STATIC",
        "compactor": False,
        "config_schema": {"attributes": [
            {"name": name, "type": "ATTR_TYPE_STRING", "required": True, "description": description}
            for name, description in (("root", "Directory the file must lie in."),
                                      ("path", "The file to read, relative to root."))]},
    }

    def __init__(self) -> None:
        self.path: Path | None = None
        self.label = ""

    def configure(self, request: dict, call) -> dict:
        config = request.get("config") or {}
        root, path = config.get("root"), config.get("path")
        if not isinstance(root, str) or not isinstance(path, str) or not path:
            raise context_failure("invalid_request", "config needs string attributes root and path")
        self.path, self.label = self.resolve(root, path), path
        return {}

    def resolve(self, root: str, path: str) -> Path:
        """Resolve now rather than fail silently later (context/protocol.md#configure)."""
        base = Path(root).resolve()
        target = (base / path).resolve()
        if not target.is_relative_to(base):
            raise context_failure("invalid_request", f"{path!r} lies outside the root {root!r}")
        if not target.is_file():
            raise context_failure("invalid_request", f"{path!r} is not a file under {root!r}")
        return target

    def contribute(self, request: dict, call) -> dict:
        req = request["request"]
        prior = req.get("prior_sections", [])
        if self.path is None:
            raise context_failure("invalid_request", "Contribute before a successful Configure")
        count = Counter(call, (req.get("model_target") or {}).get("id", ""))
        own = self.own_section(self.strip(self.read()), int(req.get("token_budget", 0)), count)
        # The whole chain: the prior sections untouched, then ours
        # (context/protocol.md#contribute-the-context-assemble-rpc).
        return {"sections": prior + ([own] if own else [])}

    def read(self) -> str:
        """The file as it is now; gone or unreadable is source_unavailable."""
        try:
            return self.path.read_text(encoding="utf-8-sig", errors="replace")  # newlines become \n
        except OSError as exc:
            raise context_failure("source_unavailable", f"cannot read {self.label}: {exc.strerror or exc}",
                                  retryable=True) from None

    def strip(self, text: str) -> str:
        """Drop authoring artifacts (context/data-types.md#stripping-non-semantic-artifacts):
        a front-matter block at the very start, then every HTML comment."""
        return _HTML_COMMENT.sub("", _FRONT_MATTER.sub("", text, count=1))

    def own_section(self, text: str, budget: int, count: Counter) -> dict | None:
        """Whole paragraphs while they fit, else a word-boundary cut; nothing
        when not a word fits or nothing is left after stripping."""
        fitted = fit_pieces(paragraphs(text), "\n\n", lambda t: count(text_block(t)) <= budget)
        if fitted is None:
            return None
        final, cut = fitted
        return self.section(self.label, final, count(text_block(final)), cut)


def create() -> FileReader:
    """The factory for --python conformance.reference.filereader:create."""
    return FileReader()
