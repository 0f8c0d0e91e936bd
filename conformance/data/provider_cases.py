"""The provider cases a vector describes: its steps, the ContextRequest each contribute step sends, the models
of the kernel the suite plays and their tokenizers, and the checks on load that the schema cannot make (paths
inside the case directory, requests inside the proto's ranges). engine/provider_driver.py plays them."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from conformance.data import shorthand
from conformance.data.manifest import CASE_STAND_IN, DEFAULT_SOURCE, path_problem
from conformance.data.schemas import InputError
from conformance.wire import forms, tokens

SESSION_ID = "01JDCTXCONFPROVIDERSESSION1"
DEFAULT_MODEL = {"id": "suite-model", "context_window": 200000, "effective_ceiling": 176000}
# The models of the kernel the suite plays, by id, with the tokenizer each counts with (tokens.TOKENIZERS, or
# none: the fallback formula, exact false). A step's model_target adds its own model (its `tokenizer`, words
# unless it says otherwise); a model_ref naming any other id is NOT_FOUND.
SUITE_MODELS = {"suite-model": "words", "suite-thirds-model": "thirds", "suite-blocks-model": "blocks",
                "suite-plain-model": tokens.NO_TOKENIZER}
DEFAULT_TOKENIZER = "words"
DEFAULT_FILES = {DEFAULT_SOURCE: "# Project context\n\nThis repository uses tabs for indentation.\n\n"
                                  "Run the tests with make test before every commit.\n"}


@dataclass(frozen=True)
class Step:
    kind: str
    spec: dict
    expect: dict
    index: int


@dataclass(frozen=True)
class ProviderCase:
    id: str
    files: dict
    source: str
    steps: tuple[Step, ...]
    applies_to: str = "any"
    run: int = 0          # which sub-run of its vector (sweep.py): 0 as written, then one per swept value
    models: dict = field(default_factory=lambda: dict(SUITE_MODELS))  # model id -> tokenizer (SUITE_MODELS)


def check_vector(doc: dict, source: str) -> None:
    """On load, what the schema cannot say, so that a bad vector is exit 2 before anything runs: its
    paths, and its requests (a figure past the proto's integer ranges passes the schema)."""
    _check_paths(doc, source)
    case_models(doc, source)
    for step in from_vector(doc).steps:
        if step.kind == "contribute":
            try:
                contribute_request(step, 0, CASE_STAND_IN)
            except forms.WireFormError as exc:
                raise InputError(source, str(exc), f"steps[{step.index}].contribute") from None


def _check_paths(doc: dict, source: str) -> None:
    """Every path a provider vector names (fixtures, source, delete and write steps) stays inside the case
    directory. files_touched is not among them: it is data sent to the provider, whose scope checks it must make."""
    named = [(f"files.{name}", name) for name in doc.get("files") or {}]
    named += [("source", doc["source"])] if "source" in doc else []
    for i, step in enumerate(doc["steps"]):
        named += [(f"steps[{i}].delete", step["delete"])] if "delete" in step else []
        named += [(f"steps[{i}].write.{name}", name) for name in step.get("write") or {}]
        named += [(f"steps[{i}].spoil.{name}", name) for name in step.get("spoil") or {}]
    for where, name in named:
        problem = path_problem(CASE_STAND_IN, name, follow_symlinks=False)
        if problem is None and os.path.normpath(CASE_STAND_IN / name) == str(CASE_STAND_IN):
            problem = f"{name!r} names the case directory itself, not a file in it"
        if problem:
            raise InputError(source, problem, where)


def from_vector(doc: dict, run: int = 0, last_step: int | None = None) -> ProviderCase:
    """The case a vector document describes; a sweep's sub-run `run` stops after `last_step`."""
    files = doc.get("files") or DEFAULT_FILES
    steps = []
    for i, step in enumerate(doc["steps"][:None if last_step is None else last_step + 1]):
        kind = next(k for k in step if k not in ("note", "expect", "sweep"))
        steps.append(Step(kind, step[kind], step.get("expect", {}), i))
    return ProviderCase(doc["id"], files, doc.get("source", next(iter(files))), tuple(steps),
                        doc.get("applies_to", "any"), run, case_models(doc))


def case_models(doc: dict, source: str = "the vector") -> dict[str, str]:
    """The kernel's models for this case: SUITE_MODELS and every model_target a step names, id -> tokenizer.
    One id given two tokenizers is the vector's error (exit 2)."""
    models, named = dict(SUITE_MODELS), {}
    for i, step in enumerate(doc["steps"]):
        target = (step.get("contribute") or {}).get("model_target") or {}
        model_id = target.get("id", DEFAULT_MODEL["id"])
        known = named.get(model_id, SUITE_MODELS.get(model_id))
        tokenizer = target.get("tokenizer", known or DEFAULT_TOKENIZER)
        if known is not None and tokenizer != known:
            raise InputError(source, f"model {model_id!r} counts with {known!r}, not {tokenizer!r}",
                             f"steps[{i}].contribute.model_target.tokenizer")
        named[model_id] = models[model_id] = tokenizer
    return models


SELF = "${self}"  # a prior section's provider that stands for the name the provider is declared under


def contribute_request(step: Step, default_budget: int, workdir: Path, run: int = 0,
                       models: dict[str, str] | None = None, own_name: str = "") -> dict:
    """The ContextRequest of a contribute step. Each sub-run of a vector is a session of its own; the
    figures the kernel computes (prior sections' tokens, history_tokens) are its counts for the target.
    A prior section whose provider is ${self} carries the provider's own name: a kernel carrying the
    chain across turns hands it its own earlier sections (R-FIRING-STARTS-EMPTY). Each step is a turn of its
    own unless it names the step whose turn it belongs to (`turn`): a second model call of that turn."""
    request = request_without_directory(step, default_budget, run, models, own_name)
    directory = str(workdir)
    # Every case has a directory of its own, so a request normalized with it would never be met again (and
    # json_format is a third of a provider certification). A string field's canonical form is the string, so
    # the rest is normalized with a stand-in and the directory set after. The stand-in is not empty: json_format
    # writes the fields that are set before those at their defaults, and the canonical text keeps that order.
    # A directory that is no UTF-8 takes the long way, whose error is json_format's.
    if not directory:
        return forms.normalize("ContextRequest", request)
    try:
        directory.encode("utf-8")
    except UnicodeEncodeError:
        return forms.normalize("ContextRequest", {**request, "working_directory": directory})
    canonical = forms.normalize("ContextRequest", {**request, "working_directory": "."})
    canonical["working_directory"] = directory
    return canonical


def request_without_directory(step: Step, default_budget: int, run: int = 0, models: dict[str, str] | None = None,
                              own_name: str = "") -> dict:
    """contribute_request's request as written, before it is normalized, its working_directory empty."""
    spec = step.spec
    target = {**DEFAULT_MODEL, **spec.get("model_target", {})}
    tokenizer = target.pop("tokenizer", (models or SUITE_MODELS).get(target["id"], DEFAULT_TOKENIZER))
    count = lambda content: tokens.count_with(tokenizer, content)[0]  # noqa: E731
    history = shorthand.messages(spec.get("conversation_history", []))
    prior = [shorthand.section({**s, "provider": _owner(s, own_name)}, "", "STABILITY_STATIC", count)
             for s in spec.get("prior_sections", [])]
    return {
        "session_id": SESSION_ID + (f"-{run}" if run else ""), "turn_id": f"01JDCTXCONFPROVIDERTURN{spec.get('turn', step.index):04d}",
        "token_budget": spec.get("token_budget", default_budget),
        "model_target": target,
        "files_touched": spec.get("files_touched", []), "working_directory": "",
        "prior_sections": prior, "conversation_history": history,
        "history_tokens": spec.get("history_tokens", count(tokens.history_content(history))),
        "assembled_tokens_last_turn": spec.get("assembled_tokens_last_turn", 0),
    }


def _owner(spec: dict, own_name: str) -> str:
    """Who a prior section in short form belongs to: its provider, ${self} standing for own_name."""
    provider = spec.get("provider", "another-provider")
    return (own_name or "the-provider-itself") if provider == SELF else provider
