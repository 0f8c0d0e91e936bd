"""Expanding the short forms vectors are written in into canonical wire JSON."""

from __future__ import annotations

from typing import Callable

from conformance.wire import forms

ROLES = {"user": "ROLE_USER", "assistant": "ROLE_ASSISTANT"}


def block(spec: dict) -> dict:
    """`{text: "..."}` is a text block; `{unset: true}` a block with no kind set (R-NON-TEXT-WHOLE-SECTION)."""
    if isinstance(spec.get("text"), str):
        return forms.normalize("ContentBlock", {"text": {"text": spec["text"]}})
    if spec.get("unset"):
        return {}
    return forms.normalize("ContentBlock", spec)


def blocks(specs: list[dict]) -> list[dict]:
    return [block(b) for b in specs]


def content_of(spec: dict) -> list[dict]:
    """`text: "..."` is one text block; `content: [...]` is a list of blocks."""
    if "content" in spec:
        return blocks(spec["content"])
    return blocks([{"text": spec["text"]}]) if "text" in spec else []


def message(spec: dict) -> dict:
    data = {"role": ROLES.get(spec["role"], spec["role"]), "content": content_of(spec)}
    for key in ("id", "produced_by_model_id", "produced_by_provider"):
        if key in spec:
            data[key] = spec[key]
    return forms.normalize("Message", data)


def messages(specs: list[dict]) -> list[dict]:
    return [message(m) for m in specs]


def section(spec: dict, owner: str, stability: str, count: Callable[[list[dict]], int]) -> dict:
    """A section a fake provider returns; tokens default to the kernel's count."""
    content = content_of(spec)
    return forms.normalize("ContextSection", {
        "provider": spec.get("provider", owner),
        "label": spec["label"],
        "content": content,
        "tokens": spec["tokens"] if "tokens" in spec else count(content),
        "stability": spec.get("stability", stability),
        "truncated": spec.get("truncated", False),
    })
