"""The reference compactor: it makes the chain it is handed fit its budget by
summarizing, and summarizes the conversation once it grows past a threshold.
Reached through the python binding as conformance.reference.compactor:create.

Deterministic on purpose: the same request always gives the same reply.
"""

from __future__ import annotations

import re

from conformance.reference.provider_base import (Counter, ReferenceProvider, context_failure, fit_pieces,
                                                 paragraphs, text_block)
from conformance.wire.tokens import text_of

_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def lead_sentence(text: str, max_words: int) -> str:
    """The first sentence of a text on one line, at most max_words long."""
    flat = " ".join(text.split())
    end = _SENTENCE_END.search(flat)
    words = (flat[:end.end()] if end else flat).split(" ")
    return " ".join(words) if len(words) <= max_words else " ".join(words[:max_words]) + " …"


class Compactor(ReferenceProvider):
    NAME = "compactor"
    CAPABILITIES = {
        "default_token_budget": 4000,
        "stability": "STABILITY_DYNAMIC",
        "compactor": True,
        "config_schema": {"attributes": [{
            "name": "history_threshold_percent", "type": "ATTR_TYPE_NUMBER", "required": False,
            "description": "Rewrite the conversation once history_tokens exceeds this percentage "
                           "of the model's effective ceiling.",
            "default_json": "50"}]},
    }
    KEEP_TAIL = 2  # recent messages kept verbatim when the conversation is rewritten
    MERGED_LABEL = "Compacted context"
    LEAD_WORDS = 25  # length caps keep every summary line short, however long its sentence
    LINE_WORDS = 12

    def __init__(self) -> None:
        self.threshold: float = 50

    def configure(self, request: dict, call) -> dict:
        value = (request.get("config") or {}).get("history_threshold_percent", 50)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 100:
            raise context_failure("invalid_request", "history_threshold_percent must be a number from 0 to 100")
        self.threshold = value
        return {}

    def contribute(self, request: dict, call) -> dict:
        req = request["request"]
        count = self.counter(call, req)
        reply = {"sections": self.fit_chain(req.get("prior_sections", []), int(req.get("token_budget", 0)), count)}
        if self.history_due(req):
            reply["rewritten_history"] = self.rewrite_history(req["conversation_history"])
        return reply

    # --- sections -------------------------------------------------------------------

    def fit_chain(self, prior: list[dict], budget: int, count: Counter) -> list[dict]:
        """A chain whose sections together fit the budget, which a compactor
        must produce, not merely attempt (context/data-types.md#ordering--chaining).
        Sections are summarized one at a time, largest first, so no more is
        given up than the budget demands; merging is the last resort."""
        chain = list(prior)
        if self.total(chain, count) <= budget:
            return prior
        for kept in (None, 1):  # the lead of every paragraph, then of the first only
            for i in sorted(range(len(chain)), key=lambda j: -count(chain[j]["content"])):
                chain[i] = self.summarized(prior[i], kept, count)
                if self.total(chain, count) <= budget:
                    return chain
        return self.merged(prior, budget, count)

    @staticmethod
    def total(chain: list[dict], count: Counter) -> int:
        # The kernel counts each section and adds them up, so do the same.
        return sum(count(section["content"]) for section in chain)

    def summarized(self, section: dict, kept: int | None, count: Counter) -> dict:
        """The section's own summary, same provider, label and stability. A
        summary never begins like the text it replaces, so it cannot be
        mistaken for a cut (ruling R-SUMMARIZE-EVIDENCE)."""
        leads = [lead_sentence(p, self.LEAD_WORDS) for p in paragraphs(text_of(section["content"]))]
        summary = text_block(f"Summary of {section['label']}: " + " ".join(leads[:kept]))
        if count(summary) >= count(section["content"]):
            return section  # already as short as its summary would be
        return {**section, "content": summary, "tokens": count(summary), "truncated": True}

    def merged(self, prior: list[dict], budget: int, count: Counter) -> list[dict]:
        """Last resort: one section of our own with a line per original section,
        losing lines from the end (and then words) until it fits; an empty
        chain when nothing does."""
        lines = [f"{s['label']} ({s['provider']}): " + self.first_lead(s) for s in prior]
        fitted = fit_pieces(lines, "\n", lambda text: count(text_block(text)) <= budget)
        if fitted is None:
            return []
        text = fitted[0]
        return [self.section(self.MERGED_LABEL, text, count(text_block(text)), truncated=True)]

    def first_lead(self, section: dict) -> str:
        runs = paragraphs(text_of(section["content"]))
        return lead_sentence(runs[0], self.LINE_WORDS) if runs else "(no text)"

    # --- conversation history ---------------------------------------------------------

    def history_due(self, req: dict) -> bool:
        """Compact once history_tokens passes the threshold share of the ceiling
        (context/data-types.md#compactor-timing-signals), and only when there
        is something older than the kept tail to summarize."""
        history = req.get("conversation_history") or []
        ceiling = int((req.get("model_target") or {}).get("effective_ceiling", 0))
        return len(history) > self.KEEP_TAIL and int(req.get("history_tokens", 0)) * 100 > self.threshold * ceiling

    def rewrite_history(self, history: list[dict]) -> list[dict]:
        """One text message summarizing the older messages, then the recent tail
        copied as it came, whatever its blocks (ruling R-REWRITTEN-HISTORY-CONTENT)."""
        earlier, tail = history[:-self.KEEP_TAIL], history[-self.KEEP_TAIL:]
        notes = [f"{message.get('role', '').removeprefix('ROLE_').lower()}: "
                 + lead_sentence(text_of(message.get("content", [])), self.LINE_WORDS)
                 for message in earlier if text_of(message.get("content", [])).strip()]
        summary = f"Summary of the earlier conversation ({len(earlier)} messages): " + " ".join(notes)
        return [{"role": "ROLE_USER", "content": text_block(summary), "id": ""}] + tail


def create() -> Compactor:
    """The factory for --python conformance.reference.compactor:create."""
    return Compactor()
