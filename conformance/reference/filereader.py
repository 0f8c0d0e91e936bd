"""The reference file reader (conformance.reference.filereader:create): one
convention file, such as a CLAUDE.md, contributed as one static section.
Methods stay small so a mutant can override one to break one requirement.
"""

from __future__ import annotations

import re
from pathlib import Path

from conformance.reference.provider_base import (Counter, ReferenceProvider, context_failure, fit_pieces,
                                                 paragraphs, text_block)

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
        own = self.own_sections(self.strip(self.read()), int(req.get("token_budget", 0)), self.counter(call, req))
        # The whole chain: the prior sections untouched, then ours
        # (context/protocol.md#contribute-the-context-assemble-rpc).
        return {"sections": prior + own}

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

    def own_sections(self, text: str, budget: int, count: Counter) -> list[dict]:
        """One section for the whole file."""
        section = self.own_section(text, budget, count)
        return [section] if section else []

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
