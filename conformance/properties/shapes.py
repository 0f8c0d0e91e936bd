"""The shapes of each violation the generators produce: every distinct way a
rule can be broken that an implementation could get wrong differently (a
kernel comparing a section's joined text misses a re-blocking; one comparing
names case-insensitively misses an impersonation in upper case).

Each shape is a predicate on a generated document, so tests can draw
scenarios and see every shape come up, and docs/scenario-space.md lists them
from here.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterator

from conformance.data.provider_cases import DEFAULT_MODEL
from conformance.properties import space
from conformance.properties.strategies import CONTROLS, NEAR_MISSES, SOURCE_NAME, readings
from conformance.wire import errors, tokens

Predicate = Callable[[dict], bool]


# --- kernel documents --------------------------------------------------------------------

def _by_others(doc: dict) -> Iterator[tuple[dict, dict]]:
    """(provider, action) for every scripted action of a provider that is not a compactor."""
    for provider, _, action in space.kernel_actions(doc):
        if not provider["capabilities"].get("compactor"):
            yield provider, action


def _edits(field: str, value=None) -> Predicate:
    return lambda doc: any(field in e and (value is None or e[field] == value)
                           for _, a in _by_others(doc) for e in a.get("edit", ()))


def _kind(key: str) -> Predicate:
    return lambda doc: any(a.get(key) for _, a in _by_others(doc))


def _claimed_names(doc: dict) -> Iterator[tuple[dict, str]]:
    """(provider, name) for each name a non-compactor puts on a section: its own sections' and its edits'."""
    for provider, action in _by_others(doc):
        for section in space.offered(action):
            if "provider" in section:
                yield provider, section["provider"]
        for edit in action.get("edit", ()):
            if "provider" in edit:
                yield provider, edit["provider"]


def _declared(doc: dict) -> list[str]:
    return [p["name"] for p in doc["setup"]["providers"]]


def _impersonates(doc: dict) -> bool:
    return any(name in _declared(doc) and name != p["name"] for p, name in _claimed_names(doc))


def _near_miss_of_another(kind: str) -> Predicate:
    miss = NEAR_MISSES[kind]
    return lambda doc: any(name != p["name"] and name in {miss(o) for o in _declared(doc) if o != p["name"]}
                           and name not in _declared(doc) for p, name in _claimed_names(doc))


def _near_miss_of_own(kind: str) -> Predicate:
    miss = NEAR_MISSES[kind]
    return lambda doc: any(name == miss(p["name"]) != p["name"] and name not in _declared(doc)
                           for p, name in _claimed_names(doc))


def _compactor_rewrites_many(doc: dict) -> bool:
    return space.KERNEL["rewrites"].measure(doc) >= 4


def _several_compactors_rewrite(doc: dict) -> bool:
    return space.KERNEL["compactors"].measure(doc) >= 2


def _first_model(doc: dict) -> dict:
    first = next(t["assemble"]["model"] for t in doc["turns"] if "assemble" in t)
    return next(m for m in doc["setup"]["models"] if m["id"] == first)


def _at_reading(doc: dict, exact: bool, reading: str) -> bool:
    """Some provider's override sits at (or one token either side of) one reading of its first offered sections'
    count (strategies.readings), on a model with (exact) or without a tokenizer, where that reading differs from
    the rule's (the suite's tokenizer is additive over blocks, so on a model with one the counting readings
    coincide: there, at any of them)."""
    model = _first_model(doc)
    if model["count_tokens"] != exact:
        return False
    for provider in doc["setup"]["providers"]:
        override, first = provider.get("token_budget_override"), space.offered(provider["script"][0])
        if override is None or not first:
            continue
        found = readings(first, model)
        differs = found[reading] != found["each section"] or reading == "each section"
        if abs(override - found[reading]) <= 1 and (differs or exact and reading != "stated"):
            return True
    return False


def _stated_per_block(doc: dict) -> bool:
    for section in space.offered_sections(doc):
        blocks = [{"text": {"text": b["text"]}} for b in section["content"] if "text" in b]
        per_block = sum(tokens.fallback_count([b]) for b in blocks)
        if section.get("tokens") == per_block != tokens.fallback_count(blocks):
            return True
    return False


def _rounding_differs(groups: list[list[dict]]) -> bool:
    whole = tokens.fallback_count([b for g in groups for b in g])
    return len(groups) > 1 and sum(tokens.fallback_count(g) for g in groups) != whole


def _count_op_rounding(doc: dict) -> bool:
    return any(_rounding_differs([[{"text": {"text": b["text"]}}] for b in t["count_tokens"]["content"] if "text" in b])
               for t in doc["turns"] if "count_tokens" in t)


def _history_rounding(doc: dict) -> bool:
    def blocks(message: dict) -> list[dict]:
        texts = [message["text"]] if "text" in message else [b["text"] for b in message["content"] if "text" in b]
        return [{"text": {"text": t}} for t in texts]
    return any(_rounding_differs([blocks(m) for m in t["assemble"].get("new_messages", ())])
               for t in doc["turns"] if "assemble" in t)


def _zero_count_on_tokenizer(doc: dict) -> bool:
    zero_models = [m for m in doc["setup"]["models"] if m["count_tokens"] and m.get("tokenizer") == "words-only"]
    blank = any(t.strip() == "" != t for t in space.kernel_texts(doc))
    return bool(zero_models) and blank


def _unnormal_paths(doc: dict) -> bool:
    paths = [p for t in doc["turns"] if "assemble" in t
             for p in [t["assemble"].get("working_directory", ""), *t["assemble"].get("files_touched", ())]]
    return any(p and posixpath.normpath(p) != p for p in paths)


def _session_met_again_after(others: int) -> Predicate:
    def shows(doc: dict) -> bool:
        last_seen: dict[str, int] = {}
        for i, turn in enumerate(t["assemble"] for t in doc["turns"] if "assemble" in t):
            session = turn["session_id"]
            if session in last_seen and len({s for s, at in last_seen.items() if at > last_seen[session]}) >= others:
                return True
            last_seen[session] = i
        return False
    return shows


def _failures(doc: dict) -> Iterator[dict]:
    return (a["error"] for _, _, a in space.kernel_actions(doc) if "error" in a)


def _failing(test: Callable[[dict], bool]) -> Predicate:
    return lambda doc: any(test(e) for e in _failures(doc))


def _category(error: dict) -> str | None:
    name = (error.get("context_error") or {}).get("category")
    return None if name is None else name.removeprefix("CONTEXT_ERROR_CATEGORY_").lower()


def _info(error: dict) -> str | None:
    return errors.error_info_category(error.get("details", []))


KERNEL_SHAPES: dict[str, Predicate] = {
    "scope: replace a foreign section's content": _edits("text"),
    "scope: re-block a foreign section, one block split in two (same text)": _edits("reblock", "split"),
    "scope: re-block a foreign section, two blocks merged into one (same text)": _edits("reblock", "merge"),
    "scope: change only the last character of a foreign section's text (same length, same figure)": _edits("tail"),
    "scope: merge two foreign sections into one": _kind("merge"),
    "scope: split one foreign section in two": _kind("split"),
    "scope: reorder foreign sections": _kind("reorder"),
    "scope: relabel a foreign section": _edits("label"),
    "scope: change only a foreign section's stability": _edits("stability"),
    "scope: change only a foreign section's truncated flag": _edits("truncated"),
    "scope: change only a foreign section's token figure": _edits("tokens"),
    "scope: reassign a foreign section's owner": _edits("provider"),
    "scope: drop a foreign section": _kind("drop"),
    "scope: own sections inserted before or among foreign ones": lambda doc: _kind("insert")(doc) or _kind("prepend")(doc),
    "scope: a delta reply": _kind("delta"),
    "scope: own sections under another declared provider's name": _impersonates,
    **{f"scope: a near miss of another provider's name ({k})": _near_miss_of_another(k) for k in NEAR_MISSES},
    **{f"scope: a near miss of its own name ({k})": _near_miss_of_own(k) for k in NEAR_MISSES},
    "history: a non-compactor returns rewritten_history": _kind("rewritten_history"),
    "compactor: one reply rewrites many foreign sections at once": _compactor_rewrites_many,
    "compactor: several compactors rewrite the history in one firing": _several_compactors_rewrite,
    **{f"count: a budget at {what}, {model}": lambda d, exact=exact, reading=reading: _at_reading(d, exact, reading)
       for reading, what in (("each section", "the sections' counts added (the rule)"),
                             ("one request", "one count over all sections, where it differs"),
                             ("each block", "the blocks' counts added, where it differs"),
                             ("stated", "the stated figures' sum, where it differs"))
       for exact, model in ((False, "by the formula"), (True, "on a model with a tokenizer"))},
    "count: a stated figure that is the per-block rounding": _stated_per_block,
    "count: a count_tokens request whose per-block rounding differs": _count_op_rounding,
    "count: a history whose per-message rounding differs": _history_rounding,
    "count: a text of white space alone on a model whose tokenizer counts it 0": _zero_count_on_tokenizer,
    "turn: a working_directory or touched path a path library would tidy": _unnormal_paths,
    "label: a control character (line break, tab, escape) in a label": lambda doc: any(
        any(c in s.get("label", "") for c in CONTROLS) for s in space.offered_sections(doc)),
    "session: one met again after 8 others or more": _session_met_again_after(8),
    **{f"error: category {c}": _failing(lambda e, c=c: _category(e) == c) for c in (*errors.CATEGORIES, "unspecified")},
    "error: a bare status, no ContextError": _failing(lambda e: "context_error" not in e and not e.get("details")),
    "error: an ErrorInfo and no ContextError": _failing(lambda e: "context_error" not in e and _info(e) is not None),
    "error: an ErrorInfo that disagrees with the ContextError": _failing(
        lambda e: _category(e) is not None and _info(e) not in (None, _category(e))),
    "error: the code agrees with the category": _failing(lambda e: errors.GRPC_CODE.get(_category(e)) == e["code"]),
    "error: the code disagrees with the category": _failing(
        lambda e: _category(e) in errors.GRPC_CODE and errors.GRPC_CODE[_category(e)] != e["code"]),
    "error: the ContextError's message is not the status message": _failing(
        lambda e: "context_error" in e and e["context_error"]["message"] != e["message"]),
    "error: an empty message": _failing(lambda e: e["message"] == ""),
    "error: a multi-line message": _failing(lambda e: "\n" in e["message"]),
    "error: a message of 10 KiB or more": _failing(lambda e: len(e["message"].encode()) >= 10 * space.KIB),
    "error: retryable": _failing(lambda e: (e.get("context_error") or {}).get("retryable") is True),
    "error: not retryable": _failing(lambda e: (e.get("context_error") or {}).get("retryable") is False),
}


# --- provider documents ----------------------------------------------------------------------

def _prior_signed(test: Callable[[str], bool]) -> Predicate:
    return lambda doc: any(test(s["provider"]) for s in space.prior_sections(doc))


def _blank_inside_fence(text: str) -> bool:
    """A blank line between a fence line (three backticks or tildes) and the one closing it."""
    fence = None
    for line in text.split("\n"):
        marker = re.match(r"(`{3,}|~{3,})", line)
        if marker and (fence is None or marker.group(1).startswith(fence)):
            fence = None if fence else marker.group(1)
        elif fence and not line.strip():
            return True
    return False


def _source(doc: dict) -> str:
    return doc.get("files", {}).get(SOURCE_NAME, "")


def _provider_shapes(own_name: str) -> dict[str, Predicate]:
    """For a provider declared under own_name."""
    def budget_at_prior(doc: dict) -> bool:
        for request in space.provider_requests(doc):
            total = sum(tokens.suite_tokenizer_count([{"text": {"text": b["text"]}} for b in s["content"] if "text" in b])
                        for s in request.get("prior_sections", ()))
            if request.get("prior_sections") and abs(request["token_budget"] - total) <= 1:
                return True
        return False
    return {
        **{f"chain: a prior section signed with a near miss of its own name ({k})":
           _prior_signed(lambda name, k=k: name == NEAR_MISSES[k](own_name) != own_name) for k in NEAR_MISSES},
        "chain: prior sections of several providers": lambda doc: space.PROVIDER["owners"].measure(doc) >= 2,
        "chain: a prior section of several blocks": lambda doc: space.PROVIDER["blocks"].measure(doc) >= 2,
        "chain: an empty text block in a prior section": lambda doc: any(
            b.get("text") == "" for s in space.prior_sections(doc) for b in s["content"]),
        "chain: decomposed (NFD) text in a prior section": lambda doc: any(
            "\u0301" in b.get("text", "") or "\u0308" in b.get("text", "") for s in space.prior_sections(doc)
            for b in s["content"]),
        "budget: at the prior chain's count or one token either side": budget_at_prior,
        "session: the first firing's request again after 8 firings or more": lambda doc: any(
            i >= 8 and r == space.provider_requests(doc)[0] for i, r in enumerate(space.provider_requests(doc))),
        "figures: history_tokens at 96% of the effective ceiling or more": lambda doc: any(
            0 < (ceiling := (r.get("model_target") or DEFAULT_MODEL).get("effective_ceiling", 0)) <= r.get("history_tokens", 0) * 25 / 24
            for r in space.provider_requests(doc)),
        "source: a tab": lambda doc: "\t" in _source(doc),
        "source: a fenced code block with a blank line inside": lambda doc: _blank_inside_fence(_source(doc)),
        "source: one paragraph of 300 words or more": lambda doc: any(
            len(p.split()) >= 300 for p in _source(doc).split("\n\n")),
        "history: a tool result of 1 KiB or more": lambda doc: any(
            len(b["text"]["text"].encode()) >= space.KIB for r in space.provider_requests(doc)
            for m in r.get("conversation_history", ()) for c in m.get("content", ()) if "tool_result" in c
            for b in c["tool_result"].get("content", ()) if "text" in b),
        "count: a prior section of several blocks on a model whose tokenizer counts where blocks end": lambda doc: any(
            (r.get("model_target") or {}).get("tokenizer") == "blocks"
            and any(len(s["content"]) >= 2 for s in r.get("prior_sections", ())) for r in space.provider_requests(doc)),
    }


PROVIDER_OWN_NAME = "filereader"
PROVIDER_SHAPES = _provider_shapes(PROVIDER_OWN_NAME)


def seen(role: str, docs: list[dict]) -> set[str]:
    """The shapes some of these documents show."""
    shapes = KERNEL_SHAPES if role == "kernel" else PROVIDER_SHAPES
    return {name for name, shows in shapes.items() if any(shows(doc) for doc in docs)}


def listing() -> str:
    """The shapes as a Markdown list, by role."""
    lines = ["Kernel scenarios (the fake providers break the rule):", ""]
    lines += [f"- {name}" for name in KERNEL_SHAPES]
    lines += ["", "Provider scenarios (the requests a provider must get right):", ""]
    lines += [f"- {name.replace(PROVIDER_OWN_NAME, 'the provider')}" for name in PROVIDER_SHAPES]
    return "\n".join(lines)
