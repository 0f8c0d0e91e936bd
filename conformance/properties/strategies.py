"""Hypothesis strategies for whole scenarios, built from small strategies for
the leaves (texts, blocks, sections, messages) up to a kernel vector document
or a provider vector document. A generated scenario is an ordinary vector, so
a shrunk counterexample can be written out and replayed as one.

Every count and size is drawn from the scenario space (space.py): its usual
range, or, in the scenarios that switch it on (one in `share`, swarm style),
its large range. Large values are built cheaply, by repeating a few drawn
pieces, because hypothesis gives each scenario a few KiB of choices: a history
of 300 messages is three drawn messages, numbered.

The fake providers break each rule in every shape an implementation could get
wrong differently (NEAR_MISSES, the edit kinds of `actions`); tests/
test_scenario_space.py sees each one drawn.
"""

from __future__ import annotations

import copy
import functools
import unicodedata

from hypothesis import strategies as st

from conformance.data.provider_cases import DEFAULT_MODEL
from conformance.properties import space
from conformance.properties.space import KERNEL, PROVIDER
from conformance.wire import errors, tokens

DEFAULT_SHARE = 24  # one scenario in this many switches each switchable dimension to its large range


def swarm(role: str, share: int | None):
    """Which dimensions one scenario switches to their large range: each one, independently, in `share` (1:
    every one, None: none, for tests that look at either end of the space)."""
    switch = _switch(share)
    return st.tuples(*(switch for _ in space.switchable(role))).map(
        lambda on: frozenset(d.key for d, chosen in zip(space.switchable(role), on) if chosen))


@functools.cache
def _switch(share: int | None):
    if share is None or share == 1:
        return st.just(share == 1)
    return st.sampled_from([False] * (share - 1) + [True])  # shrinks to off


def _cycled(pool: list, n: int, mark) -> list:
    """n items made from a few drawn ones, each marked with its index so that no two are alike."""
    return [mark(copy.deepcopy(pool[i % len(pool)]), i) for i in range(n)] if pool else []


# --- leaves -------------------------------------------------------------------------

_TRICKY = ["é", "e\u0301", "😀", "👍🏽", "漢字", "ש", "\u200b", " ", "\n", "\t", "a", "Z", "0", "<", "-",
           "&", '"', "\\", "`", ">"]  # the last five: characters a kernel may escape in its prompt


def _joined(pieces: list[str], max_size: int, min_size: int = 0):
    """Strings made of pieces that may be several code points each (a combining mark, a skin tone)."""
    return st.lists(st.sampled_from(pieces), min_size=min_size, max_size=max_size).map("".join)


def sized(unit: str, size: int) -> str:
    """A text of exactly `size` UTF-8 bytes: `unit` repeated, topped up with ASCII."""
    text = unit * (size // len(unit.encode("utf-8")))
    return text + "x" * (size - len(text.encode("utf-8")))


short_texts = st.one_of(
    _joined(_TRICKY + list("abcdefghij .,"), 40),
    st.text(max_size=20),  # any code point hypothesis likes; st.text leaves out surrogates
)
huge_texts = st.builds(lambda unit, n: unit * n, st.sampled_from(["x", "é", "😀", "word "]), st.integers(1200, 2000))
texts = st.one_of(short_texts, short_texts, short_texts, huge_texts)
_TEXT_UNITS = ["x", "é", "😀", "word ", "e\u0301", "a line of text\n", "漢字 ", '<&>"\\` ']


def large_texts(dimension: space.Dimension):
    return st.builds(sized, st.sampled_from(_TEXT_UNITS), dimension.strategy(True))


_LABELS = ["CLAUDE.md", "AGENTS.md (root)", "git status", "Notes — café", "L", 'Q&A "draft" <v2>']
labels = st.one_of(st.sampled_from(_LABELS),
                   st.text(alphabet=st.sampled_from(list("abcXYZ é漢-<&\"\\")), min_size=1, max_size=12))
# Control characters a kernel may flatten, strip or take for the end of its boundary line: line breaks of every
# kind (U+2028 is one to Unicode, and to Python's splitlines), a tab, an escape, a bell, a delete.
CONTROLS = ["\n", "\r\n", "\r", "\t", "\u2028", "\x1b", "\x07", "\x7f"]
control_labels = st.builds(lambda before, control, after: before + control + after,
                           st.sampled_from(["git", "a", "Notes — café", "<L>"]), st.sampled_from(CONTROLS),
                           st.sampled_from(["status", "b", "", " line two"]))
_LABEL_UNITS = ["L é ", "漢字 ", "<&> x ", "Notes — café ", "L", "e\u0301", "line\tone\n"]  # "L", "e\u0301": one word, no space


def large_labels(dimension: space.Dimension):
    return st.builds(sized, st.sampled_from(_LABEL_UNITS), dimension.strategy(True))


non_text_blocks = st.sampled_from([
    {"image": {"data": "iVBORw0KGgo=", "media_type": "image/png"}},
    {"document": {"data": "JVBERi0=", "media_type": "application/pdf"}},
    {"tool_use": {"id": "t1", "name": "grep", "arguments": {"pattern": "TODO"}}},
    {"thinking": {"text": "hmm", "signature": "c2ln"}},
])
text_blocks = st.builds(lambda t: {"text": t}, texts)
stabilities = st.sampled_from(["STABILITY_STATIC", "STABILITY_DYNAMIC"])
_BLOCKS = st.lists(text_blocks, min_size=1, max_size=3)
_PLAIN_BLOCKS = st.lists(st.builds(lambda t: {"text": t}, short_texts), min_size=1, max_size=2)


def _fallback_per_block(blocks: list[dict]) -> int:
    """The formula rounded per block and summed: the figure a kernel that counts each block apart reaches."""
    return sum(tokens.fallback_count([{"text": {"text": b["text"]}}]) for b in blocks if "text" in b)


@st.composite
def sections(draw, provider: str | None = None, allow_faults: bool = True, plain: bool = False,
             controls: bool = True) -> dict:
    """A section in vector short form; with faults, sometimes a lie (understated, or stated as counted per
    block), a non-text block, no label, or a truncated flag. Plain: short texts, no faults (cheap to repeat).
    Controls: the label is sometimes one with a control character in it."""
    allow_faults = allow_faults and not plain
    label = labels if not controls or plain or draw(st.integers(0, 5)) else control_labels
    spec: dict = {"label": draw(st.sampled_from(_LABELS) if plain else label)}
    blocks = draw(_PLAIN_BLOCKS if plain else _BLOCKS)
    if allow_faults and draw(st.integers(0, 9)) == 0:
        blocks.insert(draw(st.integers(0, len(blocks))), draw(non_text_blocks))
    spec["content"] = blocks
    if provider:
        spec["provider"] = provider
    if draw(st.booleans()):
        spec["stability"] = draw(stabilities)
    if allow_faults:
        fault = draw(st.integers(0, 5))
        if fault == 0:
            spec["tokens"] = draw(st.integers(0, 5))           # most likely an understatement
        elif fault == 1:
            spec["label"] = ""
        elif fault == 2:
            spec["truncated"] = True
        elif fault == 3:
            spec["tokens"] = _fallback_per_block(blocks)        # another reading of the formula
    return spec


def _numbered_section(spec: dict, i: int) -> dict:
    return {**spec, "label": f"{spec['label']} #{i}"}


def _numbered_block(block: dict, i: int) -> dict:
    return {"text": f"{block['text']} #{i}"} if "text" in block else block


messages = st.one_of(
    st.builds(lambda r, t: {"role": r, "text": t}, st.sampled_from(["user", "assistant"]), short_texts),
    st.builds(lambda t: {"role": "assistant", "content": [{"text": t}, {"tool_use": {"id": "c1", "name": "ls", "arguments": {}}}]},
              short_texts),
)
histories = st.lists(messages, max_size=6)
_POOL = st.lists(messages, min_size=1, max_size=3)


def _numbered_message(message: dict, i: int) -> dict:
    if "text" in message:
        return {**message, "text": f"{message['text']} #{i}"}
    return {**message, "content": [_numbered_block(message["content"][0], i), *message["content"][1:]]}


@st.composite
def sized_histories(draw, dimension: space.Dimension, large: bool) -> list[dict]:
    n = draw(dimension.strategy(large))
    return _cycled(draw(_POOL), n, _numbered_message) if large else [draw(messages) for _ in range(n)]


@st.composite
def files_touched(draw, dimension: space.Dimension, large: bool) -> list[str]:
    n = draw(dimension.strategy(large))
    if not large:
        return [draw(_TOUCHED) for _ in range(n)]
    paths = [f"src/pkg{i}/módulo_{i}.py" for i in range(n)]
    paths[draw(st.integers(0, n - 1))] = "deep/" * draw(st.integers(100, 800)) + "file.md"  # up to 4 KiB
    return paths


# Paths as the harness reports them, which the kernel passes on as they are (K-TURN-FIELDS): often already
# normal, sometimes with what a path library would tidy away (a trailing slash, ".", "..", "//"), a space, a
# backslash, or relative.
_UNNORMAL_PATHS = ["/work/project/", "/work/./project", "/work//project", "/work/tmp/../project", "work/project",
                   "/work/my project", "/work/projé", "C:\\work\\project", "/work/project/."]
_WORKING_DIRECTORIES = st.sampled_from(["/work/project"] * 6 + _UNNORMAL_PATHS)
_TOUCHED = st.sampled_from(["src/a.py", "docs/é.md", "src/a.py", "docs/é.md", "./src/a.py", "src//a.py",
                            "src/pkg/../a.py", "src/pkg/", "docs/a b.md"])


# --- identities -------------------------------------------------------------------------

def _accented(name: str, form: str) -> str:
    """The name with an acute accent on its first vowel, in the given normalization form: both forms fold to
    the name when marks are stripped, and differ from each other byte for byte."""
    i = next((i for i, c in enumerate(name) if c in "aeiou"), 0)
    return unicodedata.normalize(form, name[:i + 1] + "\u0301" + name[i + 1:])


# Names that nearly match a provider's: each what a kernel (or provider) comparing names loosely takes for it.
NEAR_MISSES = {
    "upper case": str.upper,
    "title case": lambda n: n[:1].upper() + n[1:],
    "leading space": lambda n: " " + n,
    "trailing space": lambda n: n + " ",
    "trailing newline": lambda n: n + "\n",
    "zero-width space": lambda n: n[:1] + "\u200b" + n[1:],
    "byte-order mark": lambda n: "\ufeff" + n,
    "fullwidth (NFKC folds it)": lambda n: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in n),
    "accented, NFC": lambda n: _accented(n, "NFC"),
    "accented, NFD": lambda n: _accented(n, "NFD"),
    "NUL after it": lambda n: n + "\x00",
    "one character short": lambda n: n[:-1] or n * 2,
    "one character more": lambda n: n + n[-1:],
}
_NEAR = st.sampled_from(list(NEAR_MISSES))


@st.composite
def identities(draw, name: str, others: list[str], own: bool = False) -> str:
    """A name for a section that is not the provider's own: another declared name, a near miss of one, a near
    miss of its own; with `own`, also its own name exactly (for a foreign section it takes over)."""
    choice = draw(st.integers(0, 4 if own else 3))
    if choice == 4:
        return name
    if choice == 0 and others:
        return draw(st.sampled_from(others))
    target = draw(st.sampled_from(others)) if choice in (1, 2) and others else name
    return NEAR_MISSES[draw(_NEAR)](target)


# --- kernel scenarios -----------------------------------------------------------------


# Strategies built once, not on every draw: hypothesis validates each new one, which cost a fifth of
# the generation. The same strategies, so a seed generates the same scenarios.
_MODEL_PROVIDERS = st.sampled_from(["acme", "other", "suite"])
# words-only answers 0 for a text of white space alone: a count of 0 is an answer, not the lack of one.
_MODEL_TOKENIZERS = st.sampled_from(["words", "words", "thirds", "words-only"])
_WINDOWS = {False: st.one_of(st.integers(200, 5000), st.integers(5000, KERNEL["window"].usual[1])),
            True: KERNEL["window"].strategy(True)}


@st.composite
def models(draw, index: int, large: bool = False) -> dict:
    window = draw(_WINDOWS[large])
    reserved = draw(st.integers(0, window // 4))
    return {"id": f"model-{index}", "provider": draw(_MODEL_PROVIDERS),
            "context_window": window, "reserved_output": reserved,
            "system_overhead": draw(st.integers(0, window // 4)), "count_tokens": draw(st.booleans()),
            "tokenizer": draw(_MODEL_TOKENIZERS)}


_ERROR_CODES = ["UNAVAILABLE", "INTERNAL", "INVALID_ARGUMENT", "FAILED_PRECONDITION", "PERMISSION_DENIED", "UNKNOWN",
                "DEADLINE_EXCEEDED"]
_ERROR_MESSAGES = ["boom", "source gone", "panic: index out of range", "bad request", 'bad "quoted" value\nnaïve',
                   "", "  padded  ", "ünïcödé 漢字 😀", "line one\nline two\n\tat frame 3"]
_CODES, _MESSAGES = st.sampled_from(_ERROR_CODES), st.sampled_from(_ERROR_MESSAGES)
# A ContextError's category: each of the taxonomy's, or left unspecified (which names no category at all).
_CATEGORIES = st.sampled_from([*errors.CATEGORIES, *errors.CATEGORIES, "unspecified"])
_DOMAIN = "context.pluggableharness.dev"


def _error_info(category: str) -> dict:
    return {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": errors.enum_name(category),
            "domain": _DOMAIN}


@st.composite
def call_errors(draw) -> dict:
    """A failed Contribute in every form the taxonomy allows or a provider gets wrong: each category, under its
    own code or another, a ContextError with the status message, its own or none, retryable either way, an
    ErrorInfo beside it (agreeing or not) or instead of it, and no ContextError at all."""
    error: dict = {"code": draw(_CODES), "message": draw(_MESSAGES)}
    form = draw(st.integers(0, 7))
    if form == 0:
        return error                                    # a bare status
    if form == 1:
        error["details"] = [_error_info(draw(_CATEGORIES.filter(lambda c: c != "unspecified")))]
        return error                                    # the upstream SDK's form: no ContextError (R-ERROR-DETAIL-FORM)
    category = draw(_CATEGORIES)
    if category in errors.GRPC_CODE and draw(st.booleans()):
        error["code"] = errors.GRPC_CODE[category]      # the code agrees with the detail; otherwise it may not
    # the ContextError's message is often the status message, and sometimes its own
    # (R-RAW-MESSAGE), and either may be empty while the other has words
    message = error["message"] if draw(st.integers(0, 2)) else draw(_MESSAGES)
    error["context_error"] = {"category": errors.enum_name(category), "message": message,
                              "retryable": draw(st.booleans())}
    if form == 7:
        other = draw(st.sampled_from(errors.CATEGORIES))
        error["details"] = [_error_info(other), {"@type": "type.googleapis.com/google.rpc.DebugInfo",
                                                 "detail": "stack trace elided"}]
    return error


_KINDS = st.sampled_from(["append"] * 5 + ["error"] * 4 + ["edit"] * 5 + [
    "keep", "drop", "reorder", "delta", "prepend", "insert", "impersonate", "impersonate", "impersonate", "merge", "split",
    "hang", "rewrite"])
_OWN = {n: st.lists(sections(), min_size=1, max_size=n) for n in (2, 4)}
# Beside an edit of another's section, own sections that are often plain (short, no fault), so that what the kernel
# does with the edit shows alone: a kernel that misses it keeps them, one that sees it discards them.
_BESIDE = st.one_of(_OWN[2], st.lists(sections(plain=True), min_size=1, max_size=2))
# Every field of a prior section an edit may change: its text (replaced, re-blocked with the same text, or its
# last character changed, far past its start in a long text), its label, its figure, its flags, its owner.
_EDIT_FIELDS = st.sampled_from(["truncated", "stability", "text", "label", "tokens", "provider", "reblock", "reblock",
                                "tail"])
_EDIT_INDEX = st.sampled_from([0, 0, 1])
_REBLOCK = st.sampled_from(["split", "merge"])
_REWRITTEN = st.lists(messages, min_size=1, max_size=2)


@functools.cache
def _indices(reach: int):
    """Where an edit lands in the prior chain: near its start, or anywhere up to `reach` in a long chain."""
    return _EDIT_INDEX if reach <= 1 else st.one_of(_EDIT_INDEX, st.integers(0, reach))


@st.composite
def actions(draw, name: str, others: list[str], compactor: bool, reach: int = 1) -> dict:
    """What one provider does on one turn: conform, or break a rule in one of its shapes."""
    kind = draw(_KINDS)
    own = lambda n=2: draw(_OWN[n])
    beside = lambda: draw(_BESIDE)
    index = lambda: draw(_indices(reach))
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
        value = {"text": lambda: draw(short_texts), "label": lambda: draw(labels),
                 "tokens": lambda: draw(st.integers(0, 99)), "truncated": lambda: True,
                 "stability": lambda: draw(stabilities), "reblock": lambda: draw(_REBLOCK), "tail": lambda: True,
                 "provider": lambda: draw(identities(name, others, own=True))}[field]()
        return {"edit": [{"index": index(), field: value}], "append": beside()}
    if kind in ("drop", "merge", "split"):
        return {kind: [index()], "append": beside()}
    if kind == "reorder":
        return {"reorder": draw(st.permutations(range(draw(st.integers(2, 4))))), "append": beside()}
    if kind == "delta":
        return {"delta": own()}
    if kind == "prepend":
        return {"prepend": own()}
    if kind == "insert":
        return {"insert": {"index": draw(st.integers(0, 3)), "sections": own()}}
    if kind == "impersonate":  # its own sections, one of them under a name that is not quite its own
        mine = own()
        at = draw(st.integers(0, len(mine) - 1))
        mine[at] = {**mine[at], "provider": draw(identities(name, others))}
        return {"append": mine}
    action: dict = {"append": own()} if not compactor or draw(st.booleans()) else {"keep": True}
    action["rewritten_history"] = draw(_REWRITTEN)
    return action


_NAME_POOL = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa"]
_TEMPLATE_ACTION = st.one_of(st.builds(lambda s: {"append": s}, st.lists(sections(plain=True), min_size=1, max_size=2)),
                             st.just({"keep": True}))
_BUDGETS = {False: st.one_of(st.integers(0, 40), st.integers(40, KERNEL["budget"].usual[1])),
            True: KERNEL["budget"].strategy(True)}
_AROUND = st.sampled_from([-1, 0, 1])
_OVERRIDES = {False: st.one_of(st.none(), st.integers(0, 500)),
              True: st.one_of(st.none(), KERNEL["override"].strategy(True))}
_COUNTED = st.one_of(text_blocks, text_blocks, non_text_blocks)
_SESSION_FIRST = 3  # in the usual space three turns in four go to the first session
ROOM = 10**6        # the cap of a compactor that must have room to accept what a large scenario sends it


def _session_ids(n: int) -> list[str]:
    return [f"01JDPROPERTYSESSION{i + 1:08d}" for i in range(n)]


def _names(draw, n: int, large: bool) -> list[str]:
    if large:  # more providers than names: number them (and keep declaration order unlike name order)
        return [f"{_NAME_POOL[i % len(_NAME_POOL)]}-{i}" for i in range(n)]
    return draw(st.permutations(_NAME_POOL))[:n]


@st.composite
def kernel_scenarios(draw, share: int | None = DEFAULT_SHARE, switched: frozenset[str] | None = None) -> dict:
    """A whole kernel vector document (without expectations: the invariants judge it). switched: the dimensions
    to make large, instead of drawing them."""
    large = draw(swarm("kernel", share)) if switched is None else switched
    size = lambda key: draw(KERNEL[key].strategy(key in large))
    model_list = [draw(models(i, "window" in large)) for i in range(size("models"))]
    ids = [m["id"] for m in model_list]
    first_model = draw(st.sampled_from(model_list))
    names = _names(draw, size("providers"), "providers" in large)
    sessions = _session_ids(size("sessions"))
    # Many sessions are taken in turn, and the first few met again after all the others (a small cache of
    # sessions has forgotten them by then).
    turns = size("turns") + (len(sessions) if "sessions" in large else 0)
    providers = _providers(draw, names, turns, "providers" in large)
    turn_docs = []
    for i in range(turns):
        if "sessions" in large:
            session = sessions[i % len(sessions)]
        else:
            session = draw(st.sampled_from(sessions[:1] * _SESSION_FIRST + sessions[1:]))
        turn_docs.append({"assemble": {
            "session_id": session, "turn_id": f"01JDPROPERTYTURN{i:011d}",
            "model": first_model["id"] if i == 0 else draw(st.sampled_from(ids)),
            "files_touched": draw(files_touched(KERNEL["files"], "files" in large)),
            "working_directory": draw(_WORKING_DIRECTORIES),
            "new_messages": draw(sized_histories(KERNEL["history"], "history" in large and i == 0))}})
    count_turns = [{"count_tokens": {"content": _counted(draw, "count-blocks" in large),
                                     **({"model": draw(st.sampled_from(ids))} if draw(st.booleans()) else {})}}
                   for _ in range(draw(st.integers(0, 2)))]
    doc = {"id": "kernel/property/generated", "title": "A generated scenario",
           "requirements": [], "setup": {"models": model_list, "primary_model": ids[0],
                                          "fallback_models": ids[1:], "hook_timeout_ms": 300, "providers": providers},
           "turns": turn_docs + count_turns}
    for key, enlarge in _ENLARGERS.items():
        if key in large:
            enlarge(draw, doc, turns)
    for provider in doc["setup"]["providers"]:
        _budget(draw, provider, first_model, large)
    _caps_within_int64(doc["setup"]["providers"])
    if draw(st.integers(0, 3)) == 0:
        _ceiling_at_caps(doc, draw(_AROUND))
    return doc


def _providers(draw, names: list[str], turns: int, large: bool) -> list[dict]:
    """Each provider's capabilities and script. In a long chain most providers repeat a few conforming scripts
    and a few drawn positions (the last among them) break rules, reaching anywhere in the chain."""
    count = len(names)
    special = set(range(count)) if not large else set(draw(st.lists(st.integers(0, count - 1), max_size=4))) | {count - 1}
    templates = [[draw(_TEMPLATE_ACTION) for _ in range(turns)] for _ in range(draw(st.integers(1, 3)))] if large else []
    providers = []
    for i, name in enumerate(names):
        compactor = i in special and draw(st.integers(0, 2)) == 0
        others = [n for n in names if n != name]
        script = [draw(actions(name, others, compactor, 2 * count if large else 1)) for _ in range(turns)] \
            if i in special else copy.deepcopy(templates[i % len(templates)])
        providers.append({"name": name, "capabilities": {
            "default_token_budget": 0, "stability": draw(stabilities), "compactor": compactor}, "script": script})
    return providers


def _budget(draw, provider: dict, first_model: dict, large: frozenset) -> None:
    """Its default budget, and its override: at one reading of its first offered sections' count or one token
    either side of it, where an off-by-one or a count of another reading shows; or any override; or none."""
    provider["capabilities"]["default_token_budget"] = draw(_BUDGETS["budget" in large])
    if "token_budget_override" in provider:
        return  # a large scenario gave it room, or a cap at its offered count
    offered = space.offered(provider["script"][0])
    if offered and draw(st.booleans()):
        reading = draw(st.sampled_from(sorted(set(readings(offered, first_model).values()))))
        provider["token_budget_override"] = max(0, reading + draw(_AROUND))
    elif draw(st.booleans()):
        provider["token_budget_override"] = draw(_OVERRIDES["override" in large])


def _caps_within_int64(providers: list[dict]) -> None:
    """Each default and override lowered, where needed, to a share of int64 the providers can hold together: the
    wire carries a cap in int64, and a sum of caps past it is a configuration no kernel is asked about here."""
    most = space.INT64_MAX // max(1, len(providers))
    for provider in providers:
        capabilities = provider["capabilities"]
        capabilities["default_token_budget"] = min(capabilities["default_token_budget"], most)
        if provider.get("token_budget_override") is not None:
            provider["token_budget_override"] = min(provider["token_budget_override"], most)


def _ceiling_at_caps(doc: dict, around: int) -> None:
    """The smallest effective ceiling of the routing chain moved to the caps' sum, or one token either side,
    where the budget warning's comparison shows (R-BUDGET-SUM-WARNING); by the system overhead of that model,
    where that leaves it a legal model and still the smallest."""
    setup = doc["setup"]
    caps = sum(p["capabilities"]["default_token_budget"] if p.get("token_budget_override") is None
               else p["token_budget_override"] for p in setup["providers"])
    ceiling = lambda m: m["context_window"] - m["reserved_output"] - m["system_overhead"]
    routing = sorted((m for m in setup["models"]), key=ceiling)   # every model is in the routing chain
    smallest, wanted = routing[0], caps + around
    overhead = smallest["context_window"] - smallest["reserved_output"] - wanted
    if wanted >= 0 and overhead >= 0 and (len(routing) == 1 or wanted <= ceiling(routing[1])):
        smallest["system_overhead"] = overhead


def _counted(draw, large: bool) -> list[dict]:
    n = draw(KERNEL["count-blocks"].strategy(large))
    if large:
        return _cycled([draw(_COUNTED) for _ in range(3)], n, _numbered_block)
    return [draw(_COUNTED) for _ in range(n)]


def _content(spec: dict) -> list[dict]:
    return [{"text": {"text": b["text"]}} for b in spec["content"] if "text" in b]


def _count(specs: list[dict], model: dict) -> int:
    """What the kernel's count of these short-form sections is on this model (tokenizer or formula)."""
    return sum(_model_count(_content(spec), model) for spec in specs)


def _model_count(content: list[dict], model: dict) -> int:
    """CountTokens for a generated model: its own tokenizer when it has one, else the formula."""
    if model["count_tokens"]:
        return tokens.KERNEL_TOKENIZERS[model.get("tokenizer", "words")](content)
    return tokens.fallback_count(content)


def readings(specs: list[dict], model: dict) -> dict[str, int]:
    """The figures a kernel could reach for a provider's sections: each section counted and the counts added
    (the rule, R-BUDGET-PER-PROVIDER), all of them counted in one request, each block counted apart, or the
    figures the sections state taken on trust. Under the formula the first three differ wherever a block's
    byte length is not a multiple of four."""
    blocks = [b for spec in specs for b in _content(spec)]
    stated = sum(spec.get("tokens", _count([spec], model)) for spec in specs)
    return {"each section": _count(specs, model), "one request": _model_count(blocks, model),
            "each block": sum(_model_count([b], model) for b in blocks), "stated": stated}


# --- large scenarios: each switched dimension made large after the usual scenario is drawn -------------------

def _slots(doc: dict, sections_only: bool = False) -> list[dict]:
    """The dicts that hold a text: blocks of offered sections, then (unless sections_only) messages and
    counted content."""
    found = [b for s in space.offered_sections(doc) for b in s["content"] if "text" in b]
    if not sections_only:
        found += [m for m in space.kernel_messages(doc) if "text" in m]
        found += [b for m in space.kernel_messages(doc) for b in m.get("content", ()) if "text" in b]
        found += [b for t in doc["turns"] for b in t.get("count_tokens", {}).get("content", ()) if "text" in b]
    return found


def _some(draw, items: list, most: int = 3) -> list:
    """A few of the items, by drawn positions."""
    if not items:
        return []
    return [items[i] for i in draw(st.lists(st.integers(0, len(items) - 1), min_size=1, max_size=most, unique=True))]


def _enlarge_text(draw, doc: dict, turns: int) -> None:
    for slot in _some(draw, _slots(doc)):
        slot["text"] = draw(large_texts(KERNEL["text"]))


def _enlarge_label(draw, doc: dict, turns: int) -> None:
    for section in _some(draw, list(space.offered_sections(doc))):
        section["label"] = draw(large_labels(KERNEL["label"]))


def _failing(draw, doc: dict, turns: int) -> list[dict]:
    """The error actions of the scenario; where there are none, one provider fails on one turn."""
    found = [a["error"] for _, _, a in space.kernel_actions(doc) if "error" in a]
    providers = doc["setup"]["providers"]
    if not found and providers:
        provider = draw(st.sampled_from(providers))
        error = draw(call_errors())
        provider["script"][draw(st.integers(0, turns - 1))] = {"error": error}
        found = [error]
    return found


_ERROR_UNITS = ["panic: index out of range\n", "naïve \"quoted\" <tag> & 漢字 ", "x", "\tat frame.go:12\n"]


def _enlarge_error(draw, doc: dict, turns: int) -> None:
    for error in _some(draw, _failing(draw, doc, turns)):
        _long_message(draw, error, draw(st.builds(sized, st.sampled_from(_ERROR_UNITS), KERNEL["error"].strategy(True))))


def _enlarge_error_lines(draw, doc: dict, turns: int) -> None:
    for error in _some(draw, _failing(draw, doc, turns)):
        n = draw(KERNEL["error-lines"].strategy(True))
        _long_message(draw, error, "".join(f"frame {i}\n" for i in range(n - 1)) + "exit status 2")


def _long_message(draw, error: dict, message: str) -> None:
    """The error's message made long, and often its ContextError's; half the time the failure is made an
    unknown one, the category whose message the kernel must report as it came (R-RAW-MESSAGE)."""
    error["message"] = message
    if draw(st.booleans()):
        error["code"] = errors.GRPC_CODE["unknown"]
        error["context_error"] = {"category": errors.enum_name("unknown"), "message": message,
                                  "retryable": draw(st.booleans())}
    elif "context_error" in error and draw(st.booleans()):
        error["context_error"]["message"] = message


def _offering(draw, doc: dict) -> dict | None:
    """An action that appends sections of its own; where there is none, one provider's first becomes one."""
    found = [a for _, _, a in space.kernel_actions(doc) if "append" in a]
    if found:
        return draw(st.sampled_from(found))
    providers = doc["setup"]["providers"]
    if not providers:
        return None
    provider = draw(st.sampled_from(providers))
    provider["script"][0] = {"append": []}
    return provider["script"][0]


def _plain_sections(draw, n: int) -> list[dict]:
    return _cycled(draw(st.lists(sections(plain=True), min_size=1, max_size=3)), n, _numbered_section)


def _enlarge_sections(draw, doc: dict, turns: int) -> None:
    action = _offering(draw, doc)
    if action is not None:
        action["append"] = _plain_sections(draw, draw(KERNEL["sections"].strategy(True)))


def _enlarge_blocks(draw, doc: dict, turns: int) -> None:
    for section in _some(draw, list(space.offered_sections(doc))):
        section["content"] = _cycled(section["content"], draw(KERNEL["blocks"].strategy(True)), _numbered_block)


def _fresh_name(providers: list[dict], stem: str) -> str:
    """A provider name no provider of the scenario has yet: two enlargers may each add a provider, and a
    name declared twice is no scenario at all (loading refuses it)."""
    taken = {p["name"] for p in providers}
    return next(f"{stem}-{i}" for i in range(len(providers) + 1) if f"{stem}-{i}" not in taken)


def _a_compactor(draw, doc: dict, turns: int, last: bool = False) -> dict:
    """A compactor of the scenario (the last provider, with `last`), made one where needed, with room."""
    providers = doc["setup"]["providers"]
    found = [p for p in providers if p["capabilities"]["compactor"]]
    if last or not found:
        if not providers:
            providers.append({"name": _fresh_name(providers, "compactor"), "capabilities": {"default_token_budget": 0,
                              "stability": "STABILITY_DYNAMIC", "compactor": True},
                              "script": [{"keep": True} for _ in range(turns)]})
        found = [providers[-1] if last else draw(st.sampled_from(providers))]
    compactor = found[0] if last else draw(st.sampled_from(found))
    compactor["capabilities"]["compactor"] = True
    compactor["token_budget_override"] = ROOM
    return compactor


def _enlarge_compactors(draw, doc: dict, turns: int) -> None:
    """Several compactors, each rewriting the history in the same firing."""
    providers = doc["setup"]["providers"]
    k = draw(KERNEL["compactors"].strategy(True))
    for _ in range(k - len(providers)):
        providers.insert(draw(st.integers(0, len(providers))), {
            "name": _fresh_name(providers, "compactor"), "capabilities": {"default_token_budget": 0, "stability": "STABILITY_DYNAMIC",
                                                       "compactor": False},
            "script": [{"keep": True} for _ in range(turns)]})
    turn = draw(st.integers(min(1, turns - 1), turns - 1))   # after the first turn, where it can: "ahead" uses that one
    for i in draw(st.lists(st.integers(0, len(providers) - 1), min_size=k, max_size=k, unique=True)):
        provider = providers[i]
        provider["capabilities"]["compactor"] = True
        provider["token_budget_override"] = ROOM
        kept = {"append": draw(_OWN[2])} if draw(st.booleans()) else {"keep": True}
        provider["script"][turn] = {**kept, "rewritten_history": draw(_REWRITTEN)}


def _enlarge_rewrites(draw, doc: dict, turns: int) -> None:
    """The last provider a compactor rewriting many foreign sections in one reply, in every shape."""
    compactor = _a_compactor(draw, doc, turns, last=True)
    n = draw(KERNEL["rewrites"].strategy(True))
    summary = draw(short_texts)
    edits = [{"index": i, "reblock": "split"} if i % 5 == 4 else {"index": i, "text": f"summary {i}: {summary}"}
             for i in range(n - 2)]
    compactor["script"][0] = {"edit": edits, "merge": [n - 2], "split": [n - 1], "append": draw(_OWN[2])}


def _enlarge_ahead(draw, doc: dict, turns: int) -> None:
    """Many sections offered, and accepted, ahead of a compactor at the end of the chain."""
    providers = doc["setup"]["providers"]
    n = draw(KERNEL["ahead"].strategy(True))
    most = KERNEL["sections"].large[1]   # no feeder offers more in one reply than a large reply holds
    while len(providers) < 1 + -(-n // most):
        providers.insert(0, {"name": _fresh_name(providers, "feeder"), "capabilities": {"default_token_budget": 0,
                             "stability": "STABILITY_STATIC", "compactor": False},
                             "script": [{"keep": True} for _ in range(turns)]})
    compactor = _a_compactor(draw, doc, turns, last=True)
    feeders = providers[:-1]
    first_model = next(m for m in doc["setup"]["models"] if m["id"] == doc["turns"][0]["assemble"]["model"])
    pool = draw(st.lists(sections(plain=True), min_size=1, max_size=3))
    for j, feeder in enumerate(feeders):
        share = n // len(feeders) + (j < n % len(feeders))
        offered = _cycled(pool, share, lambda s, i, j=j: _numbered_section(s, j * n + i))
        feeder["capabilities"]["compactor"] = False
        feeder["script"][0] = {"append": offered}
        feeder["token_budget_override"] = _count(offered, first_model)   # exactly its budget: accepted
    compactor["script"][0] = draw(st.sampled_from([{"keep": True}, {"append": pool}]))


def _enlarge_rewritten(draw, doc: dict, turns: int) -> None:
    compactor = _a_compactor(draw, doc, turns)
    action = compactor["script"][draw(st.integers(0, turns - 1))]
    action.pop("error", None), action.pop("hang", None)
    action["rewritten_history"] = draw(sized_histories(KERNEL["rewritten"], True))
    if not any(k in action for k in ("append", "keep", "chain", "delta")):
        action["keep"] = True


def _enlarge_history(draw, doc: dict, turns: int) -> None:
    """A long history means something to a compactor only: there is one."""
    _a_compactor(draw, doc, turns)


# Applied in this order, each where its dimension is switched on.
_ENLARGERS = {"sections": _enlarge_sections, "ahead": _enlarge_ahead, "rewrites": _enlarge_rewrites,
              "compactors": _enlarge_compactors, "rewritten": _enlarge_rewritten, "history": _enlarge_history,
              "blocks": _enlarge_blocks, "text": _enlarge_text, "label": _enlarge_label,
              "error": _enlarge_error, "error-lines": _enlarge_error_lines}


# --- provider requests ------------------------------------------------------------------------

# Prior chains as a kernel sends them: well-formed sections of other providers, often with
# decomposed characters and long lines that a careless provider might normalize or trim, signed by other
# providers and by names that nearly match the provider's own (one that re-finds "its" section loosely).
_decomposed = _joined(["e\u0301", "a\u0308", "o", " ", "ß", "\u00e9", "  ", "\r\n", "\r", " \t\n"], 80, min_size=30)
# Fields a kernel may leave unset or set oddly, which a provider reading sections into a model of its own may
# "fill in": a figure of 0 over real text, an unspecified stability, a truncated flag, no label.
_ODD_FIELDS = st.sampled_from([{}, {}, {}, {"tokens": 0}, {"stability": "STABILITY_UNSPECIFIED"},
                               {"truncated": True}, {"label": ""}, {"tokens": 0, "stability": "STABILITY_UNSPECIFIED"}])
_PRIOR = st.builds(lambda spec, text, odd: {**spec, "content": [{"text": text}, *spec["content"][1:]], **odd},
                   sections(allow_faults=False, controls=False), st.one_of(short_texts, _decomposed),
                   _ODD_FIELDS)
SOURCE_NAME = "CONTEXT.md"  # the fixture a generated scenario writes, which a file reader's label may name


_OWN_LABELS = st.sampled_from([SOURCE_NAME, f"{SOURCE_NAME} (root)", "Conventions", "Notes"])


@st.composite
def _owner(draw, own_name: str) -> str:
    choice = draw(st.integers(0, 4))
    if choice < 3:
        return ["other-provider", "other-provider", "second-provider"][choice]
    return NEAR_MISSES[draw(_NEAR)](own_name)


@st.composite
def prior_chains(draw, large: frozenset = frozenset(), own_name: str = "provider") -> list[dict]:
    n = draw(PROVIDER["prior"].strategy("prior" in large))
    if "prior" in large:
        chain = _cycled([draw(_PRIOR) for _ in range(3)], n, _numbered_section)
        owners = [draw(_owner(own_name)) for _ in range(4)]
        chain = [{**s, "provider": owners[i % len(owners)]} for i, s in enumerate(chain)]
    else:
        chain = [{**draw(_PRIOR), "provider": draw(_owner(own_name))} for _ in range(n)]
    for section in _some(draw, chain) if chain and draw(st.integers(0, 3)) == 0 else []:
        section["label"] = draw(_OWN_LABELS)  # another provider's section under a label the provider may use
    if "blocks" in large:
        for section in _some(draw, chain):
            section["content"] = _cycled(section["content"], draw(PROVIDER["blocks"].strategy(True)), _numbered_block)
    if "text" in large:
        for block in _some(draw, [b for s in chain for b in s["content"]]):
            block["text"] = draw(large_texts(PROVIDER["text"]))
    if "label" in large:
        for section in _some(draw, chain):
            section["label"] = draw(large_labels(PROVIDER["label"]))
    return chain


def suite_count(spec: dict) -> int:
    """What the suite's tokenizer says a short-form section counts."""
    return tokens.suite_tokenizer_count(_content(spec))


_TOOL_EXCHANGES = st.sampled_from([
    [{"role": "assistant", "content": [{"tool_use": {"id": "c9", "name": "read", "arguments": {"path": "a.py"}}}]},
     {"role": "user", "content": [{"tool_result": {"tool_use_id": "c9", "content": [{"text": {"text": "x = 1"}}]}}]}],
    [{"role": "user", "content": [{"text": "see"}, {"image": {"data": "iVBORw0KGgo=", "media_type": "image/png"}}]}],
    [{"role": "assistant", "content": [{"text": ""}, {"tool_use": {"id": "c8", "name": "ls", "arguments": {}}}]},
     {"role": "user", "content": [{"tool_result": {"tool_use_id": "c8", "content": [{"text": {"text": "a b"}}]}}]},
     {"role": "assistant", "text": "Done."}],
])
# Tool output of several KiB, up to 64 KiB, in the recent messages a compactor may keep verbatim: kept, it is the
# block it was sent, whatever its length; shortened inside its tool_result block, a non-text block the compactor
# wrote (R-REWRITTEN-HISTORY-CONTENT).
_BULKY_OUTPUT = st.builds(sized, st.sampled_from(["src/a.c:12: warning: unused x\n", "ok\t3.2s\n", "é 漢字 ", "x"]),
                          st.integers(1024, 64 * 1024))
_BULKY_EXCHANGES = st.builds(lambda output, more: [
    {"role": "assistant", "content": [{"tool_use": {"id": "c7", "name": "run", "arguments": {"cmd": "make"}}}]},
    {"role": "user", "content": [{"tool_result": {"tool_use_id": "c7", "content": [{"text": {"text": output}}]}}]},
    *([{"role": "assistant", "text": "The build prints warnings only."}] if more else [])],
    _BULKY_OUTPUT, st.booleans())
_TOOL_EXCHANGES = st.one_of(_TOOL_EXCHANGES, _BULKY_EXCHANGES)
_PROVIDER_BUDGETS = st.one_of(st.integers(0, 30), st.integers(30, 5000))


@st.composite
def contribute_requests(draw, large: frozenset = frozenset(), own_name: str = "provider") -> dict:
    prior = draw(prior_chains(large, own_name))
    total = sum(suite_count(s) for s in prior)
    # A third of the budgets sit at the prior chain's count or one token either side, where an off-by-one shows.
    edge = st.sampled_from([n for n in (total - 1, total, total + 1) if n >= 0])
    budgets = PROVIDER["budget"].strategy(True) if "budget" in large else _PROVIDER_BUDGETS
    history = draw(sized_histories(PROVIDER["history"], "history" in large))
    if history and draw(st.booleans()):  # the last messages made tool exchanges: what a compactor keeps verbatim
        exchange = draw(_TOOL_EXCHANGES)[-len(history):]
        history = history[:len(history) - len(exchange)] + exchange
    request = {"token_budget": draw(st.one_of(budgets, edge)), "prior_sections": prior,
               "conversation_history": history}
    if draw(st.booleans()):
        ceiling = draw(PROVIDER["ceiling"].strategy("ceiling" in large))
        request["model_target"] = {"id": "generated-model", "context_window": ceiling * 2, "effective_ceiling": ceiling}
        if draw(st.booleans()):  # a tokenizer that counts the blocks a text is split into, too
            request["model_target"] |= {"id": "generated-blocks-model", "tokenizer": "blocks"}
    if draw(st.booleans()):  # 0 is a figure too, not a missing one
        request["history_tokens"] = draw(st.one_of(st.just(0), PROVIDER["history-tokens"].strategy("history-tokens" in large)))
    touched = draw(files_touched(PROVIDER["files"], "files" in large))
    if touched:
        request["files_touched"] = touched
    return request


# Clause marks among the letters: a word cut lands after a comma, semicolon, colon or closing bracket, none of
# which ends a sentence (R-TRUNCATED-UNIT).
paragraph_texts = _joined(_TRICKY[:6] + list("abcdefghij .,") + [", ", "; ", ": ", ") "], 80).filter(
    lambda t: t.strip())
# Text of short ASCII words (a table, code, single letters) counts far more than a bytes/4 estimate says.
_short_words = _joined(["a ", "b ", "x = y", " + ", "| a | b |", "\n", "1 ", "if a: b"], 30).filter(lambda t: t.strip())
# Headings, some empty once their comment is stripped: what a label built from the content has to go on.
_HEADINGS = st.sampled_from(["# Conventions", "# <!-- project name -->", "#", "## ", "# Café — 漢字"])
# Shapes of real files the pieces above never make. Tab-indented and tab-separated lines (a reader that widens
# tabs after counting states a stale figure); a fenced code block with blank lines inside, so a cut at a
# paragraph break can leave it open (one that closes it after counting outgrows its figure).
_tabbed = st.lists(st.sampled_from(["\tgo build ./...", "name\towner\tstate", "\t\treturn x", "a\tb", "x\t"]),
                   min_size=1, max_size=4).map("\n".join)
_fenced = st.builds(lambda fence, info, pieces: f"{fence}{info}\n" + "\n\n".join(pieces) + f"\n{fence}",
                    st.sampled_from(["```", "~~~", "````"]), st.sampled_from(["", "sh", "make"]),
                    st.lists(st.sampled_from(["x = 1", "build:\n\tgo test ./...", "\treturn 0", "echo done", "a b"]),
                             min_size=2, max_size=4))
_paragraphs = st.one_of(paragraph_texts, paragraph_texts, _short_words, _HEADINGS, _tabbed, _fenced)
# One paragraph of 300 to 600 words, longer than every budget below it: a reader that cuts a long paragraph by a
# rule of thumb of its own, past some length, lands over the budget. Its words are short, so they count far more
# than four bytes a token would say. (Within the source's usual size; vectors/provider/budget/one-long-paragraph
# and the large sources go further.)
_LONG_WORDS = ["a", "to", "the", "x=1", "if", "run", "é", "cache", "\t", "tests;"]
_long_paragraphs = st.builds(lambda start, n: " ".join(_LONG_WORDS[(start + i * i) % len(_LONG_WORDS)]
                                                       for i in range(n)).replace(" \t ", "\t"),
                             st.integers(0, len(_LONG_WORDS) - 1), st.integers(300, 600))
# Authoring artifacts a reader may strip (context/data-types.md#stripping-non-semantic-artifacts).
_FRONT_MATTERS = st.sampled_from(["", "", "---\ntitle: Internal\n---\n", "+++\ntitle = 'x'\n+++\n"])
_COMMENTS = st.sampled_from(["<!-- a note -->", "<!--\nspanning\nlines\n-->", "text <!-- inline --> after"])


@st.composite
def fixture_texts(draw) -> str:
    """A source file: paragraphs, headings among them, sometimes front matter and HTML comments."""
    pieces = draw(st.lists(_paragraphs, min_size=1, max_size=6))
    if draw(st.integers(0, 3)) == 0:  # a very long paragraph, first (the only thing a cut can take from) or later
        pieces.insert(draw(st.sampled_from([0, 0, len(pieces)])), draw(_long_paragraphs))
    for _ in range(draw(st.integers(0, 2))):
        pieces.insert(draw(st.integers(0, len(pieces))), draw(_COMMENTS))
    return draw(_FRONT_MATTERS) + "\n\n".join(pieces) + "\n"


@st.composite
def large_fixtures(draw) -> str:
    """A source file of tens or hundreds of KiB: a few drawn paragraphs, numbered, until it is that long."""
    size = draw(PROVIDER["source"].strategy(True))
    pool = draw(st.lists(paragraph_texts, min_size=1, max_size=3))
    pieces, total, i = [], 0, 0
    while total < size:
        piece = f"{pool[i % len(pool)]} ({i})\n\n"
        pieces.append(piece)
        total += len(piece.encode("utf-8"))
        i += 1
    return "".join(pieces)


@st.composite
def provider_scenarios(draw, share: int | None = DEFAULT_SHARE, own_name: str = "provider",
                       switched: frozenset[str] | None = None) -> dict:
    """A provider vector document: a fixture, Configure, then several Contribute calls. own_name: the name the
    provider is declared under, of which some prior sections carry near misses."""
    large = draw(swarm("provider", share)) if switched is None else switched
    calls = draw(PROVIDER["steps"].strategy("steps" in large))
    steps = [{"configure": {}}] + [{"contribute": draw(contribute_requests(large, own_name))} for _ in range(calls)]
    if calls >= 8 and draw(st.integers(0, 2)) == 0:
        # R-STATIC-SECTION-HOLDS over a long session: the first firing's request comes back as the last two, in a
        # turn of its own and then reworded, every firing between touching the same files as the first (so that
        # all of them are one input as far as files touched go): a section that changes after some number of
        # firings is compared with what it was at the first.
        first = steps[1]["contribute"]
        for step in steps[2:calls - 1]:
            step["contribute"].pop("files_touched", None)
            if first.get("files_touched"):
                step["contribute"]["files_touched"] = list(first["files_touched"])
        steps[calls - 1:] = [{"contribute": copy.deepcopy(first)},
                             {"contribute": _reworded(first, draw(st.sampled_from(_FIGURES)))}]
    elif calls >= 3 and draw(st.integers(0, 2)) == 0:
        # R-STATIC-SECTION-HOLDS: the last three firings one request, then the same again in its turn (that of its
        # step), then reworded in the next turn, the kernel's figures sometimes changed too.
        first = steps[calls - 2]["contribute"]
        again = {**copy.deepcopy(first), "turn": calls - 2}
        steps[calls - 1:] = [{"contribute": again}, {"contribute": _reworded(first, draw(st.sampled_from(_FIGURES)))}]
    source = draw(large_fixtures() if "source" in large else fixture_texts())
    return {"id": "provider/property/generated", "title": "A generated provider scenario", "requirements": [],
            "files": {SOURCE_NAME: source, **draw(_nested_fixtures)}, "steps": steps}


_NEXT_LETTER = str.maketrans("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
                             "bcdefghijklmnopqrstuvwxyzaBCDEFGHIJKLMNOPQRSTUVWXYZA")


# How _reworded changes the kernel's figures: not at all, a little, or to near the effective ceiling (a context
# nearly full, where a provider tempted to spare room would show it).
_FIGURES = ("", "nudged", "near-ceiling")


def _reworded(request: dict, figures: str = "") -> dict:
    """The request with other words in its dynamic prior sections, letter for letter (a to b, z to a): every
    length, word count, byte count and figure stays, so a provider's budget presses just as hard. With
    `figures`, the kernel's figures change too, a little or to 96% and 98% of the effective ceiling: a reason
    for a compactor only (R-STATIC-SECTION-HOLDS)."""
    request = copy.deepcopy(request)
    if figures == "nudged":
        request["history_tokens"] = request.get("history_tokens", 0) + 17
        request["assembled_tokens_last_turn"] = request.get("assembled_tokens_last_turn", 0) + 23
    elif figures == "near-ceiling":
        ceiling = (request.get("model_target") or DEFAULT_MODEL)["effective_ceiling"]
        request["history_tokens"] = ceiling - ceiling // 25
        request["assembled_tokens_last_turn"] = ceiling - ceiling // 50
    for section in request["prior_sections"]:
        if section.get("stability") == "STABILITY_DYNAMIC":
            for block in section["content"]:
                if isinstance(block.get("text"), str):
                    block["text"] = block["text"].translate(_NEXT_LETTER)
    return request


# Files named like the source in folders the requests' files_touched name (strategies.files_touched), for a
# reader that loads the convention files near what was touched (context/README.md#firing-cadence--jit-loading).
# Their lines carry a mark the source's never hold, so a whole line of theirs is never taken for a piece of it.
_NESTED = st.lists(st.sampled_from(["[src] Scoped rule.", "[src] a b c d e f g h", "[src] Use the façade."]),
                   min_size=1, max_size=3).map(lambda ps: "\n\n".join(ps) + "\n")
_nested_fixtures = st.one_of(st.just({}), st.builds(lambda text: {f"src/{SOURCE_NAME}": text}, _NESTED),
                             st.builds(lambda a, b: {f"src/{SOURCE_NAME}": a, f"docs/{SOURCE_NAME}": b}, _NESTED, _NESTED))
