"""Hypothesis strategies for whole scenarios, built from small strategies for
the leaves (texts, blocks, sections, messages) up to a kernel vector document
or a provider vector document. A generated scenario is an ordinary vector, so
a shrunk counterexample can be written out and replayed as one."""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.wire import errors, tokens

# --- leaves -------------------------------------------------------------------------

_TRICKY = ["é", "e\u0301", "😀", "👍🏽", "漢字", "ש", "\u200b", " ", "\n", "\t", "a", "Z", "0", "<", "-",
           "&", '"', "\\", "`", ">"]  # the last five: characters a kernel may escape in its prompt

def _joined(pieces: list[str], max_size: int, min_size: int = 0):
    """Strings made of pieces that may be several code points each (a combining mark, a skin tone)."""
    return st.lists(st.sampled_from(pieces), min_size=min_size, max_size=max_size).map("".join)


short_texts = st.one_of(
    _joined(_TRICKY + list("abcdefghij .,"), 40),
    st.text(max_size=20),  # any code point hypothesis likes; st.text leaves out surrogates
)
huge_texts = st.builds(lambda unit, n: unit * n, st.sampled_from(["x", "é", "😀", "word "]), st.integers(1200, 2000))
texts = st.one_of(short_texts, short_texts, short_texts, huge_texts)
labels = st.one_of(st.sampled_from(["CLAUDE.md", "AGENTS.md (root)", "git status", "Notes — café", "L",
                                    'Q&A "draft" <v2>']),
                   st.text(alphabet=st.sampled_from(list("abcXYZ é漢-<&\"\\")), min_size=1, max_size=12))

non_text_blocks = st.sampled_from([
    {"image": {"data": "iVBORw0KGgo=", "media_type": "image/png"}},
    {"document": {"data": "JVBERi0=", "media_type": "application/pdf"}},
    {"tool_use": {"id": "t1", "name": "grep", "arguments": {"pattern": "TODO"}}},
    {"thinking": {"text": "hmm", "signature": "c2ln"}},
])
text_blocks = st.builds(lambda t: {"text": t}, texts)
stabilities = st.sampled_from(["STABILITY_STATIC", "STABILITY_DYNAMIC"])


_BLOCKS = st.lists(text_blocks, min_size=1, max_size=3)


@st.composite
def sections(draw, provider: str | None = None, allow_faults: bool = True) -> dict:
    """A section in vector short form; with faults, sometimes a lie, a non-text
    block, no label, or a truncated flag."""
    spec: dict = {"label": draw(labels)}
    blocks = draw(_BLOCKS)
    if allow_faults and draw(st.integers(0, 9)) == 0:
        blocks.insert(draw(st.integers(0, len(blocks))), draw(non_text_blocks))
    spec["content"] = blocks
    if provider:
        spec["provider"] = provider
    if draw(st.booleans()):
        spec["stability"] = draw(stabilities)
    if allow_faults:
        fault = draw(st.integers(0, 4))
        if fault == 0:
            spec["tokens"] = draw(st.integers(0, 5))           # most likely an understatement
        elif fault == 1:
            spec["label"] = ""
        elif fault == 2:
            spec["truncated"] = True
    return spec


messages = st.one_of(
    st.builds(lambda r, t: {"role": r, "text": t}, st.sampled_from(["user", "assistant"]), short_texts),
    st.builds(lambda t: {"role": "assistant", "content": [{"text": t}, {"tool_use": {"id": "c1", "name": "ls", "arguments": {}}}]},
              short_texts),
)
histories = st.lists(messages, max_size=6)

# --- kernel scenarios -----------------------------------------------------------------


# Strategies built once, not on every draw: hypothesis validates each new one, which cost a fifth of
# the generation. The same strategies, so a seed generates the same scenarios.
_WINDOWS = st.one_of(st.integers(200, 5000), st.integers(5000, 300000))
_MODEL_PROVIDERS = st.sampled_from(["acme", "other", "suite"])


@st.composite
def models(draw, index: int) -> dict:
    window = draw(_WINDOWS)
    reserved = draw(st.integers(0, window // 4))
    return {"id": f"model-{index}", "provider": draw(_MODEL_PROVIDERS),
            "context_window": window, "reserved_output": reserved,
            "system_overhead": draw(st.integers(0, window // 4)), "count_tokens": draw(st.booleans())}


_ERROR_CODES = ["UNAVAILABLE", "INTERNAL", "INVALID_ARGUMENT", "FAILED_PRECONDITION", "PERMISSION_DENIED", "UNKNOWN",
                "DEADLINE_EXCEEDED"]


_ERROR_MESSAGES = ["boom", "source gone", "panic: index out of range", "bad request", 'bad "quoted" value\nnaïve']


_CODES, _MESSAGES = st.sampled_from(_ERROR_CODES), st.sampled_from(_ERROR_MESSAGES)
_CATEGORIES = st.sampled_from(errors.CATEGORIES)


@st.composite
def call_errors(draw) -> dict:
    error: dict = {"code": draw(_CODES), "message": draw(_MESSAGES)}
    if draw(st.integers(0, 3)) > 0:
        category = draw(_CATEGORIES)
        # the ContextError's message is often the status message, and sometimes its own (R-RAW-MESSAGE)
        message = error["message"] if draw(st.integers(0, 2)) else draw(_MESSAGES)
        error["context_error"] = {"category": errors.enum_name(category), "message": message,
                                  "retryable": draw(st.booleans())}
    return error


_KINDS = st.sampled_from(["append"] * 4 + ["error"] * 3 + ["edit"] * 4 + [
    "keep", "drop", "reorder", "delta", "prepend", "insert", "impersonate", "hang", "rewrite"])
_OWN = {n: st.lists(sections(), min_size=1, max_size=n) for n in (2, 4)}
_EDIT_FIELDS = st.sampled_from(["truncated", "stability", "text", "label", "tokens", "provider"])
_EDIT_INDEX = st.sampled_from([0, 0, 1])
_REWRITTEN = st.lists(messages, min_size=1, max_size=2)


@st.composite
def actions(draw, name: str, others: list[str], compactor: bool) -> dict:
    """What one provider does on one turn: conform, or break a rule."""
    kind = draw(_KINDS)
    own = lambda n=2: draw(_OWN[n])
    if kind == "append":
        return {"append": own(4)}
    if kind == "keep":
        return {"keep": True}
    if kind == "error":
        return {"error": draw(call_errors())}
    if kind == "hang":
        return {"hang": True}
    if kind == "edit":
        field = draw(_EDIT_FIELDS)
        value = {"text": draw(short_texts), "label": draw(labels), "tokens": draw(st.integers(0, 99)),
                 "truncated": True, "stability": draw(stabilities),
                 "provider": draw(st.sampled_from(others or [name]))}[field]
        return {"edit": [{"index": draw(_EDIT_INDEX), field: value}], "append": own()}
    if kind == "drop":
        return {"drop": [draw(st.integers(0, 3))], "append": own()}
    if kind == "reorder":
        return {"reorder": draw(st.permutations(range(draw(st.integers(2, 4))))), "append": own()}
    if kind == "delta":
        return {"delta": own()}
    if kind == "prepend":
        return {"prepend": own()}
    if kind == "insert":
        return {"insert": {"index": draw(st.integers(0, 3)), "sections": own()}}
    if kind == "impersonate":
        return {"append": [draw(sections(provider=draw(st.sampled_from(others or ["someone-else"]))))]}
    action: dict = {"append": own()} if not compactor or draw(st.booleans()) else {"keep": True}
    action["rewritten_history"] = draw(_REWRITTEN)
    return action


_NAMES = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota",
                                    "kappa"]), max_size=8, unique=True)
_BUDGETS = st.one_of(st.integers(0, 40), st.integers(40, 3000))
_AROUND = st.sampled_from([-1, 0, 1])
_OVERRIDES = st.one_of(st.none(), st.integers(0, 500))
_COUNTED = st.lists(st.one_of(text_blocks, text_blocks, non_text_blocks), max_size=4)
_SESSION_IDS = ["01JDPROPERTYSESSION00000001", "01JDPROPERTYSESSION00000002"]
_SESSIONS = st.sampled_from(_SESSION_IDS[:1] * 3 + _SESSION_IDS[1:])
_FILES = st.lists(st.sampled_from(["src/a.py", "docs/é.md"]), max_size=2)


@st.composite
def kernel_scenarios(draw) -> dict:
    """A whole kernel vector document (without expectations: the invariants judge it)."""
    model_list = [draw(models(i)) for i in range(draw(st.integers(1, 3)))]
    names = draw(_NAMES)
    turns = draw(st.integers(1, 3))
    ids = [m["id"] for m in model_list]
    first_model = draw(st.sampled_from(model_list))
    providers = []
    for name in names:
        compactor = draw(st.integers(0, 2)) == 0
        others = [n for n in names if n != name]
        provider = {"name": name, "capabilities": {
            "default_token_budget": draw(_BUDGETS),
            "stability": draw(stabilities), "compactor": compactor},
            "script": [draw(actions(name, others, compactor)) for _ in range(turns)]}
        appended = provider["script"][0].get("append")
        if appended and draw(st.integers(0, 2)) == 0:
            # The first turn's own sections at exactly the budget, or one token either side.
            provider["token_budget_override"] = max(0, _count(appended, first_model) + draw(_AROUND))
        elif draw(st.booleans()):
            provider["token_budget_override"] = draw(_OVERRIDES)
        providers.append(provider)
    count_turns = [{"count_tokens": {"content": draw(_COUNTED),
                                     **({"model": draw(st.sampled_from(ids))} if draw(st.booleans()) else {})}}
                   for _ in range(draw(st.integers(0, 2)))]
    turn_docs = [{"assemble": {
        "session_id": draw(_SESSIONS),
        "turn_id": f"01JDPROPERTYTURN{i:011d}", "model": first_model["id"] if i == 0 else draw(st.sampled_from(ids)),
        "files_touched": draw(_FILES),
        "new_messages": draw(histories)}} for i in range(turns)]
    return {"id": "kernel/property/generated", "title": "A generated scenario",
            "requirements": [], "setup": {"models": model_list, "primary_model": ids[0],
                                           "fallback_models": ids[1:], "hook_timeout_ms": 300, "providers": providers},
            "turns": turn_docs + count_turns}


def _count(specs: list[dict], model: dict) -> int:
    """What the kernel's count of these short-form sections is on this model (tokenizer or formula)."""
    total = 0
    for spec in specs:
        content = [{"text": {"text": b["text"]}} for b in spec["content"] if "text" in b]
        total += tokens.count(content, exact=model["count_tokens"])
    return total


# --- provider requests ------------------------------------------------------------------------

# Prior chains as a kernel sends them: well-formed sections of other providers, often with
# decomposed characters and long lines that a careless provider might normalize or trim.
_decomposed = _joined(["e\u0301", "a\u0308", "o", " ", "ß", "\u00e9", "  "], 80, min_size=30)
prior_chains = st.lists(st.builds(lambda spec, text: {**spec, "provider": "other-provider",
                                                     "content": [{"text": text}, *spec["content"][1:]]},
                                  sections(allow_faults=False), st.one_of(short_texts, _decomposed)), max_size=4)


def suite_count(spec: dict) -> int:
    """What the suite's tokenizer says a short-form section counts."""
    return tokens.suite_tokenizer_count([{"text": {"text": b["text"]}} for b in spec["content"] if "text" in b])


@st.composite
def contribute_requests(draw) -> dict:
    prior = draw(prior_chains)
    total = sum(suite_count(s) for s in prior)
    # A third of the budgets sit at the prior chain's count or one token either side, where an off-by-one shows.
    edge = st.sampled_from([n for n in (total - 1, total, total + 1) if n >= 0])
    request = {"token_budget": draw(st.one_of(st.integers(0, 30), st.integers(30, 5000), edge)),
               "prior_sections": prior, "conversation_history": draw(histories)}
    if draw(st.booleans()):
        ceiling = draw(st.integers(100, 200000))
        request["model_target"] = {"id": "generated-model", "context_window": ceiling * 2, "effective_ceiling": ceiling}
    if draw(st.booleans()):
        request["history_tokens"] = draw(st.integers(0, 300000))
    return request


paragraph_texts = _joined(_TRICKY[:6] + list("abcdefghij .,"), 80).filter(lambda t: t.strip())
fixture_texts = st.lists(paragraph_texts, min_size=1, max_size=6).map(lambda ps: "\n\n".join(ps) + "\n")


@st.composite
def provider_scenarios(draw) -> dict:
    """A provider vector document: a fixture, Configure, then several Contribute calls."""
    steps = [{"configure": {}}] + [{"contribute": draw(contribute_requests())} for _ in range(draw(st.integers(1, 3)))]
    return {"id": "provider/property/generated", "title": "A generated provider scenario", "requirements": [],
            "files": {"CONTEXT.md": draw(fixture_texts)}, "steps": steps}
