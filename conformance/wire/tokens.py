"""Token counting: the spec's one fallback formula and the suite's tokenizers.

They live here and nowhere else. The fallback is the kernel's count when no
model tokenizer is available (kernel-callbacks.md#the-fallback-heuristic, with
ruling R-FALLBACK-TOTAL: one ceiling over the total UTF-8 bytes of every text
block). The suite tokenizers play model providers' real tokenizers; they are
deliberately unlike both the fallback and a character count, so an
implementation that estimates instead of asking is caught.

A kernel's declared models count with KERNEL_TOKENIZERS, additive over
blocks. The kernel the suite plays for a provider has models with the same
tokenizers applied to a content's whole text (TOKENIZERS), not additive over
its blocks (as the fallback is not), one (`blocks`) that also counts where
blocks end, and models with none (the fallback, exact false): a provider that
counts for the wrong model, adds up per-block counts, or asks for its blocks'
text as one block, states figures no CountTokens call for its section gave.
"""

from __future__ import annotations

import functools


def words(text: str) -> int:
    """The runs of non-space in a text. str.split() with no separator splits on exactly the code points the
    regular expression \\s matches (both ask Py_UNICODE_ISSPACE; tests/test_wire.py checks every code point),
    and is three times faster than counting \\S+ matches: the judge counts every text it sees."""
    return len(text.split())


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
    """Words (runs of non-space) plus a fifth of the code points, rounded up, per text block, summed.
    Code points, not what a reader sees as characters: a combining mark counts as one of its own.

    Additive over blocks, so a kernel may count a section in one call or one
    call per block and reach the same total.
    """
    total = 0
    for block in content:
        if "text" not in block:
            continue
        text = block["text"].get("text", "")
        total += words(text) + (len(text) + 4) // 5
    return total


def count(content: list[dict], exact: bool) -> int:
    """The count CountTokens resolves to: the tokenizer when the model has one."""
    return suite_tokenizer_count(content) if exact else fallback_count(content)


def history_content(messages: list[dict]) -> list[dict]:
    """Every content block of a conversation, in order (ruling R-HISTORY-TOKENS)."""
    return [block for message in messages for block in message.get("content", [])]


def _words_and_thirds(content: list[dict]) -> int:
    """Words plus a third of the UTF-8 bytes, per text block, summed: another vendor's tokenizer, additive."""
    return sum(words(t) + (len(t.encode("utf-8")) + 2) // 3 for t in texts_of(content))


def _words_only(content: list[dict]) -> int:
    """Words alone, per text block, summed: a text of white space alone counts 0, which is an answer (a kernel
    that takes a 0 for no answer falls back to the formula, and is seen to)."""
    return sum(words(t) for t in texts_of(content))


# The tokenizers of the kernel's declared models (`tokenizer:` in a kernel vector), by name. Each is additive
# over blocks, so a kernel may count a section in one call or one per block; they differ from model to model,
# so a kernel that counts for another model than the turn's is seen to.
KERNEL_TOKENIZERS = {"words": suite_tokenizer_count, "thirds": _words_and_thirds, "words-only": _words_only}


def _over_whole_text(tokenizer):
    """A kernel tokenizer applied to a content's whole text as one block: no longer additive over blocks."""
    return lambda content: tokenizer([{"text": {"text": text_of(content)}}])


BLOCK_SEPARATOR_TOKENS = 3  # more than a sum of per-block counts can gain over the whole text (2 a boundary)


def _words_with_block_separators(content: list[dict]) -> int:
    """`words` over the whole text, plus BLOCK_SEPARATOR_TOKENS for each text block after the first: a vendor
    tokenizer that marks where one block ends (as chat formats do), so the same text in other blocks, joined into
    one or split into more, counts otherwise. Never a sum of per-block `words` counts: each boundary gains such a
    sum at most a word split in two and a fifth rounded up, 2 tokens."""
    return TOKENIZERS["words"](content) + BLOCK_SEPARATOR_TOKENS * max(0, len(texts_of(content)) - 1)


# The model tokenizers of the kernel the suite plays for a provider (`tokenizer:` in a provider vector's
# model_target), by name: the kernel's, over the whole text, so a sum of per-block counts is not a section's;
# and `blocks`, which counts the blocks a content is split into as well.
TOKENIZERS = {name: _over_whole_text(tokenizer) for name, tokenizer in KERNEL_TOKENIZERS.items()}
TOKENIZERS["blocks"] = _words_with_block_separators
NO_TOKENIZER = "none"  # a model without one: the fallback formula, exact false


def count_with(tokenizer: str, content: list[dict]) -> tuple[int, bool]:
    """(count, exact) as CountTokens resolves it for a model with this tokenizer (`none`: the fallback)."""
    if tokenizer == NO_TOKENIZER:
        return fallback_count(content), False
    return TOKENIZERS[tokenizer](content), True


def counted(tokenizer: str | None, content: list[dict]) -> int:
    """KERNEL_TOKENIZERS[tokenizer](content), or fallback_count(content) for None, of canonical ContentBlocks,
    remembered: the judge counts the same sections over and over (each reading of a reply, each check of a
    turn). Each of them reads nothing but the texts of the text blocks, in order, so those name the count."""
    return _count_of_texts(tokenizer, tuple(texts_of(content)))


@functools.lru_cache(maxsize=16384)
def _count_of_texts(tokenizer: str | None, texts: tuple[str, ...]) -> int:
    content = [{"text": {"text": text}} for text in texts]
    return fallback_count(content) if tokenizer is None else KERNEL_TOKENIZERS[tokenizer](content)
