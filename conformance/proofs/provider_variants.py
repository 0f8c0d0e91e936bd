"""Conforming variants of the reference providers: each takes one freedom the
spec or a ruling allows, and the suite must certify every one CONFORMANT.

They are the other half of provider_mutants, declared the same way: the
freedom taken, the ruling or spec anchor that grants it, the manifest the
variant is certified with, and whether the self-test also certifies it over
gRPC (where the variant's freedom shows on the wire).
"""

from __future__ import annotations

import glob
import re
from pathlib import Path

from conformance.bindings.base import CallFailed
from conformance.proofs import wire_forms
from conformance.proofs.error_forms import ReshapesFailures, error_info
from conformance.reference.compactor import Compactor, lead_sentence
from conformance.reference.filereader import FileReader
from conformance.reference.provider_base import (Counter, CountUnavailable, ReferenceProvider, context_failure,
                                                 fit_pieces, longest_fitting, paragraphs, text_block)
from conformance.wire.tokens import is_text_only, text_of

VARIANTS: dict[str, type[ReferenceProvider]] = {}


def variant(freedom: str, grants: str, grpc: bool = False):
    def register(cls):
        cls.freedom, cls.grants, cls.grpc = freedom, grants, grpc
        cls.manifest = "compactor" if issubclass(cls, Compactor) else "filereader"
        VARIANTS[cls.__name__] = cls
        return cls
    return register


# --- requests it cannot serve (R-UNSERVABLE-REQUEST) ------------------------------------------

@variant("answers a token_budget of 0 with an invalid_request error", "R-UNSERVABLE-REQUEST", grpc=True)
class RefusesZeroBudget(FileReader):
    def contribute(self, request, call):
        if int(request["request"].get("token_budget", 0)) == 0:
            raise context_failure("invalid_request", "a token_budget of 0 leaves no room for any content")
        return super().contribute(request, call)


@variant("fails with budget_exceeded when not one word of its source fits", "R-UNSERVABLE-REQUEST")
class BudgetExceededWhenNothingFits(FileReader):
    def own_sections(self, text, budget, count):
        sections = super().own_sections(text, budget, count)
        if not sections and text.strip():
            raise context_failure("budget_exceeded", f"not one word of {self.label} fits {budget} tokens")
        return sections


@variant("contributes no section when the kernel's CountTokens fails", "R-COUNTTOKENS-UNAVAILABLE")
class NoSectionWithoutCounts(FileReader):
    def contribute(self, request, call):
        try:
            return super().contribute(request, call)
        except CountUnavailable:
            return {"sections": request["request"].get("prior_sections", [])}


@variant("keeps the kernel's CountTokens answers, and states a kept figure, also when CountTokens fails",
         "R-KEPT-COUNTS")
class KeepsCounts(FileReader):
    def __init__(self) -> None:
        super().__init__()
        self.kept: dict[str, dict] = {}  # model id -> texts -> the count CountTokens gave

    def counter(self, call, request):
        counter = super().counter(call, request)
        counter.seen = self.kept.setdefault(counter.model_id, {})
        return counter


# --- how its content is cut into sections and counted ---------------------------------------

@variant("one section per paragraph, each whole one flagged not truncated", "R-TRUNCATED-UNIT")
class SectionPerParagraph(FileReader):
    def own_sections(self, text, budget, count):
        pieces = paragraphs(text)
        kept = longest_fitting(len(pieces), lambda k: sum(count(text_block(p)) for p in pieces[:k]) <= budget)
        if not kept:
            return super().own_sections(text, budget, count)
        return [self.section(f"{self.label} ({i + 1}/{len(pieces)})", piece, count(text_block(piece)), False)
                for i, piece in enumerate(pieces[:kept])]


@variant("one section per sentence, in order, the rest dropped whole to fit, each flagged not truncated",
         "R-TRUNCATED-UNIT")
class SectionPerSentence(FileReader):
    BREAK = re.compile(r"(?<=[.!?])\s+")  # after a sentence's closing mark: where it splits a line

    def own_sections(self, text, budget, count):
        pieces = [piece for line in text.splitlines() for piece in self.BREAK.split(line.strip()) if piece]
        kept, used = [], 0
        for piece in pieces:  # counted one at a time, so a large file costs no more than what fits
            used += count(text_block(piece))
            if used > budget:
                break
            kept.append(piece)
        if not kept:
            return super().own_sections(text, budget, count)
        return [self.section(f"{self.label} ({i + 1}/{len(pieces)})", piece, count(text_block(piece)), False)
                for i, piece in enumerate(kept)]


@variant("puts a line naming its file before its text and a closing line after it, and flags what is between "
         "as the reference does", "R-TRUNCATED-UNIT")
class FramesItsSection(FileReader):
    def framed(self, text: str) -> str:
        return f"File: {self.label}\n{text}\nEnd of {self.label}."

    def own_section(self, text, budget, count):
        fitted = fit_pieces(paragraphs(text), "\n\n", lambda t: count(text_block(self.framed(t))) <= budget)
        if fitted is None:  # not even a word fits with the frame: the reference's answer, unframed
            return super().own_section(text, budget, count)
        final, cut = self.framed(fitted[0]), fitted[1]
        return self.section(self.label, final, count(text_block(final)), self.flag(cut))

    def flag(self, cut: bool) -> bool:
        return cut


@variant("one section whose blocks are its paragraphs, counted in one CountTokens call",
         "context/data-types.md#contextsection")
class BlockPerParagraph(FileReader):
    def blocks_count(self, blocks, count):
        return count(blocks)

    def own_sections(self, text, budget, count):
        pieces = paragraphs(text)
        kept = longest_fitting(len(pieces), lambda k: self.blocks_count(
            [b for p in pieces[:k] for b in text_block(p)], count) <= budget)
        if not kept:
            return super().own_sections(text, budget, count)
        blocks = [b for p in pieces[:kept] for b in text_block(p)]
        return [{**self.section(self.label, "", 0, kept < len(pieces)), "content": blocks,
                 "tokens": self.blocks_count(blocks, count)}]


@variant("asks CountTokens without a model_ref and states the fallback it is given", "R-COUNT-FOR-THE-TARGET")
class OmitsModelRef(FileReader):
    def counter(self, call, request):
        return Counter(call, "")


class _NamingTheModelProvider(Counter):
    def model_ref(self, model_id):
        return {"provider": "anthropic", "id": model_id}


@variant("fills model_ref.provider with a model provider's name it knows from elsewhere", "R-COUNT-FOR-THE-TARGET")
class NamesModelProvider(FileReader):
    def counter(self, call, request):
        return _NamingTheModelProvider(call, request["model_target"]["id"])


# --- how it reduces a source over its budget (context/data-types.md#budget-mechanics) -----------

class _SelectsParagraphs(FileReader):
    """Priority selection: whole paragraphs taken in the order it values them until the next does not
    fit, returned in the source's order; the reference's cut when not even the first fits."""

    FLAGGED = True  # what truncated says on a selection of whole paragraphs

    def ranked(self, pieces: list[str]) -> list[int]:
        raise NotImplementedError

    def own_section(self, text, budget, count):
        pieces = paragraphs(text)
        if not pieces or count(text_block("\n\n".join(pieces))) <= budget:
            return super().own_section(text, budget, count)
        kept: list[int] = []
        for i in self.ranked(pieces):
            if count(text_block("\n\n".join(pieces[j] for j in sorted([*kept, i])))) > budget:
                break
            kept.append(i)
        if not kept:
            return super().own_section(text, budget, count)
        final = "\n\n".join(pieces[j] for j in sorted(kept))
        return self.section(self.label, final, count(text_block(final)), self.FLAGGED)


@variant("keeps the last paragraphs that fit (the newest rules), not the first, in one section flagged truncated",
         "context/data-types.md#budget-mechanics")
class KeepsLastParagraphs(_SelectsParagraphs):
    def ranked(self, pieces):
        return list(reversed(range(len(pieces))))


@variant("keeps the last paragraphs that fit and, where not even the last fits, the last words of it that do, "
         "flagged truncated", "R-SELF-REDUCE-CONTRIBUTES")
class KeepsLastWords(FileReader):
    def own_section(self, text, budget, count):
        pieces = paragraphs(text)
        fits = lambda t: count(text_block(t)) <= budget  # noqa: E731
        if not pieces or fits("\n\n".join(pieces)):
            return super().own_section(text, budget, count)
        kept = longest_fitting(len(pieces) - 1, lambda k: fits("\n\n".join(pieces[-k:])))
        if kept:
            final = "\n\n".join(pieces[-kept:])
        else:  # the longest run of whole words at the end of the last paragraph that fits
            starts = [m.start() for m in re.finditer(r"\S+", pieces[-1])]
            words = longest_fitting(len(starts) - 1, lambda w: fits(pieces[-1][starts[-w]:]))
            if not words:
                return None
            final = pieces[-1][starts[-words]:]
        return self.section(self.label, final, count(text_block(final)), True)


@variant("keeps the longest paragraphs that fit, wherever they are, and flags that selection of whole paragraphs "
         "not truncated", "R-TRUNCATED-UNIT")
class KeepsLongestParagraphs(_SelectsParagraphs):
    FLAGGED = False

    def ranked(self, pieces):
        return sorted(range(len(pieces)), key=lambda i: -len(pieces[i]))


@variant("summarizes a source over its budget in words of its own (a list of its topics), flagged not truncated; "
         "cuts as the reference does only when no summary fits", "R-TRUNCATED-UNIT")
class SummarizingReader(FileReader):
    def own_section(self, text, budget, count):
        pieces = paragraphs(text)
        if not pieces or count(text_block("\n\n".join(pieces))) <= budget:
            return super().own_section(text, budget, count)
        topics = [self.topic(p) for p in pieces]
        kept = longest_fitting(len(topics), lambda k: count(text_block(self.summary(topics[:k]))) <= budget)
        if not kept:
            return super().own_section(text, budget, count)
        summary = self.summary(topics[:kept])
        return self.section(self.label, summary, count(text_block(summary)), self.FLAGGED)

    FLAGGED = False  # what truncated says on its summary

    @staticmethod
    def topic(paragraph: str) -> str:
        """The paragraph's longest word, in lower case and without punctuation."""
        words = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z-]*", paragraph)] or ["notes"]
        return max(words, key=len)

    @staticmethod
    def summary(topics: list[str]) -> str:
        return f"In short, about {', '.join(topics)}."


@variant("summarizes a source over its budget in words of its own, flagged truncated: cut down to fit",
         "R-TRUNCATED-UNIT")
class SummarizingReaderFlagsIt(SummarizingReader):
    FLAGGED = True


@variant("summarizes a source over its budget in words it finds anew on every firing, as a language model would "
         "(here it numbers its takes), and keeps the summary static", "R-STATIC-SECTION-HOLDS")
class RewordsItsSummary(SummarizingReader):
    takes = 0

    def contribute(self, request, call):
        self.takes += 1
        return super().contribute(request, call)

    def summary(self, topics):
        return f"In short, take {self.takes}: about {', '.join(topics)}."


# --- when it reads its source (R-EAGER-SOURCE) -----------------------------------------------------

@variant("reads its file once, at Configure, and returns the same sections on every firing of the same budget "
         "and model, without counting them again, whether the file has since gone or changed", "R-EAGER-SOURCE")
class EagerReader(FileReader):
    def configure(self, request, call):
        reply = super().configure(request, call)
        self.load(super().read())
        return reply

    def load(self, text: str) -> None:
        self.snapshot, self.served = text, {}  # (budget, model id) -> the sections it returns for them

    def read(self):
        return self.snapshot

    def own_sections(self, text, budget, count):
        key = (budget, count.model_id)
        if key not in self.served:
            self.served[key] = super().own_sections(text, budget, count)
        return list(self.served[key])


@variant("reads its file at Configure, and again only on a firing whose files_touched names it", "R-EAGER-SOURCE")
class RereadsWhenTouched(EagerReader):
    def contribute(self, request, call):
        req = request["request"]
        touched = {(Path(req.get("working_directory", "")) / name).resolve() for name in req.get("files_touched", [])}
        if self.path in touched:
            self.load(FileReader.read(self))
        return super().contribute(request, call)


# --- configuration and errors ----------------------------------------------------------------------

@variant("decodes its file strictly as UTF-8, and reports a file that is not as source_unavailable", "R-SOURCE-NOT-TEXT")
class NotTextIsUnavailable(FileReader):
    def read(self):
        text = super().read()
        try:
            self.path.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError:
            raise context_failure("source_unavailable", f"{self.label} is not UTF-8 text", retryable=True) from None
        except OSError:
            pass
        return text


@variant("rejects a missing source at Configure as source_unavailable", "context/protocol.md#configure")
class ConfigureSaysSourceUnavailable(FileReader):
    def resolve(self, root, path):
        try:
            return super().resolve(root, path)
        except CallFailed as failure:
            if "is not a file" not in failure.message:
                raise
            raise context_failure("source_unavailable", failure.message, retryable=True) from None


@variant("error statuses carry a google.rpc.ErrorInfo and a DebugInfo beside the ContextError",
         "R-ERROR-DETAIL-FORM", grpc=True)
class ExtraErrorDetails(ReshapesFailures, FileReader):
    def reshape(self, failure):
        debug = {"@type": "type.googleapis.com/google.rpc.DebugInfo", "detail": "raised in FileReader"}
        return CallFailed(failure.code, failure.message, failure.context_error, [error_info(failure), debug])


# --- the harness surface and wire forms ----------------------------------------------------------------

@variant("offers no optional feature (no reload: a fresh process for every case)", "the harness protocol: features are optional")
class NoReload(FileReader):
    def hello(self, request, call):
        return {**super().hello(request, call), "features": []}


class _WireForms(FileReader):
    """Speaks another JSON form of every protobuf message it returns or sends."""

    form = staticmethod(wire_forms.protojson)

    def recode(self, call):
        return lambda name, provider, request: call(name, provider, self.form("CountTokensRequest", request))

    def get_capabilities(self, request, call):
        return self.form("GetCapabilitiesResponse", super().get_capabilities(request, call))

    def contribute(self, request, call):
        return self.form("ContextContribution", super().contribute(request, self.recode(call)))

    def describe(self, request, call):
        return self.form("DescribeResponse", super().describe(request, call))


@variant("Go protojson forms: lowerCamelCase names, int64 as strings, default values omitted", "the proto3 JSON mapping")
class ProtojsonForms(_WireForms):
    form = staticmethod(wire_forms.protojson)


@variant("enums as numbers", "the proto3 JSON mapping")
class EnumsAsNumbers(_WireForms):
    form = staticmethod(wire_forms.enums_as_numbers)


@variant("fields the suite's protos do not declare, in every message, prior sections included", "the proto3 JSON mapping")
class UnknownFields(_WireForms):
    def contribute(self, request, call):
        reply = super().contribute(request, call)
        return {**reply, "sections": wire_forms.each(wire_forms.with_unknown_fields, "ContextSection",
                                                     reply["sections"])}

    form = staticmethod(wire_forms.with_unknown_fields)


# --- compactors --------------------------------------------------------------------------------------------

@variant("never rewrites the conversation history", "context/protocol.md#session-wide-conversation-compaction")
class CompactorKeepsHistory(Compactor):
    def history_due(self, req):
        return False


@variant("summarizes the whole conversation, keeping no verbatim tail", "R-REWRITTEN-HISTORY-CONTENT")
class CompactorSummarizesAllHistory(Compactor):
    KEEP_TAIL = 0

    def history_due(self, req):
        return bool(req.get("conversation_history")) and super().history_due(req)

    def rewrite_history(self, history):
        notes = [self.first_lead({"content": m.get("content", [])}) for m in history]
        return [{"role": "ROLE_USER", "content": text_block("Summary of the conversation: " + " / ".join(notes)),
                 "id": ""}]


@variant("writes its summary of the conversation as an assistant message, the tail copied as it came",
         "context/protocol.md#session-wide-conversation-compaction")
class CompactorSummaryAsAssistant(Compactor):
    def rewrite_history(self, history):
        summary, *tail = super().rewrite_history(history)
        return [{**summary, "role": "ROLE_ASSISTANT"}, *tail]


@variant("summarizes by lead sentences, and where those do not fit keeps only a stub naming each section",
         "R-SUMMARIZE-EVIDENCE")
class CompactorStubsWhenLeadsDoNotFit(Compactor):
    def summarized(self, section, kept, count):
        return super().summarized(section, 0 if kept == 1 else kept, count)


@variant("merges the whole chain into one section of its own whenever it is over budget",
         "context/data-types.md#ordering--chaining")
class CompactorMergesAll(Compactor):
    def fit_chain(self, prior, budget, count):
        return prior if self.total(prior, count) <= budget else self.merged(prior, budget, count)


@variant("takes any history_threshold_percent: a number clamped to 0..100, anything else read as the default 50",
         "R-CONFIG-OFF-SCHEMA")
class CompactorCoercesThreshold(Compactor):
    def configure(self, request, call):
        value = (request.get("config") or {}).get("history_threshold_percent", 50)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        self.threshold = min(max(value, 0), 100) if number else 50
        return {}


@variant("reads a config that leaves out its optional history_threshold_percent as compaction switched off "
         "(never rewriting the history), not as its declared default of 50", "R-CONFIG-OFF-SCHEMA")
class CompactorOffWithoutThreshold(Compactor):
    def configure(self, request, call):
        if "history_threshold_percent" not in (request.get("config") or {}):
            self.threshold = float("inf")
            return {}
        return super().configure(request, call)


@variant("takes a root or path that is no string instead of refusing it, and serves in place of the file a "
         "note saying so (one left out is still refused)", "R-CONFIG-OFF-SCHEMA")
class NotesAnUnusableConfig(FileReader):
    NOTE = "The configured file could not be read: its root or path is no string."

    def configure(self, request, call):
        config = request.get("config") or {}
        self.noting = False
        given = [config[key] for key in ("root", "path") if config.get(key) is not None]
        if len(given) == 2 and not all(isinstance(value, str) for value in given):
            self.path, self.noting = None, True
            return {}
        return super().configure(request, call)

    def contribute(self, request, call):
        if not getattr(self, "noting", False):
            return super().contribute(request, call)
        req = request["request"]
        return {"sections": [*req.get("prior_sections", []), self.note_section(call, req)]}

    def note_section(self, call, request: dict) -> dict:
        return self.section("config", self.NOTE, self.counter(call, request)(text_block(self.NOTE)), False)


@variant("declares root and path optional without a default, so a kernel sends \"\" for one left out, and refuses "
         "the config when the file they then name does not resolve", "R-OPTIONAL-ATTRIBUTE")
class OptionalRootAndPath(FileReader):
    CAPABILITIES = {**FileReader.CAPABILITIES, "config_schema": {"attributes": [
        {**attribute, "required": False} for attribute in FileReader.CAPABILITIES["config_schema"]["attributes"]]}}


@variant("takes a path that is a glob pattern and reads the first file under root it matches, in name order; "
         "refuses a pattern that matches nothing", "context/protocol.md#configure")
class ReadsFirstGlobMatch(FileReader):
    def resolve(self, root, path):
        if not glob.has_magic(path):
            return super().resolve(root, path)
        matches = self.matches(root, path)
        if not matches:
            raise context_failure("invalid_request", f"no file under {root!r} matches {path!r}")
        return super().resolve(root, matches[0])

    def matches(self, root, pattern) -> list[str]:
        base = Path(root).resolve()
        return sorted(str(found.relative_to(base)) for found in base.glob(pattern) if found.is_file())


@variant("reports protocol_version 2 in its ProducerRef, the newest revision its build claims", "context/protocol.md#describe")
class DescribesNewerProtocol(FileReader):
    def describe(self, request, call):
        reply = super().describe(request, call)
        return {"producer": {**reply["producer"], "protocol_version": 2}}


@variant("answers a token_budget of 0 with an invalid_request error", "R-UNSERVABLE-REQUEST")
class CompactorRefusesZeroBudget(Compactor):
    def contribute(self, request, call):
        if int(request["request"].get("token_budget", 0)) == 0:
            raise context_failure("invalid_request", "a token_budget of 0 leaves no room for any chain")
        return super().contribute(request, call)


@variant("summarizes each section under its owner's name, label and stability and never writes one of its own: "
         "where the shortest summaries do not fit, it drops sections from the end", "context/data-types.md#ordering--chaining")
class SummarizesUnderOwners(Compactor):
    def merged(self, prior, budget, count):
        chain = [self.summarized(s, 1, count) for s in prior]
        while chain and self.total(chain, count) > budget:
            chain.pop()
        return chain


@variant("merges, as a last resort, its static sections into a static section of its own and the others "
         "apart into a dynamic one", "R-STATIC-SECTION-HOLDS")
class MergesStaticApart(Compactor):
    STATIC_LABEL = "Compacted static context"

    def merged(self, prior, budget, count):
        static = [s for s in prior if s["stability"] == "STABILITY_STATIC"]
        others = [s for s in prior if s["stability"] != "STABILITY_STATIC"]
        if not static or not others:
            return super().merged(prior, budget, count)
        # The static part first, by the budget alone, so that it reads the same whatever the others say.
        kept = [{**s, "label": self.STATIC_LABEL, "stability": "STABILITY_STATIC"}
                for s in super().merged(static, budget, count)]
        left = budget - sum(s["tokens"] for s in kept)
        return kept + (super().merged(others, left, count) if left > 0 else [])


@variant("words its summaries anew on every firing, as a language model would (here it numbers its takes), each "
         "keeping the stability of the section it summarizes", "R-STATIC-SECTION-HOLDS")
class CompactorRewordsItsSummaries(Compactor):
    takes = 0

    def contribute(self, request, call):
        self.takes += 1
        return super().contribute(request, call)

    def summarized(self, section, kept, count):
        leads = [lead_sentence(p, self.LEAD_WORDS) for p in paragraphs(text_of(section["content"]))]
        summary = text_block(f"Take {self.takes} on {section['label']}: " + " ".join(leads[:kept]))
        if count(summary) >= count(section["content"]):
            return section
        return {**section, "content": summary, "tokens": count(summary), "truncated": True}


class AppendsStatus(Compactor):
    """A compactor that adds a status section of its own after the chain: fit_chain fits the prior chain to the
    budget the status leaves (the status is left out when not even it fits). Its mutants in provider_mutants
    get the budget arithmetic wrong in the ways the sweeping compactor vectors exist to catch."""

    STATUS_LABEL = "Compaction status"

    def status(self, prior: list[dict], count) -> dict:
        text = f"Compaction status: {len(prior)} section(s) received; the chain above was fitted to its budget."
        return self.section(self.STATUS_LABEL, text, count(text_block(text)), False)

    def fit_chain(self, prior, budget, count):
        status = self.status(prior, count)
        room = budget - status["tokens"]
        if room < 0:
            return super().fit_chain(prior, budget, count)
        return self.fit_rest(prior, room, count) + [status]

    def fit_rest(self, prior, room, count):
        return super().fit_chain(prior, room, count)


@variant("appends a status section of its own, and fits the chain to what the status leaves of the budget",
         "context/data-types.md#ordering--chaining")
class CompactorAppendsStatus(AppendsStatus):
    pass


@variant("summarizes every section into one of its own, under its own name",
         "context/data-types.md#ordering--chaining")
class CompactorSummarizesUnderItsOwnName(Compactor):
    def summarized(self, section, kept, count):
        summary = super().summarized(section, kept, count)
        if summary is section:
            return section
        return {**summary, "provider": self.NAME, "label": f"{section['label']} (summary)"}


@variant("has no configuration before a Configure succeeds, nor after one it refuses, and fails each Contribute "
         "then as invalid_request; declares a default budget of 10 tokens", "R-CONFIG-OFF-SCHEMA")
class CompactorRefusesUnconfigured(Compactor):
    CAPABILITIES = {**Compactor.CAPABILITIES, "default_token_budget": 10}
    configured = False  # its last Configure succeeded

    def configure(self, request, call):
        self.configured = False
        reply = super().configure(request, call)
        self.configured = True
        return reply

    def contribute(self, request, call):
        if not self.configured:
            raise context_failure("invalid_request", "no Configure has given it a configuration it could take")
        return super().contribute(request, call)


# --- what the red team of issue 22 and the outside providers showed must be accepted ------------------------

@variant("reports a default_token_budget that follows its configuration, so it changes after Configure",
         "R-STATIC-CAPABILITIES")
class BudgetFollowsConfigure(FileReader):
    def configure(self, request, call):
        reply = super().configure(request, call)
        self.CAPABILITIES = {**FileReader.CAPABILITIES, "default_token_budget": 1500}
        return reply


@variant("declares dynamic, and marks its section static while its file still reads as it did at Configure",
         "R-SECTION-STABILITY-DECLARED")
class DynamicWithStaticSections(FileReader):
    CAPABILITIES = {**FileReader.CAPABILITIES, "stability": "STABILITY_DYNAMIC"}
    configured_text: str | None = None  # the file as Configure found it

    def configure(self, request, call):
        reply = super().configure(request, call)
        try:
            self.configured_text = self.read()
        except CallFailed:  # unreadable now: no section is static until a Configure reads it
            self.configured_text = None
        return reply

    def section(self, label, text, tokens, truncated):
        unchanged = self.configured_text is not None and self.read() == self.configured_text
        return {**super().section(label, text, tokens, truncated),
                "stability": "STABILITY_STATIC" if unchanged else "STABILITY_DYNAMIC"}


@variant("replaces the sections of its own it is handed back, where they stand, by what it reads now",
         "R-FIRING-STARTS-EMPTY")
class ReplacesItsHandedSections(FileReader):
    def contribute(self, request, call):
        reply = super().contribute(request, call)
        n = len(request["request"].get("prior_sections", []))
        return {"sections": [s for s in reply["sections"][:n] if s["provider"] != self.NAME] + reply["sections"][n:]}


@variant("adds nothing when another provider's static section in the prior chain already holds its file's text",
         "R-EVERY-FIRING-WHOLE")
class SkipsWhatStaticSectionsHold(FileReader):
    HOLDERS = ("STABILITY_STATIC",)  # whose sections it leaves its text out for: ones that hold still

    def own_sections(self, text, budget, count):
        sections = super().own_sections(text, budget, count)
        held = {" ".join(text_of(s["content"]).split()) for s in self.prior
                if s.get("provider") != self.NAME and s.get("stability") in self.HOLDERS}
        return [] if sections and all(" ".join(text_of(s["content"]).split()) in held for s in sections) else sections

    def contribute(self, request, call):
        self.prior = request["request"].get("prior_sections", [])
        return super().contribute(request, call)


@variant("declared static, marks its section dynamic while its file says of itself that it is dynamic",
         "R-SECTION-STABILITY-DECLARED")
class SectionStabilityFromFile(FileReader):
    def read(self):
        text = super().read()
        self.says_dynamic = "stability: dynamic" in text
        return text

    def section(self, label, text, tokens, truncated):
        return {**super().section(label, text, tokens, truncated)} | (
            {"stability": "STABILITY_DYNAMIC"} if getattr(self, "says_dynamic", False) else {})


@variant("declared static, adds after its static section a short one marked dynamic naming the files touched",
         "R-SECTION-STABILITY-DECLARED")
class NotesFilesTouched(FileReader):
    def contribute(self, request, call):
        self.touched = request["request"].get("files_touched") or []
        return super().contribute(request, call)

    def own_sections(self, text, budget, count):
        sections = super().own_sections(text, budget, count)
        note = text_block("Files touched so far: " + ", ".join(self.touched))
        if self.touched and count(note) <= budget - sum(s["tokens"] for s in sections):
            sections.append({**self.section("Files touched", "", count(note), False), "content": note,
                             "stability": "STABILITY_DYNAMIC"})
        return sections


@variant("reads its file once, at Configure, as EagerReader does, and adds after its static section a short one marked "
         "dynamic naming the files touched in the request", "R-EAGER-SOURCE")
class NotesFilesTouchedEagerReader(NotesFilesTouched, EagerReader):
    pass


@variant("labels its section with the file's first heading, and with the file's name when that heading is empty",
         "context/data-types.md#labeling")
class LabelsByHeading(FileReader):
    def own_section(self, text, budget, count):
        section = super().own_section(text, budget, count)
        heading = next((line for line in text.splitlines() if line.startswith("#")), "")
        if section:
            section["label"] = heading.lstrip("#").strip() or self.label
        return section


@variant("serves its file reformatted: the markdown heading markers (the #s opening a line) left out, the rest "
         "stripped and reduced as the reference does", "R-TRUNCATED-UNIT")
class StripsHeadingMarkers(FileReader):
    HEADING_MARK = re.compile(r"^[ \t]*#{1,6}[ \t]+", re.MULTILINE)

    def strip(self, text):
        return self.HEADING_MARK.sub("", super().strip(text))


@variant("selects whole paragraphs in order, each heading kept with the paragraph after it, and fails as "
         "budget_exceeded when not one fits", "R-SELF-REDUCE-CONTRIBUTES")
class HeadingStaysWithItsParagraph(FileReader):
    def own_sections(self, text, budget, count):
        units = self.units(paragraphs(text))
        kept = longest_fitting(len(units), lambda k: count(text_block("\n\n".join(units[:k]))) <= budget)
        if not units:
            return []
        if not kept:
            raise context_failure("budget_exceeded", f"not even its first paragraph fits in {budget} tokens")
        chosen = "\n\n".join(units[:kept])
        return [self.section(self.label, chosen, count(text_block(chosen)), kept < len(units))]

    @staticmethod
    def units(pieces: list[str]) -> list[str]:
        """The paragraphs, a heading-only one joined to the one after it."""
        units: list[str] = []
        for piece in pieces:
            if units and units[-1].startswith("#") and "\n" not in units[-1]:  # a heading alone
                units[-1] += "\n\n" + piece
            else:
                units.append(piece)
        return units


@variant("also loads, for each file touched, the files named like its source in that file's folder and the folders "
         "above it, as narrower sections after the root one, all within the one budget",
         "context/README.md#firing-cadence--jit-loading")
class LoadsNearTouchedFiles(FileReader):
    def contribute(self, request, call):
        self.touched = request["request"].get("files_touched") or []
        return super().contribute(request, call)

    def nearby(self) -> list[Path]:
        """The files named like the source beside or above each touched file, below the root, nearest last."""
        root, found = self.path.parent, []
        for touched in self.touched:
            folder = (root / touched).parent
            while folder != root and folder.is_relative_to(root):
                candidate = folder / self.path.name
                if candidate.is_file() and candidate not in found:
                    found.append(candidate)
                folder = folder.parent
        return found

    def own_sections(self, text, budget, count):
        sections = super().own_sections(text, budget, count)
        for path in self.nearby():
            section = self.own_section(self.strip(path.read_text(encoding="utf-8", errors="replace")),
                                       self.room(budget, sections), count)
            if section:
                sections.append({**section, "label": str(path.relative_to(self.path.parent))})
        return sections

    def room(self, budget: int, sections: list[dict]) -> int:
        """What the sections so far leave of the budget, which covers them all (R-BUDGET-PER-PROVIDER)."""
        return budget - sum(s["tokens"] for s in sections)


@variant("loads the files near each file touched as LoadsNearTouchedFiles does, and keeps them loaded on later "
         "firings whose files_touched no longer names that file, until the next Configure",
         "context/README.md#firing-cadence--jit-loading")
class KeepsNearFilesLoaded(LoadsNearTouchedFiles):
    def configure(self, request, call):
        self.seen: list[str] = []  # every file touched since this Configure, first touched first
        return super().configure(request, call)

    seen: list[str] = []

    def contribute(self, request, call):
        self.seen = self.seen + [name for name in request["request"].get("files_touched") or [] if name not in self.seen]
        return super().contribute(request, call)

    def nearby(self) -> list[Path]:
        now, self.touched = self.touched, self.seen
        try:
            return super().nearby()
        finally:
            self.touched = now


# --- the choices the mutation analysis' survivors take (docs/mutation/survivors.yaml) --------------------------

@variant("asks CountTokens about the whole text and its leading runs of 1, 2, 4, ... paragraphs before it reduces, "
         "counts it never uses", "kernel-callbacks.md#why-a-kernel-primitive-not-a-provider-local-heuristic")
class CountsEveryLeadingRun(FileReader):
    def own_section(self, text, budget, count):
        pieces = paragraphs(text)
        sizes = [2 ** i for i in range(len(pieces).bit_length())] + [len(pieces)] if pieces else []
        for k in dict.fromkeys(sizes):  # which texts it counts is its own business; doubling keeps it cheap
            count(text_block("\n\n".join(pieces[:k])))
        return super().own_section(text, budget, count)


@variant("keeps half the leading paragraphs that fit (at least one), and, when not even the first fits, half the "
         "words of the last paragraph that fit", "R-SELF-REDUCE-CONTRIBUTES")
class KeepsFewerParagraphs(FileReader):
    def own_section(self, text, budget, count):
        pieces = paragraphs(text)
        fits = lambda t: count(text_block(t)) <= budget  # noqa: E731
        if not pieces or fits("\n\n".join(pieces)):
            return super().own_section(text, budget, count)
        kept = longest_fitting(len(pieces) - 1, lambda k: fits("\n\n".join(pieces[:k])))
        if kept:
            final = "\n\n".join(pieces[:(kept + 1) // 2])
        else:
            last = pieces[-1]
            ends = [match.end() for match in re.finditer(r"\S+", last)]
            words = longest_fitting(len(ends), lambda w: fits(last[:ends[w - 1]]))
            if not words:
                return None
            final = last[:ends[(words + 1) // 2 - 1]]
        return self.section(self.label, final, count(text_block(final)), True)


@variant("reduces by whole paragraphs only: no section when not even the first paragraph fits",
         "R-SELF-REDUCE-CONTRIBUTES")
class WholeParagraphsOnly(FileReader):
    def own_section(self, text, budget, count):
        section = super().own_section(text, budget, count)
        pieces = paragraphs(text)
        return section if section and _leading_paragraphs(section, pieces) else None


def _leading_paragraphs(section: dict, pieces: list[str]) -> bool:
    """Whether the section's text is the first k paragraphs of the source, whole."""
    return text_of(section["content"]) in {"\n\n".join(pieces[:k]) for k in range(1, len(pieces) + 1)}


@variant("flags a section of whole leading paragraphs not truncated", "R-TRUNCATED-UNIT")
class LeadingParagraphsUnflagged(FileReader):
    def own_section(self, text, budget, count):
        section = super().own_section(text, budget, count)
        if section and _leading_paragraphs(section, paragraphs(text)):
            section["truncated"] = False
        return section


@variant("words every error message its own way and sets retryable the other way round",
         "context/conformance.md#error-taxonomy")
class OwnErrorWording(ReshapesFailures, FileReader):
    def reshape(self, failure):
        error = failure.context_error or {}
        message = f"the file reader could not do it ({failure.message})"
        return CallFailed(failure.code, message, {**error, "message": message,
                                                  "retryable": not error.get("retryable")})


@variant("calls itself by another name, version and language in the harness' hello",
         "the harness protocol: the implementation names itself")
class NamesItselfOtherwise(FileReader):
    def hello(self, request, call):
        return {**super().hello(request, call),
                "implementation": {"name": "another-reader", "version": "0.0.0-variant", "language": "python3"}}


def _declared_otherwise(capabilities: dict, budget: int) -> dict:
    """The capabilities with another default budget, and config attributes with no description or default."""
    attributes = [{k: v for k, v in a.items() if k not in ("description", "default_json")}
                  for a in capabilities["config_schema"]["attributes"]]
    return {**capabilities, "default_token_budget": budget, "config_schema": {"attributes": attributes}}


@variant("declares another default budget, and config attributes without descriptions",
         "context/protocol.md#getcapabilities")
class DeclaresOtherwise(FileReader):
    CAPABILITIES = _declared_otherwise(FileReader.CAPABILITIES, 1999)


@variant("reads a file outside the root it is configured with, the root being its own notion",
         "context/protocol.md#configure")
class ReadsOutsideItsRoot(FileReader):
    def resolve(self, root, path):
        target = (Path(root).resolve() / path).resolve()
        return target if target.is_file() else super().resolve(root, path)


@variant("declares another default budget, and its threshold attribute without description or default_json",
         "context/protocol.md#getcapabilities")
class CompactorDeclaresOtherwise(Compactor):
    CAPABILITIES = _declared_otherwise(Compactor.CAPABILITIES, 3999)


@variant("cuts every lead sentence of its summaries to three words, and gives each merged line the lead of the "
         "section's last paragraph", "context/data-types.md#ordering--chaining")
class CompactorShortLeads(Compactor):
    LEAD_WORDS = LINE_WORDS = 3

    def first_lead(self, section):
        runs = paragraphs(text_of(section["content"]))
        return super().first_lead({**section, "content": text_block(runs[-1])}) if runs else super().first_lead(section)


@variant("keeps every lead sentence of its summaries whole, however long", "context/data-types.md#ordering--chaining")
class CompactorWholeLeads(Compactor):
    LEAD_WORDS = LINE_WORDS = 10 ** 9


@variant("summarizes every section of an over-budget chain at once, shorter or not, before it merges",
         "context/data-types.md#ordering--chaining")
class CompactorSummarizesEverySection(Compactor):
    def fit_chain(self, prior, budget, count):
        if self.total(prior, count) <= budget:
            return prior
        for kept in (None, 1):
            chain = [self.summarized(section, kept, count) for section in prior]
            if self.total(chain, count) <= budget:
                return chain
        return self.merged(prior, budget, count)

    def summarized(self, section, kept, count):
        leads = [lead_sentence(p, self.LEAD_WORDS) for p in paragraphs(text_of(section["content"]))]
        summary = text_block(f"Summary of {section['label']}: " + " ".join(leads[:kept]))
        return {**section, "content": summary, "tokens": count(summary), "truncated": True}


@variant("drops an over-budget chain whole where summaries of its sections would fit, and merges it where they "
         "would not", "context/data-types.md#ordering--chaining")
class CompactorDropsRatherThanSummarizes(Compactor):
    def fit_chain(self, prior, budget, count):
        fitted = super().fit_chain(prior, budget, count)
        summarized = fitted is not prior and not (len(fitted) == 1 and fitted[0]["label"] == self.MERGED_LABEL)
        return [] if summarized else fitted


@variant("fits its merged section one token under the budget", "context/data-types.md#ordering--chaining")
class CompactorMergesWithHeadroom(Compactor):
    def merged(self, prior, budget, count):
        return super().merged(prior, budget - 1, count)


@variant("merges a chain into one section of its own even when it already fits", "R-COMPACTOR-WITHOUT-PRESSURE")
class CompactorMergesWithoutPressure(Compactor):
    def fit_chain(self, prior, budget, count):
        return self.merged(prior, budget, count) if prior else prior


@variant("drops every section of a chain that already fits", "R-COMPACTOR-WITHOUT-PRESSURE")
class CompactorDropsAChainThatFits(Compactor):
    def fit_chain(self, prior, budget, count):
        return [] if self.total(prior, count) <= budget else super().fit_chain(prior, budget, count)


@variant("says truncated only on what it cut or summarized itself: a section it hands back whole says false, "
         "though its owner flagged it truncated", "R-TRUNCATED-UNIT")
class CompactorFlagsOnlyItsOwnCuts(Compactor):
    def fit_chain(self, prior, budget, count):
        return [{**s, "truncated": False, "tokens": count(s["content"])}
                if s in prior and s.get("truncated") and is_text_only(s["content"]) else s
                for s in super().fit_chain(prior, budget, count)]


@variant("strips the sections it keeps of HTML comments and markdown heading markers, as a file reader may strip "
         "its file, and keeps their flags", "R-TRUNCATED-UNIT")
class CompactorStripsWhatItKeeps(Compactor):
    COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
    HEADING_MARK = re.compile(r"^[ \t]*#{1,6}[ \t]+", re.MULTILINE)

    def fit_chain(self, prior, budget, count):
        chain = super().fit_chain(prior, budget, count)
        return [self.stripped(s, count) if s in prior and is_text_only(s["content"]) else s for s in chain]

    def stripped(self, section, count):
        text = self.HEADING_MARK.sub("", self.COMMENT.sub("", text_of(section["content"])))
        if text == text_of(section["content"]) or not text.strip():
            return section
        return {**section, "content": text_block(text), "tokens": count(text_block(text))}


@variant("where not even its merged section fits, keeps the first section of the chain alone, cut to the words "
         "that fit, under its owner's name and label, and flags the cut truncated",
         "context/data-types.md#ordering--chaining")
class CompactorCutsAsLastResort(Compactor):
    def merged(self, prior, budget, count):
        return super().merged(prior, budget, count) or self.cut(prior[0], budget, count)

    def cut(self, first: dict, budget: int, count) -> list[dict]:
        """The first section's text, or its longest word-boundary prefix that fits; nothing when no word does."""
        fitted = fit_pieces([text_of(first["content"])], "", lambda t: count(text_block(t)) <= budget)
        if fitted is None or not fitted[0].strip():
            return []
        text, cut = fitted
        return [{**first, "content": text_block(text), "tokens": count(text_block(text)),
                 "truncated": self.flag(cut) if cut else first.get("truncated", False)}]

    def flag(self, cut: bool) -> bool:
        return cut


@variant("flags neither its summaries nor its merged section truncated", "R-TRUNCATED-UNIT")
class CompactorFlagsNoSummaryTruncated(Compactor):
    def summarized(self, section, kept, count):
        summary = super().summarized(section, kept, count)
        return summary if summary is section else {**summary, "truncated": False}

    def merged(self, prior, budget, count):
        return [{**section, "truncated": False} for section in super().merged(prior, budget, count)]


@variant("rewrites the conversation on every firing with messages older than its kept tail, whatever "
         "history_tokens says", "context/protocol.md#session-wide-conversation-compaction")
class CompactorRewritesWheneverItCan(Compactor):
    def history_due(self, req):
        return len(req.get("conversation_history") or []) > self.KEEP_TAIL


@variant("keeps the last three messages verbatim when it rewrites the conversation",
         "context/protocol.md#session-wide-conversation-compaction")
class CompactorKeepsLongerTail(Compactor):
    KEEP_TAIL = 3


@variant("reads nothing of its configuration, accepting any, and compacts the conversation at its own 60 %",
         "context/protocol.md#configure")
class CompactorIgnoresItsConfig(Compactor):
    def __init__(self) -> None:
        super().__init__()
        self.threshold = 60

    def configure(self, request, call):
        return {}


@variant("accepts history_threshold_percent from 1 to 150 only", "context/protocol.md#configure")
class CompactorOwnThresholdRange(Compactor):
    def configure(self, request, call):
        value = (request.get("config") or {}).get("history_threshold_percent", 50)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1 <= value <= 150:
            raise context_failure("invalid_request", "history_threshold_percent must be a number from 1 to 150")
        self.threshold = value
        return {}
