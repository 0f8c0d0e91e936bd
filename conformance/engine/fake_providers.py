"""The context providers (and model tokenizers) the suite plays while a kernel
is certified. Each answers the kernel's callbacks from its script."""

from __future__ import annotations

import copy
import time

from conformance.bindings.base import CallFailed, Crash, Hang
from conformance.data import shorthand
from conformance.engine.scenario import FakeProvider, KernelScenario, Turn
from conformance.wire import forms, tokens
from conformance.wire.forms import json_copy


class FakeProviders:
    def __init__(self, scenario: KernelScenario):
        self.scenario = scenario
        self.turn: Turn | None = None
        self._sections: dict[tuple[int, int, int], tuple] = {}
        self._replies: dict[tuple[int, int, int, bytes], tuple] = {}
        self._by_name: dict[str, FakeProvider] = {}
        for fake in scenario.providers:  # the first of a name answers for it, as the kernel's config lists them
            self._by_name.setdefault(fake.name, fake)

    def answer(self, call: str, provider: str | None, request: dict) -> dict:
        """The result for one callback, or CallFailed / Hang."""
        if call == "CountTokens":
            return self._count_tokens(request)
        fake = self._by_name.get(provider)
        if fake is None:
            raise CallFailed("NOT_FOUND", f"no provider named {provider!r} was declared")
        if call == "GetCapabilities":
            return {"capabilities": copy.deepcopy(fake.capabilities)}
        if call == "Configure":
            return {}
        if call == "Describe":
            return {"producer": {"name": fake.name, "version": "0.0.0", "source": "ctxconf/fake",
                                 "category": "CATEGORY_CONTEXT", "protocol_version": 1}}
        if call == "Contribute":
            return self._contribute(fake, request)
        raise CallFailed("UNIMPLEMENTED", f"the suite does not serve {call}")

    def _section(self, spec: dict, fake: FakeProvider, model) -> dict:
        """A fresh copy of the section `spec` makes. The same ones are returned turn after turn, and making
        one (json_format, a token count) costs several times the copy: each is made once per scenario. The
        spec, the provider and the model are the scenario's own, unchanged while it runs, so their identities
        name them; the entry holds them too, so that an id reused by an object made later never finds it."""
        key = (id(spec), id(fake), id(model))
        entry = self._sections.get(key)
        if entry is None or entry[0] is not spec or entry[1] is not fake or entry[2] is not model:
            entry = self._sections[key] = (spec, fake, model,
                                           forms.keep(shorthand.section(spec, fake.name, fake.stability, model.count)))
        return forms.fresh(entry[3])

    def _count_tokens(self, request: dict) -> dict:
        """The model providers' own CountTokens, found as a kernel's model registry finds them: by the
        provider's name and the model's id, both of which model_ref must carry."""
        ref = request.get("model_ref") or {}
        provider, model_id = ref.get("provider", ""), ref.get("id", "")
        if not provider or not model_id:
            raise CallFailed("INVALID_ARGUMENT", f"model_ref {ref} must name a model provider and its model: "
                                                 "no registry can route it to a tokenizer")
        model = next((m for m in self.scenario.models if (m.provider, m.id) == (provider, model_id)), None)
        if model is None:
            raise CallFailed("NOT_FOUND", f"no model provider {provider!r} serves a model {model_id!r}")
        if not model.count_tokens:
            raise CallFailed("UNIMPLEMENTED", f"{provider} has no tokenizer for {model_id}; use the fallback formula")
        if model.tokenizer_down:
            raise CallFailed("UNAVAILABLE", f"{provider}'s tokenizer for {model_id} cannot be reached")
        return {"count": model.tokenizer_count(request.get("content", [])), "exact": True}

    def _contribute(self, fake: FakeProvider, request: dict) -> dict:
        action = fake.action(self.turn.index if self.turn else 0)
        if action.get("delay_ms"):  # sleep(0) is not free: it yields the CPU, ~100 us on a busy machine
            time.sleep(action["delay_ms"] / 1000)
        if action.get("hang"):
            raise Hang()
        if action.get("crash"):
            raise Crash()
        if action.get("unreadable"):
            return {"sections": [{"provider": fake.name, "label": 7, "content": "not a list of blocks"}]}
        if "error" in action:
            error = action["error"]
            context_error = error.get("context_error")
            raise CallFailed(error["code"], error.get("message", ""),
                             forms.normalize("ContextError", context_error) if context_error else None,
                             error.get("details"))
        model = self.scenario.model(self.turn.input["model"]) if self.turn else self.scenario.models[0]
        # A kernel that carries the chain across turns hands a provider its own earlier sections
        # (R-FIRING-STARTS-EMPTY): the script says what it contributes this firing, so it replaces them.
        prior = [] if "chain" in action or "delta" in action else [
            s for s in request.get("prior_sections", []) if fake.compactor or s.get("provider") != fake.name]
        # The reply is a function of the script's entry, the provider, the model and that prior chain alone, and
        # the same one recurs firing after firing: it is made once and copied after (as _section's sections are).
        # The cache lives as long as the case, whose recorder keeps every request anyway.
        key = (id(action), id(fake), id(model), forms.keep(prior))
        entry = self._replies.get(key)
        if entry is None or entry[0] is not action or entry[1] is not fake or entry[2] is not model:
            entry = self._replies[key] = (action, fake, model, forms.keep(self._reply(fake, action, model, prior)))
        return forms.fresh(entry[3])

    def _reply(self, fake: FakeProvider, action: dict, model, prior: list[dict]) -> dict:
        def make(specs: list[dict]) -> list[dict]:
            return [self._section(s, fake, model) for s in specs]

        if "chain" in action:
            sections = make(action["chain"])
        elif "delta" in action:
            sections = make(action["delta"])
        else:
            sections = _rework(prior, action, model.count)
            if "insert" in action:
                at = action["insert"]["index"]
                sections[at:at] = make(action["insert"]["sections"])
            sections = make(action.get("prepend", [])) + sections + make(action.get("append", []))
        reply: dict = {"sections": sections}
        if "rewritten_history" in action:
            reply["rewritten_history"] = shorthand.messages(action["rewritten_history"])
        return reply


_REWORKS = ("edit", "reorder", "drop", "merge", "split")


def _rework(prior: list[dict], action: dict, count) -> list[dict]:
    """Apply edit, then drop, reorder, merge and split (all by index into the prior chain)."""
    chain = json_copy(prior)  # canonical JSON: the recorder normalized the request
    if not any(rework in action for rework in _REWORKS):  # the common case: the chain as it came
        return chain
    for edit in action.get("edit", []):
        if edit["index"] >= len(chain):
            continue
        target = chain[edit["index"]]
        for key in ("label", "provider", "truncated", "stability", "tokens"):
            if key in edit:
                target[key] = edit[key]
        if "text" in edit:
            target["content"] = shorthand.blocks([{"text": edit["text"]}])
            target["tokens"] = edit.get("tokens", count(target["content"]))
        if "reblock" in edit:  # the same text, so the same figure: only the blocks differ
            target["content"] = _reblocked(target["content"], edit["reblock"])
        if edit.get("tail"):   # one character at the very end differs: the figure, the blocks, the rest stay
            target["content"] = _retailed(target["content"])
    order = action.get("reorder", range(len(chain)))
    dropped = set(action.get("drop", ()))
    kept = [chain[i] for i in order if i < len(chain) and i not in dropped]
    merged = {id(chain[i]) for i in action.get("merge", ()) if i < len(chain)}
    split = {id(chain[i]) for i in action.get("split", ()) if i < len(chain)}
    reply, at = [], 0
    while at < len(kept):
        section = kept[at]
        if id(section) in merged and at + 1 < len(kept):
            reply.append(_merged(section, kept[at + 1], count))
            at += 2
            continue
        reply += _split(section, count) if id(section) in split else [section]
        at += 1
    return reply


def _text(text: str) -> dict:
    return shorthand.block({"text": text})


def _halves(text: str) -> tuple[str, str]:
    middle = len(text) // 2
    return text[:middle], text[middle:]


def _reblocked(content: list[dict], how: str) -> list[dict]:
    """split: the first text block of two or more characters becomes two (an empty text block is added where
    there is none); merge: the first two adjacent text blocks become one (nothing changes where there are none)."""
    texts = [i for i, block in enumerate(content) if "text" in block]
    if how == "split":
        i = next((i for i in texts if len(tokens.texts_of([content[i]])[0]) > 1), None)
        if i is None:
            return content + [_text("")]
        return content[:i] + [_text(part) for part in _halves(tokens.texts_of([content[i]])[0])] + content[i + 1:]
    i = next((i for i in texts if i + 1 in texts), None)
    if i is None:
        return content
    return content[:i] + [_text(tokens.text_of(content[i:i + 2]))] + content[i + 2:]


def _retailed(content: list[dict]) -> list[dict]:
    """The last character of the last non-empty text block changed (to x, or to y where it was x); with no such
    block, an x added to the last text block (an empty one added where there is none)."""
    texts = [i for i, block in enumerate(content) if "text" in block]
    filled = [i for i in texts if tokens.texts_of([content[i]])[0]]
    if not filled:
        at = texts[-1] if texts else None
        return content + [_text("x")] if at is None else content[:at] + [_text("x")] + content[at + 1:]
    at = filled[-1]
    text = tokens.texts_of([content[at]])[0]
    return content[:at] + [_text(text[:-1] + ("y" if text[-1] == "x" else "x"))] + content[at + 1:]


def _merged(first: dict, second: dict, count) -> dict:
    content = first["content"] + second["content"]
    return {**first, "content": content, "tokens": count(content)}


def _split(section: dict, count) -> list[dict]:
    """Two sections with the fields of one: its blocks divided, or its one block's text."""
    content = section["content"]
    if len(content) > 1:
        parts = [content[:len(content) // 2], content[len(content) // 2:]]
    else:
        parts = [[_text(half)] for half in _halves(tokens.text_of(content))]
    return [{**section, "content": part, "tokens": count(part)} for part in parts]
