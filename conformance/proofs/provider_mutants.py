"""Mutants of the reference providers: each a small, deliberate deviation.

Like kernel_mutants: every mutant declares the requirement(s) it `breaks`,
which the suite must report failing, and under `also` the collateral it
unavoidably breaks with them that its killing vectors do not cite. `manifest` names the bundled manifest it is certified with.
"""

from __future__ import annotations

import glob
import hashlib
import math
import os
import re
import unicodedata
from pathlib import Path

from conformance.bindings.base import CallFailed
from conformance.proofs.error_forms import ReshapesFailures, error_info
from conformance.reference.compactor import Compactor
from conformance.reference.filereader import FileReader
from conformance.proofs.provider_variants import (AppendsStatus, BlockPerParagraph, CompactorCutsAsLastResort,
                                                  KeepsLongestParagraphs, NotesFilesTouched, RereadsWhenTouched,
                                                  FramesItsSection, LoadsNearTouchedFiles, MergesStaticApart,
                                                  NotesAnUnusableConfig, ReadsFirstGlobMatch, SectionPerSentence,
                                                  SkipsWhatStaticSectionsHold, StripsHeadingMarkers,
                                                  HeadingStaysWithItsParagraph)
from conformance.reference.provider_base import (Counter, CountUnavailable, ReferenceProvider, context_failure,
                                                 paragraphs, text_block)
from conformance.wire import tokens

MUTANTS: dict[str, type[ReferenceProvider]] = {}


def mutant(*breaks: str, also: list[str] = (), property_only: bool = False):
    def register(cls):
        cls.breaks, cls.also, cls.property_only = breaks, tuple(also), property_only
        cls.manifest = "compactor" if issubclass(cls, Compactor) else "filereader"
        MUTANTS[cls.__name__] = cls
        return cls
    return register


def _with(capabilities: dict, **changes) -> dict:
    return {**capabilities, **changes}


# --- capabilities and identity ----------------------------------------------------------

@mutant("P-CAP-CONFIG-SCHEMA")
class NoConfigSchema(FileReader):
    """Declares no config schema."""
    CAPABILITIES = {k: v for k, v in FileReader.CAPABILITIES.items() if k != "config_schema"}


@mutant("P-CAP-DEFAULT-BUDGET")
class ZeroDefaultBudget(FileReader):
    """Declares a default budget of 0 (unset)."""
    CAPABILITIES = _with(FileReader.CAPABILITIES, default_token_budget=0)


@mutant("P-CAP-STABILITY")
class UnspecifiedStability(FileReader):
    """Leaves the declared stability unspecified (its sections still say static)."""
    CAPABILITIES = _with(FileReader.CAPABILITIES, stability="STABILITY_UNSPECIFIED")

    def section(self, label, text, count, truncated):
        return {**super().section(label, text, count, truncated), "stability": "STABILITY_STATIC"}


@mutant("P-CAP-STATIC-PROPERTIES")
class StabilityFromSource(FileReader):
    """Reads its stability from the source file's front matter on every call."""

    def get_capabilities(self, request, call):
        reply = super().get_capabilities(request, call)
        try:
            if self.path and "stability: dynamic" in self.path.read_text():
                reply["capabilities"]["stability"] = "STABILITY_DYNAMIC"
        except OSError:
            pass
        return reply


class _ChangesProducer(FileReader):
    """Describes itself with CHANGES made to the reference's ProducerRef."""

    CHANGES: dict = {}

    def describe(self, request, call):
        reply = super().describe(request, call)
        reply["producer"].update(self.CHANGES)
        return reply


@mutant("P-DESCRIBE")
class DescribesAsTool(_ChangesProducer):
    """Reports itself as a tool provider."""
    CHANGES = {"category": "CATEGORY_TOOL"}


@mutant("P-DESCRIBE")
class DescribesWithoutSource(_ChangesProducer):
    """Reports no source in its ProducerRef."""
    CHANGES = {"source": ""}


@mutant("P-DESCRIBE")
class DescribesWithoutProtocolVersion(_ChangesProducer):
    """Leaves the ProducerRef's protocol_version unset (0)."""
    CHANGES = {"protocol_version": 0}


@mutant("P-CAP-STATIC-PROPERTIES")
class StabilityFromLastRead(FileReader):
    """Declares the stability the front matter of its file asked for when it last read it, at Contribute."""

    declared = ""

    def read(self):
        text = super().read()
        self.declared = "STABILITY_DYNAMIC" if "stability: dynamic" in text else ""
        return text

    def get_capabilities(self, request, call):
        reply = super().get_capabilities(request, call)
        if self.declared:
            reply["capabilities"]["stability"] = self.declared
        return reply


@mutant("P-RPCS")
class NoDescribe(FileReader):
    """Does not implement Describe."""

    def describe(self, request, call):
        raise CallFailed("UNIMPLEMENTED", "method Describe not implemented")


# --- configure ----------------------------------------------------------------------------

@mutant("P-CONFIGURE-REJECT")
class AcceptsMissingSource(FileReader):
    """Accepts any path at Configure and finds out at Contribute."""

    def resolve(self, root, path):
        return Path(root) / path


@mutant("P-CONFIGURE-REJECT")
class TrustsAnExistingFolder(FileReader):
    """Checks a path with a folder in it only as far as the folder: the file may be generated there later."""

    def resolve(self, root, path):
        base = Path(root).resolve()
        target = base / path
        if target.parent != base and target.parent.is_dir() and target.parent.resolve().is_relative_to(base):
            return target
        return super().resolve(root, path)


@mutant("P-CONFIGURE-REJECT")
class TakesALinkForAFile(FileReader):
    """Refuses a path only when nothing at all is there under that name: a symlink counts as there, wherever it
    leads."""

    def resolve(self, root, path):
        try:
            return super().resolve(root, path)
        except CallFailed:
            link = Path(root).resolve() / path
            if link.is_symlink():
                return link
            raise


@mutant("P-TOKENS-COUNTTOKENS")
class EstimatesItsConfigNote(NotesAnUnusableConfig):
    """The note NotesAnUnusableConfig serves after a root or path that is no string, its figure estimated (four
    characters a token) where its file sections ask CountTokens: only a firing after a schema probe shows it."""

    def note_section(self, call, request: dict) -> dict:
        return self.section("config", self.NOTE, len(self.NOTE) // 4, False)


@mutant("P-CONFIGURE-REJECT")
class GlobWaitsForAMatch(ReadsFirstGlobMatch):
    """Takes a glob that matches nothing yet, in case a file appears: Configure succeeds, and every firing finds
    no file to read."""

    def resolve(self, root, path):
        if glob.has_magic(path) and not self.matches(root, path):
            return Path(root).resolve() / path  # read, and found missing, at every firing
        return super().resolve(root, path)


@mutant("P-CONFIGURE-REQUIRED-FIELD")
class ConfigureDefersMissingFields(FileReader):
    """Accepts a configuration with a required field missing, to fail only when it is first used."""

    def configure(self, request, call):
        config = request.get("config") or {}
        if not config.get("root") or not config.get("path"):
            self.path = None  # Contribute will say it was never configured
            return {}
        return super().configure(request, call)


@mutant("P-CONFIGURE-REQUIRED-FIELD")
class DefaultsSecondRequiredField(FileReader):
    """Rejects a configuration without root, but quietly reads the first Markdown file under root when path,
    required too, is missing."""

    def configure(self, request, call):
        config = request.get("config") or {}
        if isinstance(config.get("root"), str) and "path" not in config:
            found = sorted(Path(config["root"]).glob("*.md"))
            config = {**config, "path": found[0].name} if found else config
        return super().configure({**request, "config": config}, call)


@mutant("P-CONTEXT-ERROR-FIELDS", also=["P-ERROR-CATEGORIZED"])
class BareConfigureError(FileReader):
    """Rejects a bad path with a bare status, no ContextError."""

    def resolve(self, root, path):
        try:
            return super().resolve(root, path)
        except CallFailed as failure:
            raise CallFailed("INVALID_ARGUMENT", failure.message) from None


@mutant("P-ERROR-CATEGORIZED", also=["P-CONTEXT-ERROR-FIELDS"])
class ReaderCrashesOnOffSchemaValue(FileReader):
    """Fails a root or path that is not a string with a bare internal status, as an unhandled type error
    would surface: a value off its own schema left unanswered (R-CONFIG-OFF-SCHEMA)."""

    def configure(self, request, call):
        config = request.get("config") or {}
        if any(key in config and not isinstance(config[key], str) for key in ("root", "path")):
            raise CallFailed("INTERNAL", "unsupported operand type(s)")
        return super().configure(request, call)


@mutant("P-ERROR-CATEGORIZED", also=["P-CONTEXT-ERROR-FIELDS"])
class CompactorStoresAnyThreshold(Compactor):
    """Takes any history_threshold_percent at Configure, and fails the first firing that compares a
    threshold that is not a number with a bare internal status (R-CONFIG-OFF-SCHEMA)."""

    def configure(self, request, call):
        self.threshold = (request.get("config") or {}).get("history_threshold_percent", 50)
        return {}

    def history_due(self, req):
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, (int, float)):
            raise CallFailed("INTERNAL", f"cannot compare with {self.threshold!r}")
        return super().history_due(req)


@mutant("P-ERROR-CATEGORIZED", also=["P-CONTEXT-ERROR-FIELDS"])
class CompactorNeedsItsOptionalThreshold(Compactor):
    """Takes history_threshold_percent's default only when it is sent no config at all: a config that leaves
    the optional attribute out fails with a bare internal status, as the KeyError reading it would surface."""

    def configure(self, request, call):
        config = request.get("config")
        if config is not None and "history_threshold_percent" not in config:
            raise CallFailed("INTERNAL", "KeyError: 'history_threshold_percent'")
        return super().configure(request, call)


# --- the chain ------------------------------------------------------------------------------

@mutant("P-OWN-SECTIONS-ONLY")
class CollapsesPriorBlocks(FileReader):
    """Passes each prior section through as one text block, its blocks (empty ones too) run together, as an SDK
    that copies text rather than blocks would."""

    def contribute(self, request, call):
        reply = super().contribute(request, call)
        n = len(request["request"]["prior_sections"])
        merged = [{**s, "content": text_block(tokens.text_of(s["content"]))} for s in reply["sections"][:n]]
        return {"sections": merged + reply["sections"][n:]}


@mutant("P-FULL-CHAIN")
class ReturnsDelta(FileReader):
    """Returns only its own section."""

    def contribute(self, request, call):
        reply = super().contribute(request, call)
        prior = request["request"]["prior_sections"]
        return {"sections": reply["sections"][len(prior):]}


@mutant("P-FULL-CHAIN", also=["P-SELF-REDUCE", "P-STATIC-SECTION-HOLDS"])
class LeavesOutWhatItSentBefore(FileReader):
    """Counts on the kernel to keep what it sent: a firing that would bring exactly the sections of the one
    before gets the prior chain back alone."""

    sent_before: list | None = None

    def contribute(self, request, call):
        reply = super().contribute(request, call)
        prior = request["request"].get("prior_sections", [])
        own = reply["sections"][len(prior):]
        if own and own == self.sent_before:
            return {"sections": prior}
        self.sent_before = own
        return reply


@mutant("P-OWN-SECTIONS-ONLY")
class PrependsOwn(FileReader):
    """Puts its own section first."""

    def contribute(self, request, call):
        reply = super().contribute(request, call)
        n = len(request["request"]["prior_sections"])
        return {"sections": reply["sections"][n:] + reply["sections"][:n]}


@mutant("P-OWN-SECTIONS-ONLY")
class NormalizesPriorText(FileReader):
    """Normalizes the prior sections' text to NFC and trims it: a quiet edit of others' content."""

    def contribute(self, request, call):
        reply = super().contribute(request, call)
        n = len(request["request"]["prior_sections"])
        tidy = [{**s, "content": [{"text": {"text": unicodedata.normalize("NFC", b["text"]["text"]).strip()}}
                                  if "text" in b else b for b in s["content"]]} for s in reply["sections"][:n]]
        return {"sections": tidy + reply["sections"][n:]}


@mutant("P-OWN-SECTIONS-ONLY")
class ResetsPriorTokens(FileReader):
    """Recounts the prior sections and rewrites their tokens field."""

    def contribute(self, request, call):
        reply = super().contribute(request, call)
        n = len(request["request"]["prior_sections"])
        fixed = [{**s, "tokens": tokens.suite_tokenizer_count(s["content"])} for s in reply["sections"][:n]]
        return {"sections": fixed + reply["sections"][n:]}


@mutant("P-NO-REWRITE-UNLESS-COMPACTOR")
class RewritesHistoryAnyway(FileReader):
    """Clears the conversation it was never sent."""

    def contribute(self, request, call):
        return {**super().contribute(request, call),
                "rewritten_history": [{"role": "ROLE_USER", "content": text_block("(cleared)"), "id": ""}]}


# --- own sections ------------------------------------------------------------------------------

@mutant("P-SECTION-LABEL")
class Unlabelled(FileReader):
    """Leaves its section's label empty."""

    def section(self, label, text, count, truncated):
        return super().section("", text, count, truncated)


@mutant("P-SECTION-PROVIDER")
class WrongName(FileReader):
    """Signs its sections with a name other than the one it is declared under."""

    def section(self, label, text, count, truncated):
        return {**super().section(label, text, count, truncated), "provider": "file-reader"}


@mutant("P-SECTION-STABILITY")
class SectionsWithoutStability(FileReader):
    """Leaves its sections' stability unspecified."""

    def section(self, label, text, count, truncated):
        return {**super().section(label, text, count, truncated), "stability": "STABILITY_UNSPECIFIED"}


@mutant("P-TEXT-ONLY")
class AttachesImage(FileReader):
    """Adds a tiny image block after its text."""

    def section(self, label, text, count, truncated):
        section = super().section(label, text, count, truncated)
        section["content"].append({"image": {"data": "iVBORw0KGgo=", "media_type": "image/png"}})
        return section


@mutant("P-WITHIN-BUDGET")
class IgnoresBudget(FileReader):
    """Returns the whole file whatever the budget."""

    def own_section(self, text, budget, count):
        return super().own_section(text, 10**9, count)


@mutant("P-WITHIN-BUDGET")
class OneTokenOver(FileReader):
    """Fits its text to one token more than the budget."""

    def own_section(self, text, budget, count):
        return super().own_section(text, budget + 1, count)


@mutant("P-SELF-REDUCE")
class GivesUpWhenOverBudget(FileReader):
    """Contributes nothing when the file does not fit, instead of reducing it."""

    def own_section(self, text, budget, count):
        whole = count(text_block(text.strip()))
        return super().own_section(text, budget, count) if whole <= budget else None


@mutant("P-SELF-REDUCE")
class EmptySectionWhenOverBudget(FileReader):
    """Answers a file that does not fit with a section that holds no text: a section, but nothing reduced."""

    def own_section(self, text, budget, count):
        if count(text_block(text.strip())) <= budget:
            return super().own_section(text, budget, count)
        return self.section(self.label, "", 0, True)


@mutant("P-SELF-REDUCE")
class BudgetExceededWhenOverBudget(FileReader):
    """Fails with budget_exceeded whenever its file does not fit whole, instead of reducing it."""

    def own_section(self, text, budget, count):
        if count(text_block(text.strip())) > budget:
            raise context_failure("budget_exceeded", f"{self.label} does not fit {budget} tokens")
        return super().own_section(text, budget, count)


@mutant("P-TRUNCATED-FLAG")
class NeverTruncated(FileReader):
    """Never sets truncated, even when it cut."""

    def section(self, label, text, count, truncated):
        return super().section(label, text, count, False)


@mutant("P-TRUNCATED-FLAG")
class MarksTheCutInTheText(FileReader):
    """Says where it cut in the text itself, " [truncated]" at the end, and leaves the flag false."""

    MARK = " [truncated]"

    def own_section(self, text, budget, count):
        section = super().own_section(text, max(budget - count(text_block(self.MARK)), 0), count)
        if section is None or not section["truncated"]:
            return super().own_section(text, budget, count)
        marked = tokens.text_of(section["content"]) + self.MARK
        return self.section(self.label, marked, count(text_block(marked)), False)


@mutant("P-TRUNCATED-FLAG")
class AlwaysTruncated(FileReader):
    """Always sets truncated."""

    def section(self, label, text, count, truncated):
        return super().section(label, text, count, True)


@mutant("P-TRUNCATED-FLAG")
class FramesItsCutUnflagged(FramesItsSection):
    """Puts a line naming its file before its text and a closing line after it, and flags nothing truncated,
    though between them is a piece of the file cut inside a sentence."""

    def flag(self, cut):
        return False


@mutant("P-TRUNCATED-FLAG")
class FramesTheWholeAsTruncated(FramesItsSection):
    """Puts a line naming its file before its text and a closing line after it, and flags it truncated, though
    between them is the whole file."""

    def flag(self, cut):
        return True


@mutant("P-TRUNCATED-FLAG")
class SectionPerClause(SectionPerSentence):
    """One section per clause (split after commas and semicolons too), the rest dropped whole to fit, each
    flagged not truncated: a piece of a sentence cut at a comma is cut short, as a list cut there is."""

    BREAK = re.compile(r"(?<=[.!?,;])\s+")


# --- tokens ------------------------------------------------------------------------------------------

@mutant("P-TOKENS-COUNTTOKENS", also=["P-WITHIN-BUDGET"])
class EstimatesTokens(FileReader):
    """Estimates with bytes/4 instead of asking CountTokens."""

    def own_section(self, text, budget, count):
        return super().own_section(text, budget, lambda content: math.ceil(len(tokens.text_of(content).encode()) / 4))


@mutant("P-TOKENS-COUNTTOKENS", also=["P-WITHIN-BUDGET"])
class EstimatesAtSmallBudgets(FileReader):
    """Asks CountTokens when the budget is roomy, but estimates bytes/4 itself under 50 tokens."""

    def own_section(self, text, budget, count):
        estimate = lambda content: math.ceil(len(tokens.text_of(content).encode()) / 4)
        return super().own_section(text, budget, count if budget >= 50 else estimate)


@mutant("P-TOKENS-COUNTTOKENS", also=["P-WITHIN-BUDGET"])
class EstimatesWhenCountTokensFails(FileReader):
    """Falls back to a bytes/4 estimate of its own when the kernel's CountTokens fails."""

    def counter(self, call, request):
        counter = super().counter(call, request)

        def count(content):
            try:
                return counter(content)
            except CountUnavailable:
                return math.ceil(len(tokens.text_of(content).encode()) / 4)
        return count


@mutant("P-TOKENS-COUNTTOKENS")
class StaleFigure(FileReader):
    """Reports the count of the whole file for a section it cut."""

    def own_section(self, text, budget, count):
        section = super().own_section(text, budget, count)
        if section and section["truncated"]:
            section["tokens"] = count(text_block(text.strip()))
        return section


@mutant("P-TOKENS-COUNTTOKENS")
class SumsPerBlockCounts(BlockPerParagraph):
    """Counts each paragraph block of its section in a call of its own and adds the counts up (R-COUNT-WHOLE-SECTION)."""

    def blocks_count(self, blocks, count):
        return sum(count([block]) for block in blocks)


class _JoinsBlocks(Counter):
    def ask(self, texts, model_id):
        return super().ask(("".join(texts),), model_id)


@mutant("P-TOKENS-COUNTTOKENS")
class CountsBlocksJoined(BlockPerParagraph):
    """Asks CountTokens for its section's text as one block, though the section holds one block per paragraph
    (R-COUNT-WHOLE-SECTION): right only under a tokenizer that ignores where blocks end."""

    def counter(self, call, request):
        return _JoinsBlocks(call, super().counter(call, request).model_id)  # for the model the reference counts for


@mutant("C-CHAIN-FITS")
class CompactorCountsBlocksJoined(Compactor):
    """Measures each section of the chain by its text asked as one block (red-team M07)."""

    def counter(self, call, request):
        return _JoinsBlocks(call, super().counter(call, request).model_id)  # for the model the reference counts for


@mutant("P-TOKENS-COUNTTOKENS")
class CountsForFixedModel(FileReader):
    """Always counts for the model it was written for, whatever model the request targets."""

    def counter(self, call, request):
        return Counter(call, "suite-model")


class _PrefersExact(Counter):
    def ask(self, texts, model_id):
        answer = super().ask(texts, model_id)
        return answer if answer.get("exact") else super().ask(texts, "suite-model")


@mutant("P-TOKENS-COUNTTOKENS")
class StatesExactWhenServedInexact(FileReader):
    """Given a fallback count (exact false) for the target, asks a model it knows has a tokenizer instead."""

    def counter(self, call, request):
        return _PrefersExact(call, request["model_target"]["id"])


@mutant("P-TOKENS-COUNTTOKENS")
class StatesUnservedFallback(FileReader):
    """Fits its text with the target's exact counts, but states the fallback formula's figure, worked out itself."""

    def section(self, label, text, count, truncated):
        return super().section(label, text, tokens.fallback_count(text_block(text)), truncated)


@mutant("P-TOKENS-COUNTTOKENS")
class CachesCountsByLabel(FileReader):
    """Keeps its section's token figure by label across firings, though the text under it changes."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: dict[str, int] = {}

    def section(self, label, text, count, truncated):
        return super().section(label, text, self.figures.setdefault(label, count), truncated)


@mutant("P-COUNTTOKENS-TEXT-ONLY")
class CountsWithAnImage(FileReader):
    """Also asks CountTokens about its text with an image block attached, ignoring the refusal."""

    def own_section(self, text, budget, count):
        try:
            count.call("CountTokens", None, {"content": text_block(text) + [{"image": {"data": ""}}]})
        except CallFailed:
            pass
        return super().own_section(text, budget, count)


# --- content ----------------------------------------------------------------------------------------------

@mutant("P-STRIP-ARTIFACTS")
class KeepsComments(FileReader):
    """Leaves HTML comments and front matter in."""

    def strip(self, text):
        return text


@mutant("P-STRIP-ARTIFACTS")
class StripsCommentLinesOnly(FileReader):
    """Strips the front matter and the HTML comments that fill lines of their own, and leaves every comment that
    shares a line with text (or opens after text and closes on a later line) for the model to read. Its flag is
    judged on that form as on the reference's (R-TRUNCATED-UNIT), so it fails nothing but the SHOULD."""

    LONE_COMMENT = re.compile(r"^[ \t]*<!--(?:(?!-->).)*-->[ \t]*$\n?", re.DOTALL | re.MULTILINE)
    FRONT_MATTER = re.compile(r"\A---[ \t]*\n(?:.*?\n)?---[ \t]*(?:\n|\Z)", re.DOTALL)

    def strip(self, text):
        return self.LONE_COMMENT.sub("", self.FRONT_MATTER.sub("", text, count=1))


# --- errors -------------------------------------------------------------------------------------------------

@mutant("P-SOURCE-UNAVAILABLE")
class SilentWhenSourceVanishes(FileReader):
    """Contributes nothing, without an error, when its file has gone."""

    def read(self):
        try:
            return super().read()
        except CallFailed:
            return self.stand_in()

    def stand_in(self) -> str:
        return ""


@mutant("P-SOURCE-UNAVAILABLE")
class PlaceholderWhenSourceVanishes(SilentWhenSourceVanishes):
    """Contributes a note of its own, without an error, when its file has gone."""

    def stand_in(self) -> str:
        return f"({self.label} could not be read.)"


@mutant("P-SOURCE-UNAVAILABLE")
class StaysUnavailable(FileReader):
    """Once its file has gone, reports it unavailable for the rest of the session, back or not."""

    gone = False

    def configure(self, request, call):
        self.gone = False
        return super().configure(request, call)

    def read(self):
        if self.gone:
            raise context_failure("source_unavailable", f"{self.label} went away earlier", retryable=True)
        try:
            return super().read()
        except CallFailed:
            self.gone = True
            raise


@mutant("P-SOURCE-UNAVAILABLE")
class OnlyMissingIsUnavailable(FileReader):
    """Reports a missing file as source_unavailable, and any other read error (no permission, a directory)
    as unknown: it catches FileNotFoundError alone."""

    def read(self):
        try:
            return self.path.read_text(encoding="utf-8-sig", errors="replace")
        except FileNotFoundError:
            raise context_failure("source_unavailable", f"{self.label} is gone", retryable=True) from None
        except OSError as exc:
            raise context_failure("unknown", f"reading {self.label} failed: {exc}") from None


@mutant("P-SOURCE-UNAVAILABLE")
class SilentWhenUnreadable(FileReader):
    """Contributes nothing, without an error, when its file is there but cannot be opened."""

    def read(self):
        unopenable = self.path.is_symlink() and not self.path.exists()  # a symlink loop
        if unopenable or (self.path.is_file() and not os.access(self.path, os.R_OK)):
            return ""
        return super().read()


@mutant("P-SOURCE-UNAVAILABLE")
class SilentOnDirectory(FileReader):
    """Contributes nothing, without an error, when a directory stands where its file was."""

    def read(self):
        return "" if self.path.is_dir() else super().read()


@mutant("P-SOURCE-UNAVAILABLE")
class StrictDecodingIsUnknown(FileReader):
    """Decodes its file strictly as UTF-8 and lets a decoding error out as an unknown failure."""

    def read(self):
        text = super().read()  # a file that is gone or unopenable is source_unavailable, as in the reference
        try:
            self.path.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise context_failure("unknown", f"{self.label}: {exc}") from None
        except OSError:
            pass
        return text


@mutant("P-SOURCE-UNAVAILABLE")
class SilentWhenATouchedSourceVanished(RereadsWhenTouched):
    """Serves what it read at Configure, and rereads its file when files_touched names it, as RereadsWhenTouched
    does; but finding the touched file gone, it contributes nothing, without an error."""

    def contribute(self, request, call):
        try:
            return super().contribute(request, call)
        except CallFailed:
            return {"sections": request["request"].get("prior_sections", [])}


@mutant("P-SOURCE-UNAVAILABLE")
class QuietAfterReportingTheLoss(FileReader):
    """Reads its file at each call and reports it gone once; every later call that finds it still gone hands the
    chain back with nothing of its own and no error, until a call reads it again."""

    def contribute(self, request, call):
        try:
            answer = super().contribute(request, call)
        except CallFailed:
            if getattr(self, "loss_reported", False):
                return {"sections": list(request["request"].get("prior_sections", []))}
            self.loss_reported = True
            raise
        self.loss_reported = False
        return answer


@mutant("P-SOURCE-UNAVAILABLE")
class VanishedIsUnknown(FileReader):
    """Reports a vanished file as an unknown failure."""

    def read(self):
        try:
            return super().read()
        except CallFailed as failure:
            raise context_failure("unknown", failure.message) from None


@mutant("P-ERROR-CODE")
class SourceUnavailableAsInternal(FileReader):
    """Sends source_unavailable with the INTERNAL code."""

    def read(self):
        try:
            return super().read()
        except CallFailed as failure:
            raise CallFailed("INTERNAL", failure.message, failure.context_error) from None


@mutant("P-ERROR-NOT-UNKNOWN")
class UnknownAsUNKNOWN(FileReader):
    """Sends its unknown failures (CountTokens down) as gRPC UNKNOWN."""

    def contribute(self, request, call):
        try:
            return super().contribute(request, call)
        except CallFailed as failure:
            if failure.code == "INTERNAL":
                raise CallFailed("UNKNOWN", failure.message, failure.context_error) from None
            raise


@mutant("P-ERROR-CATEGORIZED")
class UncategorizedFailures(FileReader):
    """Sends a ContextError whose category is left unspecified."""

    def read(self):
        try:
            return super().read()
        except CallFailed as failure:
            raise CallFailed(failure.code, failure.message,
                             {**failure.context_error, "category": "CONTEXT_ERROR_CATEGORY_UNSPECIFIED"}) from None


@mutant("P-CONTEXT-ERROR-FIELDS")
class FailureWithoutMessage(FileReader):
    """Sends a ContextError with an empty message."""

    def read(self):
        try:
            return super().read()
        except CallFailed as failure:
            raise CallFailed(failure.code, "", {**failure.context_error, "message": ""}) from None


@mutant("P-CONTEXT-ERROR-FIELDS", also=["P-ERROR-CATEGORIZED"])
class ErrorInfoInsteadOfContextError(ReshapesFailures, FileReader):
    """Sends its failures as the upstream SDK does: the category as a google.rpc.ErrorInfo reason, no ContextError."""

    def reshape(self, failure):
        return CallFailed(failure.code, failure.message, None, [error_info(failure)])


# --- the compactor ---------------------------------------------------------------------------------------------

@mutant("C-SUMMARIZE")
class CompactorOnlyCuts(Compactor):
    """Cuts each section short instead of summarizing it."""

    def summarized(self, section, kept, count):
        words = tokens.text_of(section["content"]).split(" ")
        text = " ".join(words[: max(1, len(words) // (4 if kept else 2))])
        return {**section, "content": text_block(text), "tokens": count(text_block(text)), "truncated": True}


@mutant("C-SUMMARIZE")
class CompactorTemplateSummaries(Compactor):
    """Writes the same words for every section it reduces, whatever it holds: "<label>, summarized." in place
    of each, and merged lines that only name their sections."""

    def summarized(self, section, kept, count):
        summary = text_block(f"{section['label']}, summarized.")
        if count(summary) >= count(section["content"]):
            return section
        return {**section, "content": summary, "tokens": count(summary), "truncated": True}

    def first_lead(self, section):
        return "summarized."


@mutant("P-TRUNCATED-FLAG")
class CompactorFlagsWhatItKeeps(Compactor):
    """Flags every section of a chain it reduced truncated, those it hands back whole too: the chain was cut
    down, but they were not."""

    def fit_chain(self, prior, budget, count):
        chain = super().fit_chain(prior, budget, count)
        return chain if chain is prior else [{**s, "truncated": True, "tokens": count(s["content"])} for s in chain]


@mutant("P-TRUNCATED-FLAG")
class CompactorNotesWhatItKeeps(Compactor):
    """Hands back the sections of a chain it reduced that it keeps whole with a note of its own in brackets on a
    line after their text ("[kept as it came]"), and flags them truncated: the chain was cut down, they were not."""

    NOTE = "\n[kept as it came]"

    def fit_chain(self, prior, budget, count):
        chain = super().fit_chain(prior, budget, count)
        if chain is prior:
            return chain
        kept = [s in prior and tokens.is_text_only(s["content"]) for s in chain]
        noted = [{**s, "content": text_block(tokens.text_of(s["content"]) + self.NOTE)} if k else s
                 for s, k in zip(chain, kept)]
        if self.total(noted, count) > budget:
            return chain
        return [{**s, "truncated": True, "tokens": count(s["content"])} if k else s for s, k in zip(noted, kept)]


@mutant("P-TRUNCATED-FLAG")
class CompactorCutsUnflagged(CompactorCutsAsLastResort):
    """As its last resort keeps the first section of the chain cut to the words that fit, and flags it not
    truncated."""

    def flag(self, cut):
        return False


@mutant("P-SECTION-LABEL", also=["P-TOKENS-COUNTTOKENS"])
class CompactorBlanksLabels(Compactor):
    """Writes each summary without a label, as a rewrite that builds a new section from the text alone would.
    A section already as short as its summary comes back as given but for the blank label, so the figure it was
    given (a generated chain's 0, say) becomes one the compactor states for a section it wrote."""

    def summarized(self, section, kept, count):
        return {**super().summarized(section, kept, count), "label": ""}


@mutant("P-STATIC-SECTION-HOLDS")
class MergedTakesFirstStability(Compactor):
    """Its last-resort merge takes the stability of the first section it merges, static as often as not,
    though the merged section holds a line of every section, the dynamic ones too."""

    def merged(self, prior, budget, count):
        return [{**s, "stability": prior[0]["stability"]} for s in super().merged(prior, budget, count)]


@mutant("C-CHAIN-FITS")
class CompactorStopsEarly(Compactor):
    """Summarizes once and returns the result whether or not it fits."""

    def fit_chain(self, prior, budget, count):
        if self.total(prior, count) <= budget:
            return prior
        return [self.summarized(s, None, count) for s in prior]


@mutant("C-CHAIN-FITS")
class CompactorOneTokenOver(Compactor):
    """Fits the chain to one token more than its budget."""

    def fit_chain(self, prior, budget, count):
        return super().fit_chain(prior, budget + 1, count)


@mutant("C-CHAIN-FITS")
class CompactorTrustsStatedTokens(Compactor):
    """Decides whether the chain fits by the token figures the prior sections state, not by counting them."""

    def fit_chain(self, prior, budget, count):
        return prior if sum(s["tokens"] for s in prior) <= budget else super().fit_chain(prior, budget, count)


@mutant("C-CHAIN-FITS")
class CompactorOneTokenOverWithStatus(AppendsStatus):
    """Appends a status section of its own, and fits the rest of the chain to one token more than the status
    leaves: over by one whenever the chain it keeps lands exactly there."""

    def fit_rest(self, prior, room, count):
        return super().fit_rest(prior, room + 1, count)


@mutant("C-CHAIN-FITS")
class CompactorTrustsStatedTokensWithStatus(AppendsStatus):
    """Appends a status section of its own, and decides whether the rest of the chain fits by the token
    figures the prior sections state, not by counting them."""

    def fit_rest(self, prior, room, count):
        return prior if sum(s["tokens"] for s in prior) <= room else super().fit_rest(prior, room, count)


@mutant("C-CHAIN-FITS")
class CompactorGivesUpWhenOverBudget(Compactor):
    """Answers budget_exceeded whenever the chain it is handed is over its budget, and so never compacts."""

    def fit_chain(self, prior, budget, count):
        if self.total(prior, count) > budget:
            raise context_failure("budget_exceeded", f"the chain it was handed does not fit {budget} tokens")
        return prior


@mutant("C-SUMMARIZE")
class CompactorEmptiesTheChain(Compactor):
    """Drops every section whenever the chain does not fit: it always fits, and nothing is kept."""

    def fit_chain(self, prior, budget, count):
        return prior if self.total(prior, count) <= budget else []


@mutant("C-REWRITTEN-HISTORY-TEXT")
class CompactorInventsAttachments(Compactor):
    """Attaches an image of its own to the summary of the conversation."""

    def rewrite_history(self, history):
        rewritten = super().rewrite_history(history)
        rewritten[0]["content"].append({"image": {"data": "R0lGODlhAQABAAAAACw=", "media_type": "image/gif"}})
        return rewritten


def _absent_budget_as_one(request: dict) -> dict:
    """The request with an absent token_budget (how proto3 sends 0) read as 1."""
    req = request["request"]
    return {**request, "request": {**req, "token_budget": req.get("token_budget", 1)}}


@mutant("P-WITHIN-BUDGET")
class ReadsZeroBudgetAsOne(FileReader):
    """Takes a token_budget of 0, which proto3 leaves off the wire, for 1."""

    def contribute(self, request, call):
        return super().contribute(_absent_budget_as_one(request), call)


@mutant("C-CHAIN-FITS")
class CompactorReadsZeroBudgetAsOne(Compactor):
    """Takes a token_budget of 0, which proto3 leaves off the wire, for 1."""

    def contribute(self, request, call):
        return super().contribute(_absent_budget_as_one(request), call)


@mutant("C-REWRITTEN-HISTORY-MESSAGES")
class CompactorSummaryMessageMalformed(Compactor):
    """Writes its summary of the conversation as a message with no role, and a second one with no content."""

    def rewrite_history(self, history):
        summary, *tail = super().rewrite_history(history)
        return [{**summary, "role": "ROLE_UNSPECIFIED"}, {"role": "ROLE_USER", "content": [], "id": ""}, *tail]


@mutant("P-TOKENS-COUNTTOKENS", also=["C-CHAIN-FITS"])
class CompactorEstimates(Compactor):
    """Counts the chain with its own characters/4 estimate."""

    def contribute(self, request, call):
        estimate = lambda content: (len(tokens.text_of(content)) + 3) // 4
        req = request["request"]
        reply = {"sections": self.fit_chain(req.get("prior_sections", []), int(req.get("token_budget", 0)), estimate)}
        if self.history_due(req):
            reply["rewritten_history"] = self.rewrite_history(req["conversation_history"])
        return reply


# --- past a size (the scale vectors, vectors/provider/scale/, and the property tests catch these) ------

@mutant("P-WITHIN-BUDGET")
class IgnoresBudgetAfterLongChains(FileReader):
    """Returns its whole file, whatever the budget, once three or more sections precede it."""

    def contribute(self, request, call):
        if len(request["request"]["prior_sections"]) >= 3:
            request = {"request": {**request["request"], "token_budget": 10**9}}
        return super().contribute(request, call)


@mutant("C-CHAIN-FITS")
class CompactorGivesUpOnLongChains(Compactor):
    """Hands back a chain of four or more sections unchanged, over budget or not."""

    def fit_chain(self, prior, budget, count):
        return prior if len(prior) >= 4 else super().fit_chain(prior, budget, count)


# --- caught only by the property tests ------------------------------------------------------------

@mutant("P-OWN-SECTIONS-ONLY", property_only=True)
class NormalizesLongPriorText(FileReader):
    """Normalizes to NFC the text of prior sections longer than 40 characters."""

    def contribute(self, request, call):
        reply = super().contribute(request, call)
        n = len(request["request"]["prior_sections"])
        tidy = lambda b: {"text": {"text": unicodedata.normalize("NFC", b["text"]["text"])}} \
            if "text" in b and len(b["text"]["text"]) > 40 else b
        return {"sections": [{**s, "content": [tidy(b) for b in s["content"]]} for s in reply["sections"][:n]]
                + reply["sections"][n:]}


# --- escapes found by the red team of issue 22, each class closed more generally --------------------------

@mutant("P-TRUNCATED-FLAG")
class TruncatedWhenAltered(FileReader):
    """Says truncated whenever what it returns differs from the file as read: stripping front matter or a
    comment counts as cutting for it."""

    def own_sections(self, text, budget, count):
        sections = super().own_sections(text, budget, count)
        raw = self.read()
        return [{**s, "truncated": True} for s in sections] if self.strip(raw) != raw else sections


@mutant("P-TRUNCATED-FLAG")
class HeadingMarkersCountAsCut(StripsHeadingMarkers):
    """Serves its file without the markdown heading markers and says truncated whenever that changed the text,
    the whole file too: leaving out a heading's #s counts as cutting for it."""

    def own_sections(self, text, budget, count):
        sections = super().own_sections(text, budget, count)
        plain = FileReader.strip(self, self.read())
        return [{**s, "truncated": True} for s in sections] if self.strip(plain) != plain else sections


@mutant("P-TRUNCATED-FLAG")
class HeadingMarkersCutUnflagged(StripsHeadingMarkers):
    """Serves its file without the markdown heading markers, and never sets truncated, even when it cut."""

    def section(self, label, text, count, truncated):
        return super().section(label, text, count, False)


@mutant("P-SECTION-LABEL")
class LabelsFromFirstHeading(FileReader):
    """Labels its section with the text of the file's first heading, which may be empty once stripped."""

    def own_section(self, text, budget, count):
        section = super().own_section(text, budget, count)
        heading = next((line for line in text.splitlines() if line.startswith("#")), None)
        if section and heading is not None:
            section["label"] = heading.lstrip("#").strip()
        return section


@mutant("P-OWN-SECTIONS-ONLY", also=["P-FULL-CHAIN"])  # where every foreign section carries its label
class ReplacesByLabel(FileReader):
    """Takes any prior section labelled like its own for its earlier one, whoever wrote it, and drops it."""

    def contribute(self, request, call):
        reply = super().contribute(request, call)
        n = len(request["request"].get("prior_sections", []))
        return {"sections": [s for s in reply["sections"][:n] if s["label"] != self.label] + reply["sections"][n:]}


@mutant("P-OWN-SECTIONS-ONLY")
class FillsInPriorDefaults(FileReader):
    """Reads prior sections into a model of its own and writes them back with defaults for what was unset: a
    figure of 0 recounted, an unspecified stability taken for static."""

    def contribute(self, request, call):
        reply = super().contribute(request, call)
        n = len(request["request"].get("prior_sections", []))
        count = self.counter(call, request["request"])
        filled = [{**s, "tokens": s.get("tokens") or count(s["content"]),
                   "stability": s.get("stability") if s.get("stability") in ("STABILITY_STATIC", "STABILITY_DYNAMIC")
                   else "STABILITY_STATIC"} for s in reply["sections"][:n]]
        return {"sections": filled + reply["sections"][n:]}


@mutant("P-OWN-SECTIONS-ONLY")
class NormalizesPriorLineEndings(FileReader):
    """Turns Windows and old Mac line endings in prior sections into \\n, as a text-mode copy would."""

    def contribute(self, request, call):
        reply = super().contribute(request, call)
        n = len(request["request"].get("prior_sections", []))
        unix = lambda b: {"text": {"text": b["text"]["text"].replace("\r\n", "\n").replace("\r", "\n")}} \
            if "text" in b else b  # noqa: E731
        prior = [{**s, "content": [unix(b) for b in s["content"]]} for s in reply["sections"][:n]]
        return {"sections": prior + reply["sections"][n:]}


@mutant("P-WITHIN-BUDGET")
class LetsAnEstimateDecide(FileReader):
    """Returns the whole file, counted by CountTokens, whenever twice a bytes/4 estimate fits the budget: the
    estimate runs low on text of short words."""

    def own_section(self, text, budget, count):
        whole = "\n\n".join(paragraphs(text))
        if whole and 2 * tokens.fallback_count(text_block(whole)) <= budget:
            return self.section(self.label, whole, count(text_block(whole)), False)
        return super().own_section(text, budget, count)


@mutant("P-CAP-CONFIG-SCHEMA")
class SchemaLeavesOutAField(FileReader):
    """Its config_schema declares root only, though Configure reads path as well."""
    CAPABILITIES = _with(FileReader.CAPABILITIES, config_schema={
        "attributes": FileReader.CAPABILITIES["config_schema"]["attributes"][:1]})


@mutant("C-REWRITTEN-HISTORY-TEXT")
class CompactorElidesKeptToolOutput(Compactor):
    """Shortens the tool results of the recent messages it keeps, inside their tool_result blocks."""

    def rewrite_history(self, history):
        def elided(block):
            if "tool_result" not in block:
                return block
            return {"tool_result": {**block["tool_result"], "content": [{"text": {"text": "[output elided]"}}]}}
        rewritten = super().rewrite_history(history)
        return rewritten[:1] + [{**m, "content": [elided(b) for b in m["content"]]} for m in rewritten[1:]]


@mutant("C-CHAIN-FITS")
class CompactorKeepsCountsByLabel(Compactor):
    """Remembers each section's count by provider and label from one firing to the next, though a static
    section's content may change."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: dict[tuple, int] = {}

    def total(self, chain, count):
        return sum(self.figures.setdefault((s["provider"], s["label"]), count(s["content"])) for s in chain)


@mutant("P-FULL-CHAIN")
class ReaderSkipsWhenItsLabelIsTaken(FileReader):
    """Hands the chain back unchanged when a prior section, whoever's, carries its label: "its" section is
    there already (red-team R28)."""

    def contribute(self, request, call):
        prior = request["request"].get("prior_sections") or []
        if any(s.get("label") == self.label for s in prior):
            return {"sections": prior}
        return super().contribute(request, call)


class _SkipsEmptyBlocks(Counter):
    def ask(self, texts, model_id):
        return super().ask(tuple(t for t in texts if t) or ("",), model_id)


@mutant("C-CHAIN-FITS")
class CompactorCountsWithoutEmptyBlocks(Compactor):
    """Leaves a section's empty text blocks out of what it asks CountTokens (they hold no text), which a
    tokenizer that counts where blocks end still counts (red-team R28)."""

    def counter(self, call, request):
        return _SkipsEmptyBlocks(call, super().counter(call, request).model_id)  # for the model the reference counts for


@mutant("C-CHAIN-FITS")
class CompactorKeepsStaticCountsByLabel(Compactor):
    """Keeps only static sections' counts by provider and label ("unchanged for the session"), so it counts
    every other section anew and is wrong only when a static section's content changes: a case whose catch
    needs no counts left by an earlier case (same-label-new-content is `fresh`)."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: dict[tuple, int] = {}

    def total(self, chain, count):
        return sum(self.figures.setdefault((s["provider"], s["label"]), count(s["content"]))
                   if s.get("stability") == "STABILITY_STATIC" and s["provider"] != self.NAME else count(s["content"])
                   for s in chain)


@mutant("P-COUNTTOKENS-TEXT-ONLY")
class CompactorCountsHistoryWhenUnset(Compactor):
    """Takes a history_tokens of 0 for a missing figure and counts the history itself, every block included."""

    def contribute(self, request, call):
        req = request["request"]
        history = req.get("conversation_history") or []
        if history and not int(req.get("history_tokens", 0)):
            content = [b for m in history for b in m.get("content", [])]
            try:
                req = {**req, "history_tokens": int(call("CountTokens", None, {"content": content})["count"])}
            except CallFailed:
                pass
        return super().contribute({**request, "request": req}, call)


@mutant("P-SECTION-PROVIDER")
class CompactorMergesUnderAStrangeName(Compactor):
    """Writes its merged section under a name of its own making, neither its declared one nor an owner's."""

    def merged(self, prior, budget, count):
        return [{**s, "provider": f"{self.NAME}/merged"} for s in super().merged(prior, budget, count)]


@mutant("P-WITHIN-BUDGET")
class NearbyFilesEachGetTheBudget(LoadsNearTouchedFiles):
    """Fits each nearby file into the whole budget, as if the root section had used none of it."""

    def room(self, budget, sections):
        return budget


@mutant("P-SECTION-PROVIDER")
class NearbyFilesUnderTheirFolder(LoadsNearTouchedFiles):
    """Names the sections of nearby files after their folder, not after the provider."""

    def own_sections(self, text, budget, count):
        return [s if s["label"] == self.label else {**s, "provider": f"{self.NAME}:{Path(s['label']).parent}"}
                for s in super().own_sections(text, budget, count)]


@mutant("P-STATIC-SECTION-HOLDS")
class KeepsNearFilesAFiringLonger(LoadsNearTouchedFiles):
    """Keeps the sections of files near a touched file for one firing after files_touched stops naming it, and
    drops them on the next: two firings of the same request, after the same files touched, differ."""

    last: list[str] = []

    def contribute(self, request, call):
        now = request["request"].get("files_touched") or []
        self.last, before = list(now), self.last
        self.extra = [name for name in before if name not in now]
        return super().contribute(request, call)

    def nearby(self):
        now, self.touched = self.touched, self.touched + self.extra
        try:
            return super().nearby()
        finally:
            self.touched = now



def _unhandled(error: Exception) -> CallFailed:
    """What a gRPC server answers for an exception its handler did not catch: UNKNOWN, no ContextError."""
    return CallFailed("UNKNOWN", f"Exception calling application: {type(error).__name__}: {error}", None)


@mutant("P-ERROR-CATEGORIZED", also=["C-CHAIN-FITS", "P-CONTEXT-ERROR-FIELDS", "P-ERROR-NOT-UNKNOWN"])
class CompactorThresholdOnlyFromConfigure(Compactor):
    """Has no history threshold until Configure gives it one: a Contribute that comes first with a conversation
    longer than the kept tail fails as an unhandled exception, with no category."""

    def history_due(self, req):
        if not getattr(self, "configured", False) and len(req.get("conversation_history") or []) > self.KEEP_TAIL:
            raise _unhandled(AttributeError("'CompactorThresholdOnlyFromConfigure' object has no attribute 'threshold'"))
        return super().history_due(req)

    def configure(self, request, call):
        self.configured = True
        return super().configure(request, call)


@mutant("P-ERROR-CATEGORIZED", also=["P-CONTEXT-ERROR-FIELDS", "P-ERROR-NOT-UNKNOWN"])
class CompactorDividesByTheCeiling(Compactor):
    """Compares the history's share of the ceiling by dividing by it, so a model with an effective_ceiling of 0
    and a conversation longer than the kept tail fails the Contribute as an unhandled exception."""

    def history_due(self, req):
        history = req.get("conversation_history") or []
        try:
            share = int(req.get("history_tokens", 0)) * 100 / int(req["model_target"]["effective_ceiling"])
        except ZeroDivisionError as error:
            raise _unhandled(error) from None
        return len(history) > self.KEEP_TAIL and share > self.threshold


# --- stability: sections that change where their input gave no reason (R-STATIC-SECTION-HOLDS) --------------

class _StampsItsSection(FileReader):
    """Adds a sentence to the end of its section's text where the budget leaves room for it (so that it breaks
    nothing but stability); what the sentence says is each mutant's."""

    def stamp(self, request: dict) -> str:
        raise NotImplementedError

    def contribute(self, request, call):
        self.request = request["request"]
        return super().contribute(request, call)

    def own_section(self, text, budget, count):
        section = super().own_section(text, budget, count)
        if section:
            stamped = text_block(f"{tokens.text_of(section['content'])}\n\n{self.stamp(self.request)}")
            if count(stamped) <= budget:
                section = {**section, "content": stamped, "tokens": count(stamped)}
        return section


@mutant("P-STATIC-SECTION-HOLDS")
class CountsItsFirings(_StampsItsSection):
    """Ends its static section with how many times it has been fired since it started: a counter no two
    firings share, the very same request repeated included."""

    fired = 0

    def stamp(self, request):
        self.fired += 1
        return f"Served {self.fired} times so far."


@mutant("P-STATIC-SECTION-HOLDS")
class StampsItsTurn(_StampsItsSection):
    """Ends its static section with the turn id it was fired for."""

    def stamp(self, request):
        return f"Served for turn {request.get('turn_id', '')}."


@mutant("P-STATIC-SECTION-HOLDS")
class StampsTheKernelFigures(_StampsItsSection):
    """Ends its static section with the kernel's figures of the conversation and of the last turn's context."""

    def stamp(self, request):
        return (f"The conversation counts {request.get('history_tokens', 0)} tokens, the last turn's context "
                f"{request.get('assembled_tokens_last_turn', 0)}.")


@mutant("P-STATIC-SECTION-HOLDS")
class SparesANearlyFullContext(FileReader):
    """Takes two thirds of its budget once either kernel figure passes three quarters of the effective ceiling,
    to leave the model room: its static section is another cut of the same file under the same request."""

    def contribute(self, request, call):
        req = request["request"]
        ceiling = (req.get("model_target") or {}).get("effective_ceiling") or 0
        pressure = max(req.get("history_tokens") or 0, req.get("assembled_tokens_last_turn") or 0)
        if ceiling and 4 * pressure > 3 * ceiling:
            request = {**request, "request": {**req, "token_budget": (req.get("token_budget") or 0) * 2 // 3}}
        return super().contribute(request, call)


@mutant("P-STATIC-SECTION-HOLDS")
class MarksItsSectionKeptLater(FileReader):
    """From its ninth firing since the last Configure, says in its static section's label that it is kept from
    before: a label that follows how often it was fired, which only a long session shows."""

    def configure(self, request, call):
        self.firings = 0
        return super().configure(request, call)

    def own_sections(self, text, budget, count):
        self.firings = getattr(self, "firings", 0) + 1
        sections = super().own_sections(text, budget, count)
        return [{**s, "label": f"{s['label']} [kept]"} for s in sections] if self.firings > 8 else sections


@mutant("P-SECTION-STABILITY-DECLARED")
class NotesTheLastTurnSize(FileReader):
    """Declared static, adds a section marked dynamic saying how large the last turn's context was, where the
    kernel says it was anything and the budget leaves room: content that moves with the kernel's figures, which
    no static plugin's does, whatever hint its section carries."""

    def contribute(self, request, call):
        self.assembled = int(request["request"].get("assembled_tokens_last_turn", 0))
        return super().contribute(request, call)

    def own_sections(self, text, budget, count):
        sections = super().own_sections(text, budget, count)
        note = text_block(f"The context of the last turn came to {self.assembled} tokens.")
        if self.assembled and count(note) <= budget - sum(s["tokens"] for s in sections):
            sections.append({**self.section("Last turn", "", count(note), False), "content": note,
                             "stability": "STABILITY_DYNAMIC"})
        return sections


@mutant("P-STATIC-SECTION-HOLDS")
class StatesTheFiguresStatic(NotesTheLastTurnSize):
    """Adds a section saying how large the last turn's context was, as NotesTheLastTurnSize does, and marks it
    static: a static section that moves with the kernel's figures."""

    def own_sections(self, text, budget, count):
        return [{**s, "stability": "STABILITY_STATIC"} for s in super().own_sections(text, budget, count)]


@mutant("P-STATIC-SECTION-HOLDS", "P-SELF-REDUCE")
class GivesWayToTheConversation(FileReader):
    """Takes the kernel's count of the conversation off its budget, so that its static section is cut, then gone,
    as the conversation grows, though its budget is its own."""

    def contribute(self, request, call):
        self.history = int(request["request"].get("history_tokens", 0))
        return super().contribute(request, call)

    def own_sections(self, text, budget, count):
        return super().own_sections(text, max(budget - self.history, 0), count)


@mutant("P-SELF-REDUCE")
class TakesItsBudgetForTheChains(FileReader):
    """Reads its budget as one for the whole chain, a compactor's: it fits its section into what the prior
    sections leave of it, and contributes nothing where they take it all, though its budget holds its file."""

    def contribute(self, request, call):
        self.taken = sum(int(s.get("tokens", 0)) for s in request["request"].get("prior_sections", []))
        return super().contribute(request, call)

    def own_sections(self, text, budget, count):
        return super().own_sections(text, max(budget - self.taken, 0), count)


@mutant("P-STATIC-SECTION-HOLDS")
class RanksFromAnotherParagraphEachTime(KeepsLongestParagraphs):
    """Selects whole paragraphs under a budget that cannot hold its file, ranking them from another paragraph on
    every firing: the same request brings another selection of its source's own words each time."""

    fired = 0

    def ranked(self, pieces):
        self.fired += 1
        start = self.fired % len(pieces)
        return [(start + i) % len(pieces) for i in range(len(pieces))]


@mutant("P-STATIC-SECTION-HOLDS")
class StatesTheFilesTouched(NotesFilesTouched):
    """Adds a section naming the files touched, as NotesFilesTouched does, and marks it static: its words change
    with every new list of files touched."""

    def own_sections(self, text, budget, count):
        return [{**s, "stability": "STABILITY_STATIC"} for s in super().own_sections(text, budget, count)]


@mutant("P-STATIC-SECTION-HOLDS")
class SkipsWhatADynamicSectionHolds(SkipsWhatStaticSectionsHold):
    """Adds nothing where another provider's prior section holds its file's text, a dynamic one too: its static
    section comes and goes with that section's words."""

    HOLDERS = ("STABILITY_STATIC", "STABILITY_DYNAMIC")


@mutant("P-STATIC-SECTION-HOLDS")
class MergedUnderItsDigest(Compactor):
    """Merges as a last resort under the stability of the first section it merges, and labels the merged section
    with a digest of its text: a label no two texts share."""

    def merged(self, prior, budget, count):
        return [{**s, "stability": prior[0]["stability"],
                 "label": f"{self.MERGED_LABEL} {hashlib.sha256(tokens.text_of(s['content']).encode()).hexdigest()[:8]}"}
                for s in super().merged(prior, budget, count)]


@mutant("P-STATIC-SECTION-HOLDS")
class LabelsStaticMergeByTurn(MergesStaticApart):
    """Merges static sections apart, as MergesStaticApart does, under a label that names the turn."""

    def contribute(self, request, call):
        self.turn = request["request"].get("turn_id", "")
        return super().contribute(request, call)

    def merged(self, prior, budget, count):
        return [{**s, "label": f"{s['label']} (turn {self.turn})"} if s["label"] == self.STATIC_LABEL else s
                for s in super().merged(prior, budget, count)]



@mutant("P-TRUNCATED-FLAG")
class MarksTheCutWithAnEllipsis(MarksTheCutInTheText):
    """Says where it cut with an ellipsis right after the last word it kept, and leaves the flag false."""

    MARK = "…"


@mutant("P-TRUNCATED-FLAG")
class MarksTheCutWithAClosedNote(MarksTheCutInTheText):
    """Says where it cut with a bracketed ellipsis closed by a full stop (" [...]."), and leaves the flag false."""

    MARK = " [...]."


@mutant("P-TRUNCATED-FLAG")
class CutBehindItsOwnHeading(HeadingStaysWithItsParagraph):
    """Keeps whole paragraphs (a heading with the one after it) while they fit, then puts a heading of its own
    ("## (continued)") before the words of the next one that fit, and flags nothing truncated: a verbatim piece
    of the file cut inside a sentence, with a line of its own in the middle."""

    HEADING = "## (continued)"

    def own_sections(self, text, budget, count):
        units = self.units(paragraphs(text))
        fits = lambda t: count(text_block(t)) <= budget  # noqa: E731
        kept = 0
        while kept < len(units) and fits("\n\n".join(units[:kept + 1])):
            kept += 1
        if not kept or kept == len(units):
            return FileReader.own_sections(self, text, budget, count)
        head, words = "\n\n".join(units[:kept]) + f"\n\n{self.HEADING}\n\n", units[kept].split(" ")
        n = 0
        while n < len(words) - 1 and fits(head + " ".join(words[:n + 1])):
            n += 1
        if not n:
            return FileReader.own_sections(self, text, budget, count)
        final = head + " ".join(words[:n])
        return [self.section(self.label, final, count(text_block(final)), False)]


@mutant("P-TRUNCATED-FLAG")
class CompactorFlagsAChainThatFits(Compactor):
    """Flags every section truncated, those of a chain that already fits and comes back whole too."""

    def fit_chain(self, prior, budget, count):
        return [{**s, "truncated": True} for s in super().fit_chain(prior, budget, count)]


# --- the truncated flag and stripping, escapes of red team r30, each closed by vectors of a general shape ----

class _ReflagsItsCut(FileReader):
    """Cuts as the reference does, then decides the flag of a cut section by a rule of its own (`still_whole`)."""

    def own_section(self, text, budget, count):
        section = super().own_section(text, budget, count)
        if section and section["truncated"] and self.still_whole(tokens.text_of(section["content"]), text, count):
            return {**section, "truncated": False}
        return section

    def still_whole(self, kept, text, count):
        raise NotImplementedError


@mutant("P-TRUNCATED-FLAG")
class TakesAClauseMarkForAnEnd(_ReflagsItsCut):
    """Takes a cut right after a comma, semicolon, colon or closing bracket for a natural stopping place and
    flags it not truncated: none of those ends a sentence, so the list or clause it stops in is cut short."""

    CLAUSE_END = re.compile(r"[,;:)]\s*\Z")

    def still_whole(self, kept, text, count):
        return bool(self.CLAUSE_END.search(kept))


@mutant("P-TRUNCATED-FLAG")
class NearlyAllIsWhole(_ReflagsItsCut):
    """Flags a cut not truncated when what it kept counts at least nine tenths of the file's tokens: the flag
    says text is missing, however little."""

    def still_whole(self, kept, text, count):
        return 10 * count(text_block(kept)) >= 9 * count(text_block(text.strip()))


@mutant("P-TRUNCATED-FLAG")
class TruncatedOnlyWhenAParagraphIsLost(_ReflagsItsCut):
    """Flags a cut truncated only when a paragraph break of the file is missing from what it kept: the words cut
    off the end of a one-paragraph file go unflagged."""

    def still_whole(self, kept, text, count):
        return kept.count("\n\n") >= text.strip().count("\n\n")


# --- content shapes and sizes: tabs, fenced code, one long paragraph, bulky tool output ----------------------

_FENCE_LINE = re.compile(r"^[ \t]*(`{3,}|~{3,})", re.MULTILINE)


@mutant("P-TOKENS-COUNTTOKENS", also=["P-WITHIN-BUDGET"])
class ReaderClosesOpenFenceAfterCounting(FileReader):
    """When its cut leaves a code block open (an odd number of fence lines), writes the closing fence onto the
    section it has already counted: the figure no longer matches the text, which may outgrow the budget."""

    def own_section(self, text, budget, count):
        section = super().own_section(text, budget, count)
        if section is not None:
            body = tokens.text_of(section["content"])
            fences = _FENCE_LINE.findall(body)
            if len(fences) % 2:
                section["content"] = text_block(f"{body}\n{fences[-1]}")
        return section


@mutant("P-TOKENS-COUNTTOKENS", also=["P-WITHIN-BUDGET"])
class ReaderIndentsWithSpacesAfterCounting(FileReader):
    """Turns each tab of its section into two spaces once the section is counted."""

    def own_section(self, text, budget, count):
        section = super().own_section(text, budget, count)
        if section is not None:
            section["content"] = text_block(tokens.text_of(section["content"]).replace("\t", "  "))
        return section


@mutant("P-WITHIN-BUDGET")
class ReaderCutsLongParagraphByBytes(FileReader):
    """A first paragraph of more than 2000 characters that does not fit is cut at a word boundary near four bytes
    per token of budget, its own rule of thumb, and then counted: a text of short words counts far more."""

    LONG = 2000

    def own_section(self, text, budget, count):
        pieces = paragraphs(text)
        if not pieces or len(pieces[0]) <= self.LONG or count(text_block(pieces[0])) <= budget:
            return super().own_section(text, budget, count)
        head = pieces[0].encode("utf-8")[:4 * budget].decode("utf-8", "ignore")
        kept = head.rsplit(" ", 1)[0] if " " in head else ""
        if not kept.strip():
            return None
        return self.section(self.label, kept, count(text_block(kept)), True)


@mutant("C-REWRITTEN-HISTORY-TEXT")
class CompactorClipsBulkyToolResults(Compactor):
    """In the recent messages it keeps, clips a tool result's text past 1 KiB to its first 1 KiB, inside the
    tool_result block: a block of another kind it wrote itself."""

    LIMIT = 1024

    def rewrite_history(self, history):
        def clipped(block):
            result = block.get("tool_result")
            if not result:
                return block
            inner = [{"text": {"text": b["text"]["text"][:self.LIMIT]}}
                     if "text" in b and len(b["text"].get("text", "")) > self.LIMIT else b
                     for b in result.get("content", [])]
            return {"tool_result": {**result, "content": inner}}
        rewritten = super().rewrite_history(history)
        return rewritten[:1] + [{**m, "content": [clipped(b) for b in m.get("content", [])]} for m in rewritten[1:]]
