"""Judging a provider transcript: the invariants every step must hold, then
the vector's explicit expectations. Each finding cites one requirement."""

from __future__ import annotations

from conformance.engine.matching import match
from conformance.engine.provider_driver import ProviderTranscript, StepRecord
from conformance.engine.results import Finding
from conformance.manifest import Manifest
from conformance.wire import errors, tokens

COVERS = frozenset({
    "P-RPCS", "P-DESCRIBE", "P-CAP-DEFAULT-BUDGET", "P-CAP-STABILITY", "P-CAP-STATIC-PROPERTIES",
    "P-CAP-CONFIG-SCHEMA", "P-FULL-CHAIN", "P-OWN-SECTIONS-ONLY", "P-NO-REWRITE-UNLESS-COMPACTOR",
    "P-SECTION-LABEL", "P-SECTION-PROVIDER", "P-SECTION-STABILITY", "P-TEXT-ONLY", "P-WITHIN-BUDGET",
    "P-TOKENS-COUNTTOKENS", "P-COUNTTOKENS-TEXT-ONLY", "P-ERROR-CATEGORIZED", "P-CONTEXT-ERROR-FIELDS",
    "P-ERROR-CODE", "P-ERROR-NOT-UNKNOWN", "C-CHAIN-FITS", "C-SUMMARIZE", "C-REWRITTEN-HISTORY-TEXT",
})
REQUIRED_OPS = ("get_capabilities", "configure", "contribute", "describe")
STABILITIES = ("STABILITY_STATIC", "STABILITY_DYNAMIC")


def check_case(transcript: ProviderTranscript, manifest: Manifest) -> list[Finding]:
    checker = Checker(transcript, manifest)
    for record in transcript.records:
        checker.check(record)
    checker.check_summaries()
    return checker.findings


def own_sections(record: StepRecord, compactor: bool = False) -> list[dict]:
    """What the provider itself wrote. When the prior sections still sit in
    their places (edited or not), it is what follows them; otherwise, and for
    a compactor, everything that is not a prior section as sent."""
    prior, sections = record.request["prior_sections"], record.result["sections"]
    slots = [(s["provider"], s["label"]) for s in sections[:len(prior)]]
    if not compactor and slots == [(p["provider"], p["label"]) for p in prior]:
        return sections[len(prior):]
    return [s for s in sections if s not in prior]


def placement(prior: list[dict], sections: list[dict]) -> str:
    """R-PLACEMENT: "prefix" when the prior chain is an untouched prefix, "delta"
    when the reply holds none of it (not even an edited copy), "moved" for any
    other change."""
    if sections[:len(prior)] == prior:
        return "prefix"
    keys = {(s["provider"], s["label"]) for s in sections}
    return "delta" if not any((p["provider"], p["label"]) in keys for p in prior) else "moved"


class Checker:
    def __init__(self, transcript: ProviderTranscript, manifest: Manifest):
        self.transcript, self.manifest = transcript, manifest
        self.capabilities = transcript.capabilities or {}
        self.compactor = bool(self.capabilities.get("compactor"))
        self.findings: list[Finding] = []
        self.rewrites: list[bool] = []  # per rewritten foreign section: was it only cut off?

    def add(self, requirement: str, passed: bool, message: str, where: str) -> None:
        self.findings.append(Finding(requirement, passed, "" if passed else message, where))

    def check(self, record: StepRecord) -> None:
        where = f"step {record.step.index + 1} ({record.step.kind})" if record.step.index >= 0 else "start (get_capabilities)"
        for count in record.counts:
            self.add("P-COUNTTOKENS-TEXT-ONLY", not count.refused.startswith("CountTokens content"),
                     "a CountTokens request held a non-text block", where)
        if record.failure is not None:
            self.check_failure(record, where)
        elif record.result is not None:
            getattr(self, f"check_{record.step.kind}", lambda r, w: None)(record, where)
        self.findings += expectations(record, self, where)

    # -- failures --

    def check_failure(self, record: StepRecord, where: str) -> None:
        failure, kind = record.failure, record.step.kind
        code, context_error = failure["code"], failure.get("context_error")
        if kind in REQUIRED_OPS:
            self.add("P-RPCS", code != "UNIMPLEMENTED", f"{kind} is not implemented", where)
        if code == "UNIMPLEMENTED":
            return  # a missing method, not a failure of the provider's work: P-RPCS judges it
        self.add("P-ERROR-NOT-UNKNOWN", code != "UNKNOWN", "the failure travelled as gRPC UNKNOWN", where)
        readable = isinstance(context_error, dict) and "unreadable" not in context_error
        self.add("P-CONTEXT-ERROR-FIELDS", readable and bool(context_error.get("message")),
                 f"the {code} failure carries no ContextError with a message: {context_error}", where)
        category = errors.category_of(context_error) if readable else None
        self.add("P-ERROR-CATEGORIZED", category is not None,
                 f"the failure has no taxonomy category: {context_error}", where)
        if category is not None:
            self.add("P-ERROR-CODE", code == errors.GRPC_CODE[category],
                     f"{category} travelled as {code}, not {errors.GRPC_CODE[category]}", where)

    # -- answers --

    def check_get_capabilities(self, record: StepRecord, where: str) -> None:
        caps = record.result.get("capabilities", {})
        budget = caps.get("default_token_budget", 0)
        self.add("P-CAP-DEFAULT-BUDGET", budget > 0,
                 f"default_token_budget is {budget}; it must be a positive number (R-DEFAULT-BUDGET-POSITIVE)", where)
        self.add("P-CAP-STABILITY", caps.get("stability") in STABILITIES,
                 f"stability is {caps.get('stability')}", where)
        self.add("P-CAP-CONFIG-SCHEMA", "config_schema" in caps, "the capabilities carry no config_schema", where)
        self.add("P-CAP-STATIC-PROPERTIES", caps == self.capabilities,
                 f"the capabilities changed from {self.capabilities} to {caps}", where)

    def check_describe(self, record: StepRecord, where: str) -> None:
        producer = record.result.get("producer", {})
        problems = [f"{field} is empty" for field in ("name", "version") if not producer.get(field)]
        if producer.get("category") != "CATEGORY_CONTEXT":
            problems.append(f"category is {producer.get('category')}, not CATEGORY_CONTEXT")
        self.add("P-DESCRIBE", not problems, "; ".join(problems), where)

    def check_contribute(self, record: StepRecord, where: str) -> None:
        request, reply = record.request, record.result
        prior, sections, budget = request["prior_sections"], reply["sections"], request["token_budget"]
        own = own_sections(record, self.compactor)
        written = sections if self.compactor else own
        if not self.compactor:
            self.check_placement(prior, sections, where)
            self.add("P-SECTION-PROVIDER", all(s["provider"] == self.manifest.name for s in own),
                     f"its sections claim the names {sorted({s['provider'] for s in own})}, "
                     f"not its declared {self.manifest.name!r}", where)
            total = sum(tokens.suite_tokenizer_count(s["content"]) for s in own)
            self.add("P-WITHIN-BUDGET", total <= budget, f"its sections count {total} against a budget of {budget}", where)
            self.add("P-NO-REWRITE-UNLESS-COMPACTOR", not reply["rewritten_history"],
                     "a provider that is not a compactor returned rewritten_history", where)
        else:
            total = sum(tokens.suite_tokenizer_count(s["content"]) for s in sections)
            self.add("C-CHAIN-FITS", total <= budget, f"its whole chain counts {total} against a budget of {budget}", where)
            self.check_history_rewrite(request, reply, where)
            self.note_rewrites(prior, sections)
        self.add("P-SECTION-LABEL", all(s["label"] for s in written), "a section has no label", where)
        self.add("P-SECTION-STABILITY", all(s["stability"] in STABILITIES for s in written),
                 "a section has no stability", where)
        self.add("P-TEXT-ONLY", all(tokens.is_text_only(s["content"]) for s in written),
                 "a section holds a non-text block", where)
        self.check_tokens(own, record, where)

    def check_placement(self, prior: list[dict], sections: list[dict], where: str) -> None:
        found = placement(prior, sections)
        self.add("P-FULL-CHAIN", found != "delta", f"the reply holds none of the {len(prior)} prior section(s): a delta", where)
        self.add("P-OWN-SECTIONS-ONLY", found != "moved", "the prior sections do not come back as an untouched "
                 "prefix (changed, dropped, reordered or preceded by its own)", where)

    def check_tokens(self, own: list[dict], record: StepRecord, where: str) -> None:
        counted = {tokens.text_of(c.request["content"]) for c in record.counts if c.count is not None}
        counted_blocks = {block["text"]["text"] for c in record.counts if c.count is not None
                          for block in c.request["content"] if "text" in block}
        for section in own:
            figure, truth = section["tokens"], tokens.suite_tokenizer_count(section["content"])
            text = tokens.text_of(section["content"])
            asked = not text or text in counted or all(
                b["text"]["text"] in counted_blocks for b in section["content"] if "text" in b)
            self.add("P-TOKENS-COUNTTOKENS", figure == truth and asked,
                     f"section {section['label']!r} says tokens {figure}; CountTokens gives {truth}"
                     + ("" if asked else ", and the provider never asked CountTokens about this content"), where)

    def check_history_rewrite(self, request: dict, reply: dict, where: str) -> None:
        if reply["rewritten_history"]:
            problems = history_problems(request, reply)
            self.add("C-REWRITTEN-HISTORY-TEXT", not problems, "; ".join(problems), where)

    def note_rewrites(self, prior: list[dict], sections: list[dict]) -> None:
        originals = {(p["provider"], p["label"]): tokens.text_of(p["content"]) for p in prior}
        for section in sections:
            original = originals.get((section["provider"], section["label"]))
            text = tokens.text_of(section["content"])
            if original is not None and text != original:
                self.rewrites.append(_is_cut(text, original))

    def check_summaries(self) -> None:
        """R-SUMMARIZE-EVIDENCE: a compactor whose every rewrite is a cut gets the SHOULD warning."""
        if self.compactor and self.rewrites:
            self.add("C-SUMMARIZE", not all(self.rewrites),
                     f"all {len(self.rewrites)} rewritten section(s) are the original cut short", "case")


def _truncation_problems(own: list[dict], source: str | None) -> list[str]:
    """The flag says whether the section is less than the whole source (whitespace aside)."""
    whole = " ".join((source or "").split())
    return [f"section {s['label']!r} has truncated {s['truncated']} but is "
            f"{'less than' if cut else 'all of'} its source"
            for s in own for cut in [" ".join(tokens.text_of(s["content"]).split()) != whole]
            if s["truncated"] is not cut]


def history_problems(request: dict, reply: dict) -> list[str]:
    """R-REWRITTEN-HISTORY-CONTENT: new blocks are text; others only as copied from the history sent."""
    received = [b for m in request["conversation_history"] for b in m["content"]]
    foreign = [b for m in reply["rewritten_history"] for b in m["content"]
               if not tokens.is_text_only([b]) and b not in received]
    return [f"rewritten_history holds {len(foreign)} non-text block(s) it was never sent"] if foreign else []


def _is_cut(text: str, original: str) -> bool:
    shortened = " ".join(text.split()).rstrip(".… ")
    return " ".join(original.split()).startswith(shortened)


# --- explicit expectations ---------------------------------------------------------

def observation(record: StepRecord, checker: Checker) -> dict:
    seen: dict = {"failed": record.failure is not None, "failure": record.failure, "counts": record.counts}
    if record.failure is not None or record.result is None:
        return seen
    if record.step.kind == "contribute":
        own = own_sections(record, checker.compactor)
        prior, sections = record.request["prior_sections"], record.result["sections"]
        seen |= {"own": own, "own_text": "\n".join(tokens.text_of(s["content"]) for s in own),
                 "placement": placement(prior, sections), "source_text": record.source_text,
                 "own_total": sum(tokens.suite_tokenizer_count(s["content"]) for s in own),
                 "chain_total": sum(tokens.suite_tokenizer_count(s["content"]) for s in sections),
                 "budget": record.request["token_budget"],
                 "rewrites": bool(record.result["rewritten_history"]),
                 "history_problems": history_problems(record.request, record.result)}
    seen["capabilities"] = record.result.get("capabilities")
    seen["producer"] = record.result.get("producer")
    return seen


def expectations(record: StepRecord, checker: Checker, where: str) -> list[Finding]:
    if not record.step.expect:
        return []
    seen = observation(record, checker)
    findings = []
    for requirement, assertions in record.step.expect.items():
        problems = []
        for key, want in assertions.items():
            problems += _evaluate(key, want, seen, checker)
        findings.append(Finding(requirement, not problems, "; ".join(problems), where))
    return findings


def _evaluate(key: str, want, seen: dict, checker: Checker) -> list[str]:
    failure = seen["failure"]
    if key == "fails":
        if failure is None:
            return ["the call succeeded; it must fail with a structured error"]
        category = errors.category_of(failure.get("context_error"))
        if category is None:
            return [f"it failed ({failure['code']}) without a categorized ContextError: not a structured error"]
        if "category" in want and category != want["category"]:
            return [f"it failed as {category or 'uncategorized'} ({failure['code']}), not {want['category']}"]
        if failure["code"] == want.get("not_code"):
            return [f"the {category} failure travelled as {failure['code']}"]
        return []
    if key == "one_of":
        outcomes = [[p for k, w in alternative.items() for p in _evaluate(k, w, seen, checker)]
                    for alternative in want]
        return [] if any(not o for o in outcomes) else [
            "none of the accepted behaviours holds: " + " | ".join("; ".join(o) for o in outcomes)]
    if failure is not None:
        return [f"the call failed: {failure['code']}: {failure.get('message', '')}"]
    if key == "succeeds":
        return []
    if key == "counted_text_only":  # whether it asked at all is P-TOKENS-COUNTTOKENS' business
        return [f"a CountTokens request held non-text: {c.refused}" for c in seen["counts"] if c.refused.startswith("CountTokens content")]
    caps = seen.get("capabilities") or {}
    if key == "capabilities_unchanged":
        return [] if caps == checker.capabilities else ["the capabilities changed"]
    if key == "default_budget_positive":
        return [] if caps.get("default_token_budget", 0) > 0 else [f"default_token_budget {caps.get('default_token_budget', 0)}"]
    if key == "stability_declared":
        return [] if caps.get("stability") in STABILITIES else [f"stability {caps.get('stability')}"]
    if key == "config_schema_declared":
        return [] if "config_schema" in caps else ["no config_schema"]
    if key == "producer":
        return [f"producer: {p}" for p in match(want, seen.get("producer") or {})]
    if "own" not in seen:
        return [f"nothing observed for {key}"]
    own = seen["own"]
    checks = {
        "whole_chain": lambda: [] if seen["placement"] != "delta" else ["the reply is a delta: none of the prior sections"],
        "prior_untouched": lambda: [] if seen["placement"] != "moved" else
                                   ["the prior sections are not an untouched prefix"],
        "truncated_iff_cut": lambda: _truncation_problems(own, seen["source_text"]),
        "own_sections": lambda: [] if want.get("min", 0) <= len(own) <= want.get("max", len(own)) else
                                [f"{len(own)} own section(s), expected {want}"],
        "own_text_contains": lambda: [f"its text lacks {t!r}" for t in want if t not in seen["own_text"]],
        "own_text_excludes": lambda: [f"its text still holds {t!r}" for t in want if t in seen["own_text"]],
        "truncated": lambda: [f"section {s['label']!r} has truncated {s['truncated']}, expected {want}"
                              for s in own if s["truncated"] is not want],
        "within_budget": lambda: [] if seen["own_total"] <= seen["budget"] else
                                 [f"its sections count {seen['own_total']} against {seen['budget']}"],
        "chain_fits": lambda: [] if seen["chain_total"] <= seen["budget"] else
                              [f"the chain counts {seen['chain_total']} against {seen['budget']}"],
        "tokens_counted": lambda: [f"section {s['label']!r} says {s['tokens']} tokens, CountTokens gives "
                                   f"{tokens.suite_tokenizer_count(s['content'])}" for s in own
                                   if s["tokens"] != tokens.suite_tokenizer_count(s["content"])],
        "own_named": lambda: [f"section {s['label']!r} is named {s['provider']!r}" for s in own
                              if s["provider"] != checker.manifest.name],
        "own_labelled": lambda: [f"a section of {s['provider']} has no label" for s in own if not s["label"]],
        "own_stability": lambda: [f"section {s['label']!r} has stability {s['stability']}" for s in own
                                  if s["stability"] not in STABILITIES],
        "own_text_only": lambda: [f"section {s['label']!r} holds a non-text block" for s in own
                                  if not tokens.is_text_only(s["content"])],
        "history_blocks_ok": lambda: ["no rewritten_history"] if not seen["rewrites"] else seen["history_problems"],
        "rewrites_history": lambda: [] if seen["rewrites"] is want else [f"rewritten_history present: {seen['rewrites']}"],
        "summarizes": lambda: [] if not checker.rewrites or not all(checker.rewrites) else
                              [f"all {len(checker.rewrites)} rewritten section(s) so far are the original cut short"],
    }
    return checks[key]()
