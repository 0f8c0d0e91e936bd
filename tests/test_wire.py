"""Wire forms: every proto3 JSON form is read, one canonical form is written,
and the committed generated code matches the protos."""

import importlib.util
import subprocess
import sys

import pytest

from conformance.data import paths
from conformance.wire import forms, tokens


def test_every_proto3_json_form_is_accepted():
    go_style = {"provider": "a", "label": "x", "content": [{"text": {"text": "hi"}}], "tokens": "7", "stability": 2}
    camel = {"modelTarget": {"contextWindow": "200000", "effectiveCeiling": 176000}, "tokenBudget": "5"}
    assert forms.normalize("ContextSection", go_style) == {
        "provider": "a", "label": "x", "content": [{"text": {"text": "hi"}}], "tokens": 7,
        "stability": "STABILITY_DYNAMIC", "truncated": False}
    request = forms.normalize("ContextRequest", camel)
    assert request["model_target"]["context_window"] == 200000 and request["token_budget"] == 5
    assert request["prior_sections"] == [] and request["history_tokens"] == 0


def test_a_wrong_form_is_a_clear_error():
    with pytest.raises(forms.WireFormError, match="ContextSection"):
        forms.normalize("ContextSection", {"tokens": "seven"})
    with pytest.raises(forms.WireFormError):
        forms.normalize("ContextSection", {"content": "not a list"})


def test_fields_the_protos_do_not_declare_are_ignored():
    section = forms.normalize("ContextSection", {"label": "x", "fromANewerPeer": {"a": [1]}, "tokens": "3"})
    assert section["label"] == "x" and section["tokens"] == 3 and "fromANewerPeer" not in section


def test_fallback_formula_is_one_ceiling_over_total_bytes():
    blocks = [{"text": {"text": c}} for c in "abcde"]
    assert tokens.fallback_count(blocks) == 2
    assert tokens.fallback_count([{"text": {"text": "😀"}}, {"image": {"data": ""}}]) == 1
    assert tokens.fallback_count([]) == 0


def test_suite_tokenizer_differs_from_the_fallback_and_from_characters():
    content = [{"text": {"text": "hello world"}}]
    assert tokens.suite_tokenizer_count(content) == 5
    assert tokens.fallback_count(content) == 3 and len("hello world") == 11


@pytest.mark.skipif(importlib.util.find_spec("grpc_tools") is None, reason="grpcio-tools is not installed (pip install -e .[dev])")
def test_generated_code_is_not_stale():
    run = subprocess.run([sys.executable, str(paths.RUNNERS / "protos" / "generate.py"), "--check"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_a_word_is_a_run_of_non_space_for_every_code_point():
    """tokens.words splits as the regular expression \\S+ does, code point by code point (the suite's tokenizers
    are documented as runs of non-space)."""
    import re
    every = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c < 0xE000)
    spaces = "".join(c for c in every if re.fullmatch(r"\s", c))
    assert spaces == "".join(c for c in every if c.isspace()) and len(spaces) > 20
    mixed = "".join(f"{s}word{i}{s}{s}" for i, s in enumerate(spaces)) + "tail"
    assert tokens.words(mixed) == len(re.findall(r"\S+", mixed)) == len(spaces) + 1


@pytest.mark.parametrize("texts", [["a", "b"], ["a", "", "b"], ["one two", " three"], ["x" * 4, "y"], ["é", "e\u0301"],
                                   ["a b c d e", "f g h i j", "k"], [" ", " "], ["word"] * 9])
def test_the_blocks_tokenizer_tells_a_split_text_from_the_same_text_otherwise_blocked(texts):
    """`blocks` counts the whole text plus a separator per block boundary: never the same text in one block
    (a provider that joins the blocks to count them), never the sum of its blocks' separate counts (one that
    counts block by block), whatever the words and code points at the boundaries."""
    content = [{"text": {"text": t}} for t in texts]
    figure = tokens.count_with("blocks", content)[0]
    assert figure != tokens.count_with("blocks", [{"text": {"text": "".join(texts)}}])[0]
    assert figure != sum(tokens.count_with("blocks", [block])[0] for block in content)
    assert figure == tokens.count_with("words", content)[0] + tokens.BLOCK_SEPARATOR_TOKENS * (len(texts) - 1)
