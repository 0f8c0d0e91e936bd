"""The scenario space: every dimension the property strategies draw, with the
range each is usually drawn from, the large range a scenario may switch it to,
and why that is enough. It is the one source of truth: the strategies take
their bounds from it, docs/scenario-space.md and `ctxconf selftest -v` print
it, and `measure` reads each dimension back off a generated document, so the
maxima a profile reaches can be shown (`python -m conformance.properties.survey`).

Large values cost time, so they are drawn rarely: each scenario switches each
switchable dimension to its large range with a probability that depends on
the profile (swarm testing: one scenario holds 96 providers, another a 40 KiB
section, few hold both), and hypothesis' target() steers the rest toward the
boundaries where an off-by-one shows (see `targets`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from conformance.wire import tokens

KIB = 1024
BIG_INT = 2**33          # past int32 and uint32: a cap or a window kept in 32 bits wraps below this
BIG_WINDOW = 2**34
INT64_MAX = 2**63 - 1    # the wire's width for caps and budgets (int64): past 2^53, a double rounds them


@dataclass(frozen=True)
class Dimension:
    role: str                           # kernel | provider
    key: str
    what: str
    usual: tuple[int, int]              # drawn from this range unless the scenario switches the dimension
    large: tuple[int, int] | None       # the range when switched; None: never switched (derived, or already wide)
    unit: str
    why: str
    measure: Callable[[dict], int]      # the value a generated document shows

    def bounds(self, large: bool) -> tuple[int, int]:
        return self.large if large and self.large else self.usual

    def strategy(self, large: bool):
        return _integers(*self.bounds(large))

    @property
    def reaches(self) -> int:
        """The most the generators can draw: the top of the large range, else of the usual one."""
        return (self.large or self.usual)[1]


@functools.cache
def _integers(low: int, high: int):
    from hypothesis import strategies as st  # the table is printed by commands that need no hypothesis
    return st.integers(low, high)


# --- reading a kernel document --------------------------------------------------------

_SECTION_LISTS = ("append", "prepend", "delta", "chain")


def kernel_actions(doc: dict) -> Iterator[tuple[dict, int, dict]]:
    for provider in doc["setup"]["providers"]:
        for turn, action in enumerate(provider.get("script", ())):
            yield provider, turn, action


def offered(action: dict) -> list[dict]:
    """The sections of its own an action offers."""
    found = [s for key in _SECTION_LISTS for s in action.get(key, ())]
    return found + list(action.get("insert", {}).get("sections", ()))


def offered_sections(doc: dict) -> Iterator[dict]:
    for _, _, action in kernel_actions(doc):
        yield from offered(action)


def kernel_messages(doc: dict) -> Iterator[dict]:
    for turn in doc["turns"]:
        yield from turn.get("assemble", {}).get("new_messages", ())
    for _, _, action in kernel_actions(doc):
        yield from action.get("rewritten_history", ())


def _block_texts(blocks) -> Iterator[str]:
    return (b["text"] for b in blocks if isinstance(b.get("text"), str))


def kernel_texts(doc: dict) -> Iterator[str]:
    for section in offered_sections(doc):
        yield from _block_texts(section.get("content", ()))
    for message in kernel_messages(doc):
        yield from ([message["text"]] if "text" in message else _block_texts(message.get("content", ())))
    for _, _, action in kernel_actions(doc):
        yield from (e["text"] for e in action.get("edit", ()) if "text" in e)
    for turn in doc["turns"]:
        yield from _block_texts(turn.get("count_tokens", {}).get("content", ()))


def _bytes(text: str) -> int:
    return len(text.encode("utf-8"))


def _most(values) -> int:
    return max(values, default=0)


def _assembles(doc: dict) -> list[dict]:
    return [t["assemble"] for t in doc["turns"] if "assemble" in t]


def _per_session(doc: dict, value: Callable[[dict], int]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for turn in _assembles(doc):
        totals[turn["session_id"]] = totals.get(turn["session_id"], 0) + value(turn)
    return totals


def _compactors(doc: dict) -> list[dict]:
    return [p for p in doc["setup"]["providers"] if p["capabilities"].get("compactor")]


def _action_at(provider: dict, turn: int) -> dict:
    script = provider.get("script") or [{"keep": True}]
    return script[min(turn, len(script) - 1)]


def _rewriting_in_one_firing(doc: dict) -> int:
    return _most(sum("rewritten_history" in _action_at(p, t) for p in _compactors(doc))
                 for t in range(len(_assembles(doc))))


def _ahead_of_a_compactor(doc: dict) -> int:
    """The most sections the providers ahead of a compactor offer it in one firing (an upper bound on the
    foreign sections it receives: the kernel drops what it rejects)."""
    providers, most = doc["setup"]["providers"], 0
    for t in range(len(_assembles(doc))):
        ahead = 0
        for provider in providers:
            if provider["capabilities"].get("compactor"):
                most = max(most, ahead)
            ahead += len(offered(_action_at(provider, t)))
    return most


def _rewritten_at_once(doc: dict) -> int:
    return _most(len(a.get("edit", ())) + len(a.get("merge", ())) + len(a.get("split", ()))
                 for p in _compactors(doc) for a in p.get("script", ()))


def _error_messages(doc: dict) -> Iterator[str]:
    for _, _, action in kernel_actions(doc):
        error = action.get("error")
        if error:
            yield error.get("message", "")
            yield (error.get("context_error") or {}).get("message", "")


# --- reading a provider document ----------------------------------------------------------

def provider_requests(doc: dict) -> list[dict]:
    return [s["contribute"] for s in doc["steps"] if "contribute" in s]


def prior_sections(doc: dict) -> Iterator[dict]:
    for request in provider_requests(doc):
        yield from request.get("prior_sections", ())


def _provider_texts(doc: dict) -> Iterator[str]:
    for section in prior_sections(doc):
        yield from _block_texts(section.get("content", ()))
    for request in provider_requests(doc):
        for message in request.get("conversation_history", ()):
            yield from ([message["text"]] if "text" in message else _block_texts(message.get("content", ())))


# --- the table ------------------------------------------------------------------------------

def _k(key, what, usual, large, unit, why, measure) -> Dimension:
    return Dimension("kernel", key, what, usual, large, unit, why, measure)


def _p(key, what, usual, large, unit, why, measure) -> Dimension:
    return Dimension("provider", key, what, usual, large, unit, why, measure)


KERNEL = {d.key: d for d in (
    _k("models", "models per case (primary and fallbacks)", (1, 3), (4, 12), "",
       "a budget warning that looks only at the first few fallbacks of the routing chain",
       lambda doc: len(doc["setup"]["models"])),
    _k("providers", "providers per chain", (0, 8), (9, 96), "",
       "fixed tables of 8, 16, 32 or 64 providers, sorting or skipping checks past a length",
       lambda doc: len(doc["setup"]["providers"])),
    _k("compactors", "compactors each rewriting the history in one firing", (0, 8), (3, 12), "",
       "a kernel that applies only the first (or last) rewrite, or hands a later compactor a stale history",
       _rewriting_in_one_firing),
    _k("ahead", "sections offered ahead of a compactor in one firing", (0, 32), (64, 400), "",
       "a kernel that sends a compactor only the first or last N sections, or stops checking a long chain",
       _ahead_of_a_compactor),
    _k("rewrites", "foreign sections one compactor rewrites in one reply", (0, 3), (4, 64), "",
       "a kernel that recounts, or checks the content of, only the first few rewritten sections",
       _rewritten_at_once),
    _k("turns", "turns per session", (1, 3), (4, 12), "",
       "state kept for the first turns only: history_tokens, assembled_tokens_last_turn, a session cache",
       lambda doc: _most(_per_session(doc, lambda t: 1).values())),
    _k("sessions", "sessions per case (large: taken in turn, each met again after all the others)", (1, 2),
       (9, 24), "",
       "sessions kept in a small map, a single slot or a cache of the last 8 or 16, one session's history "
       "leaking into another's",
       lambda doc: len({t["session_id"] for t in _assembles(doc)})),
    _k("history", "new messages in one turn (the first turn's: the whole history)", (0, 6), (200, 320), "",
       "a history window (the last 50, 100 or 128 messages) or a compactor sent only a short history",
       lambda doc: _most(len(t.get("new_messages", ())) for t in _assembles(doc))),
    _k("rewritten", "messages in a rewritten history", (1, 2), (50, 250), "",
       "a kernel that applies only short rewrites, or truncates a long one",
       lambda doc: _most(len(a.get("rewritten_history", ())) for _, _, a in kernel_actions(doc))),
    _k("sections", "own sections per reply", (1, 4), (8, 48), "",
       "budgets or content checks applied to the first few sections of a reply only",
       lambda doc: _most(len(offered(a)) for _, _, a in kernel_actions(doc))),
    _k("blocks", "blocks per section", (1, 4), (8, 64), "",
       "recounting or checking the first blocks of a section only; per-block rounding that grows with "
       "the number of blocks", lambda doc: _most(len(s.get("content", ())) for s in offered_sections(doc))),
    _k("text", "UTF-8 bytes of one text block", (0, 10000), (10 * KIB, 160 * KIB), "bytes",
       "counting or rendering only the first 2, 4, 8, 16 or 64 KiB of a text, or asking the tokenizer only "
       "about texts up to a size",
       lambda doc: _most(map(_bytes, kernel_texts(doc)))),
    _k("label", "UTF-8 bytes of a label", (0, 36), (256, 8 * KIB), "bytes",
       "labels cut to a fixed width in the prompt's boundaries or in the scope comparison",
       lambda doc: _most(_bytes(s.get("label", "")) for s in offered_sections(doc))),
    _k("error", "UTF-8 bytes of an error message", (0, 64), (10 * KIB, 40 * KIB), "bytes",
       "raw messages cut to a log line's length, or to their first line, before they reach a diagnostic",
       lambda doc: _most(map(_bytes, _error_messages(doc)))),
    _k("error-lines", "lines of an error message", (1, 3), (40, 3000), "",
       "a diagnostic that keeps only the first line of a multi-line message",
       lambda doc: _most(m.count("\n") + 1 for m in _error_messages(doc))),
    _k("budget", "a provider's default_token_budget (large: the caps' sum kept within int64)", (0, 3000),
       (3001, INT64_MAX), "tokens",
       "caps summed or compared in 32 bits, or kept in a double (exact only up to 2^53)", lambda doc: _most(
           p["capabilities"].get("default_token_budget", 0) for p in doc["setup"]["providers"])),
    _k("override", "a token_budget_override: drawn, or at one reading of the offered sections' count or one "
       "token either side (up to the count of the largest usual reply)", (0, 48001), (48002, INT64_MAX), "tokens",
       "the same, for the overrides agent.hcl declares",
       lambda doc: _most(p.get("token_budget_override") or 0 for p in doc["setup"]["providers"])),
    _k("window", "a model's context_window", (200, 300000), (300001, BIG_WINDOW), "tokens",
       "ceilings kept in 32 bits; windows past the largest real models of the day",
       lambda doc: _most(m["context_window"] for m in doc["setup"]["models"])),
    _k("files", "files_touched per turn", (0, 2), (50, 400), "",
       "a kernel that passes the first N paths through, or paths up to a fixed length",
       lambda doc: _most(len(t.get("files_touched", ())) for t in _assembles(doc))),
    _k("count-blocks", "blocks in a count_tokens request", (0, 4), (8, 64), "",
       "a count that rounds per block, or counts the first blocks only",
       lambda doc: _most(len(t["count_tokens"]["content"]) for t in doc["turns"] if "count_tokens" in t)),
)}

PROVIDER = {d.key: d for d in (
    _p("prior", "prior sections per request", (0, 4), (16, 96), "",
       "a provider that stops copying, or starts re-sorting, the chain past a length",
       lambda doc: _most(len(r.get("prior_sections", ())) for r in provider_requests(doc))),
    _p("owners", "providers signing a prior chain", (1, 4), None, "",
       "derived: other providers and near misses of the provider's own name; one that 're-finds' its own "
       "section by a loose name match", lambda doc: _most(
           len({s["provider"] for s in r.get("prior_sections", ())}) for r in provider_requests(doc))),
    _p("blocks", "blocks per prior section", (1, 4), (8, 64), "",
       "a provider that copies a section's text rather than its blocks, or only the first blocks",
       lambda doc: _most(len(s.get("content", ())) for s in prior_sections(doc))),
    _p("text", "UTF-8 bytes of one text block", (0, 10000), (10 * KIB, 48 * KIB), "bytes",
       "a provider that normalizes or trims long texts, or copies them into a fixed buffer",
       lambda doc: _most(map(_bytes, _provider_texts(doc)))),
    _p("label", "UTF-8 bytes of a prior section's label", (0, 36), (256, 8 * KIB), "bytes",
       "labels cut to a fixed width when a chain is copied",
       lambda doc: _most(_bytes(s.get("label", "")) for s in prior_sections(doc))),
    _p("history", "messages in conversation_history", (0, 6), (200, 320), "",
       "a compactor that looks at the last N messages only, or gives up on long histories",
       lambda doc: _most(len(r.get("conversation_history", ())) for r in provider_requests(doc))),
    _p("steps", "Contribute calls per case", (1, 3), (4, 20), "",
       "state that goes stale after a few firings: a cached count, a cached file",
       lambda doc: len(provider_requests(doc))),
    _p("source", "UTF-8 bytes of the source file", (0, 4000), (16 * KIB, 256 * KIB), "bytes",
       "a reader that reads the first 4, 16 or 64 KiB of its file",
       lambda doc: _most(_bytes(t) for t in (doc.get("files") or {}).values())),
    _p("budget", "token_budget: drawn, or at the prior chain's count or one token either side (up to the "
       "count of the largest usual chain)", (0, 48001), (48002, BIG_INT), "tokens",
       "budgets kept in 32 bits, or compared with an estimate that overflows",
       lambda doc: _most(r["token_budget"] for r in provider_requests(doc))),
    _p("ceiling", "model_target's effective_ceiling", (100, 200000), (200001, BIG_INT), "tokens",
       "ceilings kept in 32 bits; a threshold share of the ceiling computed in integers that overflow",
       lambda doc: _most((r.get("model_target") or {}).get("effective_ceiling", 0) for r in provider_requests(doc))),
    _p("history-tokens", "history_tokens", (0, 300000), (300001, BIG_INT), "tokens",
       "the same, for the figure a compactor compares with its threshold",
       lambda doc: _most(r.get("history_tokens", 0) for r in provider_requests(doc))),
    _p("files", "files_touched per request", (0, 2), (50, 400), "",
       "a provider that scopes itself by the first N touched paths only",
       lambda doc: _most(len(r.get("files_touched", ())) for r in provider_requests(doc))),
)}

ROLES = {"kernel": KERNEL, "provider": PROVIDER}


def switchable(role: str) -> list[Dimension]:
    return [d for d in ROLES[role].values() if d.large]


def measure(role: str, doc: dict) -> dict[str, int]:
    return {key: dimension.measure(doc) for key, dimension in ROLES[role].items()}


# --- targets: where hypothesis is steered ---------------------------------------------------

def usual(role: str, doc: dict) -> bool:
    """Whether every dimension of the document lies in its usual range."""
    return all(value <= ROLES[role][key].usual[1] for key, value in measure(role, doc).items())


def targets(role: str, doc: dict) -> dict[str, float]:
    """Scores hypothesis' target() maximizes, each highest at a boundary where an off-by-one shows. Only the
    scenarios of the usual space are scored: the optimiser works on the best scenarios it has seen, and
    steering toward a boundary is cheapest, and enough, on small ones (the large ones are there for reach)."""
    if not usual(role, doc):
        return {}
    if role == "kernel":
        return {"own sections vs budget": -_budget_gap(doc), "caps sum vs ceiling": -_caps_gap(doc)}
    first = next(iter(provider_requests(doc)), None)
    if first is None:
        return {}
    total = sum(tokens.suite_tokenizer_count([{"text": {"text": t}} for t in _block_texts(s.get("content", ()))])
                for s in first.get("prior_sections", ()))
    return {"prior chain vs budget": -float(abs(total - first["token_budget"]))}


def _budget_gap(doc: dict) -> float:
    """How far the closest provider's first offered sections are from its cap (by the formula's count)."""
    gaps = []
    for provider in doc["setup"]["providers"]:
        first = offered(_action_at(provider, 0))
        cap = provider.get("token_budget_override")
        cap = provider["capabilities"].get("default_token_budget", 0) if cap is None else cap
        if first:
            counted = sum(tokens.fallback_count([{"text": {"text": t}} for t in _block_texts(s.get("content", ()))])
                          for s in first)
            gaps.append(abs(counted - cap))
    return float(min(gaps, default=BIG_INT))


def _caps_gap(doc: dict) -> float:
    setup = doc["setup"]
    caps = sum(p["token_budget_override"] if p.get("token_budget_override") is not None
               else p["capabilities"].get("default_token_budget", 0) for p in setup["providers"])
    routing = {setup["primary_model"], *setup.get("fallback_models", ())}
    ceilings = [m["context_window"] - m["reserved_output"] - m["system_overhead"] for m in setup["models"]
                if m["id"] in routing]
    return float(abs(caps - min(ceilings)))


# --- rendering ------------------------------------------------------------------------------

def _range(bounds: tuple[int, int] | None, unit: str) -> str:
    if bounds is None:
        return "-"
    low, high = (number(b, unit) for b in bounds)
    return f"{low}..{high}"


def number(value: int, unit: str) -> str:
    """A value as the table shows it: KiB for whole KiB of bytes, powers of two (and one less) past 2^20."""
    if unit == "bytes" and value >= KIB and value % KIB == 0:
        return f"{value // KIB} KiB"
    if value >= 2**20 and value & (value - 1) == 0:
        return f"2^{value.bit_length() - 1}"
    if value >= 2**20 and value & (value + 1) == 0:
        return f"2^{value.bit_length()}-1"
    return str(value)


def table(role: str | None = None) -> str:
    """The scenario space as a Markdown table."""
    lines = ["| role | dimension | usual | large | what a range this wide catches |", "|---|---|---|---|---|"]
    for name in ([role] if role else list(ROLES)):
        for d in ROLES[name].values():
            unit = f" ({d.unit})" if d.unit else ""
            lines.append(f"| {d.role} | {d.what}{unit} | {_range(d.usual, d.unit)} | {_range(d.large, d.unit)} "
                         f"| {d.why} |")
    return "\n".join(lines)
