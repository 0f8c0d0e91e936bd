"""Token counting: the spec's one fallback formula and the suite's tokenizers.

They live here and nowhere else. The fallback is the kernel's count when no
model tokenizer is available (kernel-callbacks.md#the-fallback-heuristic, with
ruling R-FALLBACK-TOTAL: one ceiling over the total UTF-8 bytes of every text
block). The suite tokenizers play model providers' real tokenizers; they are
deliberately unlike both the fallback and a character count, so an
implementation that estimates instead of asking is caught.

The kernel's models count with `suite_tokenizer_count`, additive over blocks.
The kernel the suite plays for a provider has models with the TOKENIZERS
below, each a function of a content's whole text and not additive over its
blocks (as the fallback is not), and models with none (the fallback, exact
false): a provider that counts for the wrong model, or adds up per-block
counts, states figures no CountTokens call for its section gave.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\S+")


def texts_of(content: list[dict]) -> list[str]:
    """The text of each text block of a list of canonical ContentBlocks, in order."""
    return [block["text"].get("text", "") for block in content if "text" in block]


def text_of(content: list[dict]) -> str:
    """The text of a list of canonical ContentBlocks, text blocks only, joined with nothing."""
    return "".join(texts_of(content))


def is_text_only(content: list[dict]) -> bool:
    return all(set(block) == {"text"} for block in content)


def fallback_count(content: list[dict]) -> int:
    total_bytes = len(text_of(content).encode("utf-8"))
    return (total_bytes + 3) // 4


def suite_tokenizer_count(content: list[dict]) -> int:
    """Words plus a fifth of the code points, per text block, summed.

    Additive over blocks, so a kernel may count a section in one call or one
    call per block and reach the same total.
    """
    total = 0
    for block in content:
        if "text" not in block:
            continue
        text = block["text"].get("text", "")
        total += len(_WORD.findall(text)) + (len(text) + 4) // 5
    return total


def _words_over_whole_text(content: list[dict]) -> int:
    """Words plus a fifth of the code points, over the whole text: on one block, suite_tokenizer_count."""
    text = text_of(content)
    return len(_WORD.findall(text)) + (len(text) + 4) // 5


def _words_and_bytes(content: list[dict]) -> int:
    """Words plus a third of the UTF-8 bytes, over the whole text: another vendor's tokenizer."""
    text = text_of(content)
    return len(_WORD.findall(text)) + (len(text.encode("utf-8")) + 2) // 3


# The model tokenizers of the kernel the suite plays for a provider, by name; `none` is a model without one.
TOKENIZERS = {"words": _words_over_whole_text, "bytes": _words_and_bytes}
NO_TOKENIZER = "none"


def count_with(tokenizer: str, content: list[dict]) -> tuple[int, bool]:
    """(count, exact) as CountTokens resolves it for a model with this tokenizer (`none`: the fallback)."""
    if tokenizer == NO_TOKENIZER:
        return fallback_count(content), False
    return TOKENIZERS[tokenizer](content), True


def count(content: list[dict], exact: bool) -> int:
    """The count CountTokens resolves to: the tokenizer when the model has one."""
    return suite_tokenizer_count(content) if exact else fallback_count(content)


def history_content(messages: list[dict]) -> list[dict]:
    """Every content block of a conversation, in order (ruling R-HISTORY-TOKENS)."""
    return [block for message in messages for block in message.get("content", [])]
