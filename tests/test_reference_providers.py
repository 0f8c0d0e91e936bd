"""Unit tests of the reference file reader and compactor, driven in process
with a fake kernel whose CountTokens is the suite tokenizer (so a provider
that estimated from bytes or characters would disagree with it)."""

from __future__ import annotations

import json

import pytest

from conformance.bindings.base import CallFailed
from conformance.bindings.python import PythonBinding
from conformance.reference import compactor, filereader
from conformance.wire import errors, forms
from conformance.wire.tokens import fallback_count, suite_tokenizer_count, text_of

MODEL = "model-a"

PARAS = [
    "Use four spaces for indentation. Tabs are rejected by the linter.",
    "Run the tests with pytest before every commit; the CI runs them too.",
    "Prefer small functions with clear names over comments that explain them.",
    "Never commit secrets. Configuration lives in environment variables.",
]
DOC = "\n\n".join(PARAS) + "\n"


class FakeKernel:
    """Plays the kernel's side of the callback channel and records every call."""

    def __init__(self):
        self.calls: list[dict] = []

    def __call__(self, name, provider, request):
        assert name == "CountTokens" and provider is None
        self.calls.append(json.loads(json.dumps(request)))
        return {"count": suite_tokenizer_count(request["content"]), "exact": True}

    def counted(self) -> list[list[dict]]:
        return [call["content"] for call in self.calls]


def count(text: str) -> int:
    return suite_tokenizer_count([{"text": {"text": text}}])


def section(provider, label, *texts, stability="STABILITY_STATIC"):
    content = [{"text": {"text": t}} for t in texts]
    return {"provider": provider, "label": label, "content": content,
            "tokens": suite_tokenizer_count(content), "stability": stability, "truncated": False}


def request(budget, prior=(), history=(), history_tokens=0, ceiling=1000):
    return {"request": {
        "session_id": "s1", "parent_session_id": "", "turn_id": "01HZZZZZZZZZZZZZZZZZZZZZZZ",
        "token_budget": budget,
        "model_target": {"id": MODEL, "context_window": ceiling + 200, "effective_ceiling": ceiling},
        "files_touched": [], "working_directory": "/w", "prior_sections": list(prior),
        "conversation_history": list(history), "history_tokens": history_tokens,
        "assembled_tokens_last_turn": 0}}


def reader(tmp_path, text=DOC, name="CLAUDE.md"):
    if text is not None:
        (tmp_path / name).write_text(text, encoding="utf-8")
    provider = filereader.create()
    provider.configure({"config": {"root": str(tmp_path), "path": name}}, FakeKernel())
    return provider


def contribute(provider, budget, prior=(), **kw):
    kernel = FakeKernel()
    reply = provider.contribute(request(budget, prior, **kw), kernel)
    forms.normalize("ContextContribution", reply)  # a valid wire form
    return reply, kernel


def assert_failure(exc_info, category, retryable):
    failure = exc_info.value
    assert failure.code == errors.GRPC_CODE[category]
    assert errors.category_of(failure.context_error) == category
    assert failure.context_error["message"] and failure.context_error["retryable"] is retryable


# --- both providers ------------------------------------------------------------------


@pytest.mark.parametrize("module", [filereader, compactor])
def test_identity_and_capabilities_are_wire_forms(module):
    provider = module.create()
    caps = provider.get_capabilities({}, FakeKernel())["capabilities"]
    forms.normalize("ContextCapabilities", caps)
    assert caps["default_token_budget"] > 0 and caps["config_schema"]["attributes"]
    assert provider.hello({}, FakeKernel())["implementation"]["language"] == "python"
    producer = provider.describe({}, FakeKernel())["producer"]
    forms.normalize("ProducerRef", producer)
    assert producer["category"] == "CATEGORY_CONTEXT" and producer["protocol_version"] == 1
    assert provider.stop({}, FakeKernel()) == {}


def test_through_the_python_binding(tmp_path):
    (tmp_path / "CLAUDE.md").write_text(DOC)
    binding = PythonBinding("", "ctxconf-provider/1", timeout=5, factory=filereader.create)
    binding.start()
    binding.request("configure", {"config": {"root": str(tmp_path), "path": "CLAUDE.md"}})
    reply = binding.request("contribute", request(2000), FakeKernel())
    assert text_of(reply["sections"][0]["content"]) == DOC.strip()
    binding.close()


# --- file reader: capabilities and configure ---------------------------------------------


def test_capabilities_are_fixed(tmp_path):
    provider = filereader.create()
    before = provider.get_capabilities({}, FakeKernel())
    (tmp_path / "CLAUDE.md").write_text(DOC)
    provider.configure({"config": {"root": str(tmp_path), "path": "CLAUDE.md"}}, FakeKernel())
    after_configure = provider.get_capabilities({}, FakeKernel())
    (tmp_path / "CLAUDE.md").write_text("changed\n" * 5000)
    after_change = provider.get_capabilities({}, FakeKernel())
    (tmp_path / "CLAUDE.md").unlink()
    after_delete = provider.get_capabilities({}, FakeKernel())
    assert before == after_configure == after_change == after_delete
    caps = before["capabilities"]
    assert (caps["stability"], caps["compactor"], caps["default_token_budget"]) == ("STABILITY_STATIC", False, 2000)
    assert {(a["name"], a["type"], a["required"]) for a in caps["config_schema"]["attributes"]} == {
        ("root", "ATTR_TYPE_STRING", True), ("path", "ATTR_TYPE_STRING", True)}


def test_capabilities_are_copies():
    provider = filereader.create()
    provider.get_capabilities({}, FakeKernel())["capabilities"]["config_schema"]["attributes"].clear()
    assert provider.get_capabilities({}, FakeKernel())["capabilities"]["config_schema"]["attributes"]


@pytest.mark.parametrize("path", ["missing.md", "../outside.md", "OUTSIDE_ABS", "sub", "", None])
def test_configure_rejects_unresolvable_paths(tmp_path, path):
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (tmp_path / "outside.md").write_text(DOC)  # exists, but outside the root
    if path == "OUTSIDE_ABS":
        path = str(tmp_path / "outside.md")
    with pytest.raises(CallFailed) as exc_info:
        filereader.create().configure({"config": {"root": str(root), "path": path}}, FakeKernel())
    assert_failure(exc_info, "invalid_request", retryable=False)


def test_configure_accepts_nested_and_absolute_paths_inside_root(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "AGENTS.md").write_text(DOC)
    for path in ("docs/AGENTS.md", str(tmp_path / "docs" / "AGENTS.md"), "docs/../docs/AGENTS.md"):
        provider = filereader.create()
        assert provider.configure({"config": {"root": str(tmp_path), "path": path}}, FakeKernel()) == {}
        reply, _ = contribute(provider, 2000)
        assert reply["sections"][0]["label"] == path


# --- file reader: contributions ------------------------------------------------------------


def test_whole_file_within_budget(tmp_path):
    reply, kernel = contribute(reader(tmp_path), 2000)
    [own] = reply["sections"]
    assert own == {"provider": "filereader", "label": "CLAUDE.md", "content": [{"text": {"text": DOC.strip()}}],
                   "tokens": count(DOC.strip()), "stability": "STABILITY_STATIC", "truncated": False}
    assert own["tokens"] != fallback_count(own["content"])  # the tokenizer, not an estimate
    assert all(call["model_ref"] == {"provider": "", "id": MODEL} for call in kernel.calls)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_strips_comments_and_front_matter(tmp_path, newline):
    text = ("---\ntitle: Conventions\nowner: team\n---\n<!-- editors: keep this short -->\n"
            "Intro line. <!-- inline note --> Still intro.\n\n<!--\nmulti\n\nline comment\n-->\n"
            "Second paragraph.\n\n---\nA rule above is not front matter.\n").replace("\n", newline)
    (tmp_path / "CLAUDE.md").write_bytes(text.encode())
    reply, _ = contribute(reader(tmp_path, None), 2000)
    body = text_of(reply["sections"][0]["content"])
    for gone in ("title:", "owner:", "editors", "inline note", "multi", "line comment", "<!--", "-->"):
        assert gone not in body
    assert body.startswith("Intro line.") and "Still intro." in body and "Second paragraph." in body
    assert "---\nA rule above is not front matter." in body


def test_empty_after_stripping_contributes_nothing(tmp_path):
    prior = [section("other", "Other", "x")]
    reply, _ = contribute(reader(tmp_path, "---\na: 1\n---\n<!-- only a comment -->\n\n"), 2000, prior)
    assert reply["sections"] == prior


def budgets():
    whole, first_para, first_word = count(DOC.strip()), count(PARAS[0]), count("Use")
    return sorted({0, 1, first_word - 1, first_word, first_word + 1, first_para - 1, first_para,
                   first_para + 1, count("\n\n".join(PARAS[:2])), whole - 1, whole, whole + 1, 10**9})


@pytest.mark.parametrize("budget", budgets())
def test_sections_fit_and_report_the_kernel_count(tmp_path, budget):
    reply, kernel = contribute(reader(tmp_path), budget)
    full = DOC.strip()
    if budget < count("Use"):
        assert reply["sections"] == []
        return
    [own] = reply["sections"]
    body = text_of(own["content"])
    assert own["tokens"] == count(body) <= budget
    assert own["content"] in kernel.counted()  # the final content itself was counted
    assert full.startswith(body) and body == body.strip()
    assert own["truncated"] is (body != full)
    if budget >= count(PARAS[0]):  # R-SELF-REDUCE-CONTRIBUTES: whole paragraphs, as many as fit
        kept = body.split("\n\n")
        assert kept == PARAS[:len(kept)]
        assert len(kept) == len(PARAS) or count("\n\n".join(PARAS[:len(kept) + 1])) > budget
    else:  # a word-boundary cut of the first paragraph, the longest that fits
        words = PARAS[0].split(" ")
        n = len(body.split(" "))
        assert body == " ".join(words[:n]) and count(" ".join(words[:n + 1])) > budget


def test_reduction_asks_few_counts(tmp_path):
    paras = [f"Paragraph {i} says something useful about the project." for i in range(300)]
    reply, kernel = contribute(reader(tmp_path, "\n\n".join(paras)), 200)
    assert reply["sections"][0]["truncated"] and len(kernel.calls) < 20  # a binary search, not one per paragraph


def test_counttokens_requests_are_text_only(tmp_path):
    _, kernel = contribute(reader(tmp_path), count(PARAS[0]) - 3)
    assert kernel.calls and all(set(b) == {"text"} for content in kernel.counted() for b in content)


UNICODE = "Zeichen: äöü ß — 漢字かな 🚀🧪 e\u0301"


@pytest.mark.parametrize("prior", [
    [],
    [section("alpha", "A", "one"), section("beta", "B", "two", stability="STABILITY_DYNAMIC")],
    [section("multi", "Blocks", "first block. ", "second block", "")],
    [section("uni", "Ünïcödé 🚀", UNICODE, UNICODE)],
    [section("filereader", "CLAUDE.md", "an earlier section under our own name")],
], ids=["empty", "multi-provider", "multi-block", "unicode", "same-name"])
def test_prior_chain_is_an_exact_prefix(tmp_path, prior):
    snapshot = json.loads(json.dumps(prior))
    reply, _ = contribute(reader(tmp_path), 2000, prior)
    assert reply["sections"][:len(prior)] == snapshot
    assert len(reply["sections"]) == len(prior) + 1 and reply["sections"][-1]["provider"] == "filereader"
    assert "rewritten_history" not in reply


def test_reads_fresh_and_reports_a_deleted_file(tmp_path):
    provider = reader(tmp_path)
    (tmp_path / "CLAUDE.md").write_text("Edited since configure.\n")
    reply, _ = contribute(provider, 2000)
    assert text_of(reply["sections"][0]["content"]) == "Edited since configure."
    (tmp_path / "CLAUDE.md").unlink()
    with pytest.raises(CallFailed) as exc_info:
        provider.contribute(request(2000), FakeKernel())
    assert_failure(exc_info, "source_unavailable", retryable=True)
    assert exc_info.value.code == "UNAVAILABLE"
    assert exc_info.value.context_error["category"] == "CONTEXT_ERROR_CATEGORY_SOURCE_UNAVAILABLE"


def test_counttokens_failure_is_categorized(tmp_path):
    provider = reader(tmp_path)

    def failing(name, provider_name, req):
        raise CallFailed("UNAVAILABLE", "kernel busy")

    with pytest.raises(CallFailed) as exc_info:
        provider.contribute(request(2000), failing)
    assert exc_info.value.code == "INTERNAL" and errors.category_of(exc_info.value.context_error) == "unknown"


# --- compactor -------------------------------------------------------------------------------

LONG = [
    section("filereader", "CLAUDE.md", DOC.strip() * 3),
    section("agents", "AGENTS.md", "Agents must ask before deleting files. They log every action.\n\n"
            "Long form details follow here, with many words that a summary leaves out entirely " * 4),
    section("git", "git status", "On branch main. Changes not staged for commit:\n\tmodified: a.py\n" * 6,
            stability="STABILITY_DYNAMIC"),
    section("uni", "Ünïcödé", UNICODE * 5, UNICODE),
]
CHAIN_COST = sum(s["tokens"] for s in LONG)


def test_compactor_capabilities_are_fixed():
    provider = compactor.create()
    before = provider.get_capabilities({}, FakeKernel())
    provider.configure({"config": {"history_threshold_percent": 10}}, FakeKernel())
    provider.contribute(request(10, LONG), FakeKernel())
    assert provider.get_capabilities({}, FakeKernel()) == before
    caps = before["capabilities"]
    assert (caps["stability"], caps["compactor"], caps["default_token_budget"]) == ("STABILITY_DYNAMIC", True, 4000)


@pytest.mark.parametrize("value", ["50", -1, 101, True, [50]])
def test_compactor_rejects_a_bad_threshold(value):
    with pytest.raises(CallFailed) as exc_info:
        compactor.create().configure({"config": {"history_threshold_percent": value}}, FakeKernel())
    assert_failure(exc_info, "invalid_request", retryable=False)


def test_compactor_keeps_a_chain_that_fits():
    reply, _ = contribute(compactor.create(), CHAIN_COST, LONG)
    assert reply == {"sections": LONG}


@pytest.mark.parametrize("budget", [0, 1, 5, 12, 30, 60, 100, 150, CHAIN_COST // 3, CHAIN_COST // 2, CHAIN_COST - 1])
def test_compactor_chain_fits_and_summarizes(budget):
    snapshot = json.loads(json.dumps(LONG))
    reply, kernel = contribute(compactor.create(), budget, LONG)
    chain = reply["sections"]
    assert sum(suite_tokenizer_count(s["content"]) for s in chain) <= budget
    originals = {(s["provider"], s["label"]): s for s in LONG}
    for s in chain:
        assert s["content"] and all(set(block) == {"text"} for block in s["content"])
        assert s["label"] and s["tokens"] == suite_tokenizer_count(s["content"])
        original = originals.get((s["provider"], s["label"]))
        if original and s != original:  # a rewrite of someone's section: a summary, never a cut
            assert not text_of(original["content"]).startswith(text_of(s["content"]))
            assert s["stability"] == original["stability"] and s["truncated"] is True
        elif not original:
            assert s["provider"] == "compactor" and s["label"] == "Compacted context"
    assert "rewritten_history" not in reply
    assert LONG == snapshot  # the request it was handed is left alone
    assert reply == contribute(compactor.create(), budget, LONG)[0]  # deterministic


def test_compactor_summaries_keep_sections_when_they_can():
    chain = contribute(compactor.create(), CHAIN_COST // 2, LONG)[0]["sections"]
    assert [(s["provider"], s["label"]) for s in chain] == [(s["provider"], s["label"]) for s in LONG]
    assert text_of(chain[0]["content"]).startswith("Summary of CLAUDE.md: ")


def test_compactor_gives_up_no_more_than_needed():
    chain = contribute(compactor.create(), CHAIN_COST - 1, LONG)[0]["sections"]
    assert chain[1:] == LONG[1:]  # only the largest section had to be summarized
    assert chain[0]["truncated"] and text_of(chain[0]["content"]).startswith("Summary of CLAUDE.md: ")


def history():
    tool = {"tool_use": {"id": "t1", "name": "read_file", "arguments": {"path": "a.py"}}}
    return [
        {"role": "ROLE_USER", "content": [{"text": {"text": "Please fix the bug. It crashes on start."}}], "id": "m1"},
        {"role": "ROLE_ASSISTANT", "content": [{"text": {"text": "Looking at it now. First the logs."}}, tool],
         "id": "m2"},
        {"role": "ROLE_USER", "content": [{"text": {"text": "Also update the docs!"}}], "id": "m3"},
        {"role": "ROLE_ASSISTANT", "content": [tool], "id": "m4"},
        {"role": "ROLE_USER", "content": [{"text": {"text": "Thanks."}}], "id": "m5"},
    ]


@pytest.mark.parametrize("threshold,history_tokens,rewrites", [
    (None, 500, False), (None, 501, True), (None, 0, False),
    (10, 100, False), (10, 101, True), (90, 800, False),
])
def test_history_is_rewritten_only_above_the_threshold(threshold, history_tokens, rewrites):
    provider = compactor.create()
    provider.configure({"config": {} if threshold is None else {"history_threshold_percent": threshold}},
                       FakeKernel())
    reply, _ = contribute(provider, 4000, LONG[:1], history=history(), history_tokens=history_tokens,
                          ceiling=1000)
    assert ("rewritten_history" in reply) is rewrites
    if rewrites:
        summary, *tail = reply["rewritten_history"]
        assert tail == history()[-2:]  # copied as they came, tool blocks included
        assert summary["role"] == "ROLE_USER" and [set(b) for b in summary["content"]] == [{"text"}]
        text = text_of(summary["content"])
        assert "(3 messages)" in text and "Please fix the bug." in text and "It crashes" not in text


def test_short_history_is_not_rewritten():
    reply, _ = contribute(compactor.create(), 4000, history=history()[-2:], history_tokens=10**6)
    assert "rewritten_history" not in reply
