"""Judging a provider transcript: the invariants every step must hold, then
the vector's explicit expectations. Each finding cites one requirement."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import Enum, auto
from functools import cached_property

from conformance.engine import config_probes
from conformance.engine.expectations import Language, NotEvaluable
from conformance.engine.matching import in_place, match
from conformance.data.provider_cases import DEFAULT_TOKENIZER
from conformance.engine.provider_driver import ProviderTranscript, StepRecord
from conformance.engine.results import Finding
from conformance.data.manifest import Manifest
from conformance.wire import errors, tokens

COVERS = frozenset({
    "P-RPCS", "P-DESCRIBE", "P-CAP-DEFAULT-BUDGET", "P-CAP-STABILITY", "P-CAP-STATIC-PROPERTIES",
    "P-CAP-CONFIG-SCHEMA", "P-FULL-CHAIN", "P-OWN-SECTIONS-ONLY", "P-NO-REWRITE-UNLESS-COMPACTOR",
    "P-SECTION-LABEL", "P-SECTION-PROVIDER", "P-SECTION-STABILITY", "P-TEXT-ONLY", "P-WITHIN-BUDGET",
    "P-TOKENS-COUNTTOKENS", "P-COUNTTOKENS-TEXT-ONLY", "P-ERROR-CATEGORIZED", "P-CONTEXT-ERROR-FIELDS",
    "P-ERROR-CODE", "P-ERROR-NOT-UNKNOWN", "P-TRUNCATED-FLAG", "C-CHAIN-FITS", "C-SUMMARIZE", "C-REWRITTEN-HISTORY-TEXT",
    "C-REWRITTEN-HISTORY-MESSAGES", "P-SECTION-STABILITY-DECLARED", "P-STATIC-SECTION-HOLDS",
})
REQUIRED_OPS = ("get_capabilities", "configure", "contribute", "describe")
SUMMARY_ROOM = 20  # tokens: below this, a budget may leave no room for any summary (R-SUMMARIZE-EVIDENCE)
STABILITIES = ("STABILITY_STATIC", "STABILITY_DYNAMIC")
# The capabilities the spec fixes for the plugin's life (context/protocol.md#getcapabilities); the others
# (default_token_budget, config_schema) may change, after a Configure for instance.
STATIC_CAPABILITIES = ("stability", "compactor")
ATTRIBUTE_TYPES = frozenset(config_probes.KIND_OF_TYPE)  # config.v1.AttrType
# The kernel's figures: they tell a compactor when to compact (context/data-types.md#compactor-timing-signals),
# and any other provider nothing its sections may follow (R-STATIC-SECTION-HOLDS).
KERNEL_FIGURES = ("history_tokens", "assembled_tokens_last_turn")
FIXTURE_EDITS = ("write", "delete", "spoil")
# What a provider may put where it cut its text: an ellipsis, or a short note in brackets ("[...]", "[truncated]"),
# one or several ("… [truncated]"), each perhaps closed by a full stop or other closing mark ("[...].").
CUT_MARK = re.compile(r"(?:\s*(?:…|⋯|\.\.\.|[\[(][^\[\]()]{0,24}[\])])[.!?]?)+$")


def check_case(transcript: ProviderTranscript, manifest: Manifest) -> list[Finding]:
    checker = Checker(transcript, manifest)
    for record in transcript.records:
        checker.check(record)
    checker.check_summaries()
    return checker.findings


def static_changes(first: dict, now: dict) -> list[str]:
    """How the fixed capabilities in `now` differ from those first declared."""
    return [f"{key} changed from {first.get(key)} to {now.get(key)}" for key in STATIC_CAPABILITIES
            if first.get(key) != now.get(key)]


def schema_gaps(schema: dict, config: dict) -> list[str]:
    """The config keys that name no attribute of the ConfigSchema with a type, and any attribute of it
    without a name or a type: a kernel decodes the config by the schema's names and types."""
    attributes = schema.get("attributes", [])
    typed = {a.get("name") for a in attributes if a.get("type") in ATTRIBUTE_TYPES}
    untyped = [f"a type for {a.get('name')!r}" for a in attributes if a.get("name") and a.get("name") not in typed]
    return [key for key in config if key not in typed and key not in {a.get("name") for a in attributes}] + \
        untyped + (["a name for one of its attributes"] if any(not a.get("name") for a in attributes) else [])


def _kept(section: dict, prior: list[dict], field: str) -> bool:
    """Whether a prior section of the same provider has this section's value of field."""
    return (section["provider"], section[field]) in {(p["provider"], p[field]) for p in prior}


def _worded_out(section: dict) -> dict:
    """A section (or a message) with the words of its text blocks replaced by their shape (length, word count)."""
    return {**section, "content": [{"shape": [len(t := tokens.text_of([block])), len(t.split())]} if "text" in block
                                   else block for block in section.get("content", [])]}


def _chain_texts(chain: list[dict]) -> tuple:
    """A chain as what it says (provider, label, text): recounted figures or other flags change nothing."""
    return tuple((s["provider"], s["label"], tokens.text_of(s["content"])) for s in chain)


def own_sections(record: StepRecord, compactor: bool = False, name: str = "") -> list[dict]:
    """What the provider itself wrote. When the prior sections still sit in
    their places (edited or not), it is what follows them; otherwise, and for
    a compactor, everything that is not a prior section as sent. Handed
    sections under its own name (a kernel carrying the chain across turns),
    every section under its name is its own (R-PLACEMENT)."""
    prior, sections = record.request["prior_sections"], record.result["sections"]
    if not compactor and _handed_its_own(prior, name) and in_place(name, prior, sections):
        return [s for s in sections if s["provider"] == name]
    slots = [(s["provider"], s["label"]) for s in sections[:len(prior)]]
    if not compactor and slots == [(p["provider"], p["label"]) for p in prior]:
        return sections[len(prior):]
    return [s for s in sections if s not in prior]


class Counting:
    """Token figures and budgets, judged as the kernel the suite played counts (R-COUNT-FOR-THE-TARGET).

    The right figure for a section is the CountTokens count of its content for the request's model_target;
    a provider that asked without a model_ref may state the fallback count it was given instead. Either
    must have been served to the provider for that very text (in any firing: figures may be kept), so a
    local estimate, another model's count or a sum of per-block counts is not one. A section is measured
    against a budget by the kernel's count for the target, or by the fallback it honestly states."""

    def __init__(self, transcript: ProviderTranscript):
        self.models, self.served = transcript.models, transcript.served

    def model(self, record: StepRecord) -> str:
        return record.request["model_target"]["id"]

    def for_target(self, record: StepRecord, content: list[dict]) -> int:
        return tokens.count_with(self.models.get(self.model(record), DEFAULT_TOKENIZER), content)[0]

    def served_fallback(self, content: list[dict]) -> bool:
        return (tokens.text_of(content), "") in self.served

    def measure(self, record: StepRecord, section: dict) -> int:
        truth, fallback = self.for_target(record, section["content"]), tokens.fallback_count(section["content"])
        if section["tokens"] == fallback != truth and self.served_fallback(section["content"]):
            return fallback
        return truth

    def total(self, record: StepRecord, sections: list[dict]) -> int:
        return sum(self.measure(record, s) for s in sections)

    def figure_problem(self, record: StepRecord, section: dict) -> str | None:
        """Why a section's tokens is not a CountTokens figure for its content; "" when it is one the
        provider was given; None when it is the target's count but was never given to this process
        (kept from before the process, or worked out and right by chance: nothing tells which)."""
        content, figure, model = section["content"], section["tokens"], self.model(record)
        text = tokens.text_of(content)
        if not text:  # no text counts 0 under every tokenizer: nothing to ask (R-UNSERVABLE-REQUEST)
            return "" if figure == 0 else f"section {section['label']!r} holds no text but says tokens {figure}"
        truth, fallback = self.for_target(record, content), tokens.fallback_count(content)
        if (figure == truth and (text, model) in self.served) or (figure == fallback and self.served_fallback(content)):
            return ""
        if figure == truth:
            return None
        return (f"section {section['label']!r} says tokens {figure}; CountTokens gives {truth} for its content on "
                f"the request's model {model!r}" + (f" ({fallback} asked without a model_ref)" if
                                                    self.served_fallback(content) else "") + self._which(content, figure))

    def _which(self, content: list[dict], figure: int) -> str:
        """What a wrong figure is, when the suite can tell: another model's count, or per-block counts added up."""
        text = tokens.text_of(content)
        for model, tokenizer in self.models.items():
            if (text, model) in self.served and tokens.count_with(tokenizer, content)[0] == figure:
                return f", which is its count on model {model!r}"
        texts = [b for b in content if "text" in b]
        for model, tokenizer in [("", tokens.NO_TOKENIZER), *self.models.items()]:
            if len(texts) > 1 and sum(tokens.count_with(tokenizer, [b])[0] for b in texts) == figure:
                return ", which is the sum of its blocks' separate counts" + (f" on model {model!r}" if model else
                                                                               " without a model_ref")
        return ""


@dataclass(eq=False)
class Firing:
    """A reply as check_holding keeps it: its request, the sections of it that had to hold, where it was made."""
    request: dict
    held: tuple
    where: str
    verbatim: bool = False  # a file reader's sections that had to hold were all its fixtures' own lines

    @cached_property
    def exact(self) -> str:
        return json.dumps(self.request, sort_keys=True)

    @cached_property
    def loose(self) -> str:
        """The request but its turn id: another turn's firing of the very same request."""
        return json.dumps({k: v for k, v in self.request.items() if k != "turn_id"}, sort_keys=True)


def _steady_against(group: list[Firing], now: Firing) -> list[Firing]:
    """The firings of one input (as far as it gives reasons) that `now` is compared with when a provider may word
    one input anew each time: a request repeated (in one turn, or in another: two ways of repeating it) whose
    held sections came back unchanged every time shows the provider steady on it, and each firing of another
    request must then bring them unchanged too. Only the comparisons `now` takes part in: each earlier one was
    judged at its own step."""
    against: list[Firing] = []
    for key in (lambda f: f.exact, lambda f: f.loose):
        repeats: dict[str, list[Firing]] = {}
        for firing in group:
            repeats.setdefault(key(firing), []).append(firing)
        for same in repeats.values():
            if len(same) < 2 or len({f.held for f in same}) > 1:
                continue
            if any(f is now for f in same):
                against += [f for f in group if key(f) != key(now)]
            else:
                against.append(same[0])
    return against


def _differences(before: dict, now: dict) -> str:
    """What set two requests of one input (as far as it gives reasons) apart, in words."""
    what = ["its turn id"] if before["turn_id"] != now["turn_id"] else []
    what += [f"the kernel's {name}" for name in KERNEL_FIGURES if before.get(name) != now.get(name)]
    if before["prior_sections"] != now["prior_sections"]:
        what.append("the words of a dynamic prior section")
    if before.get("conversation_history") != now.get("conversation_history"):
        what.append("the words of the conversation")
    return f"whose request differed only in {' and '.join(what)}" if what else "on the very same request"


class Placement(Enum):
    """R-PLACEMENT: where a reply put the prior chain (the findings word each case where they are made)."""
    PREFIX = auto()   # an untouched prefix
    DELTA = auto()    # left out: the reply holds none of it, not even an edited copy
    MOVED = auto()    # changed some other way


def _handed_its_own(prior: list[dict], name: str) -> bool:
    return bool(name) and any(p["provider"] == name for p in prior)


def placement(prior: list[dict], sections: list[dict], name: str = "") -> Placement:
    if sections[:len(prior)] == prior or (_handed_its_own(prior, name) and in_place(name, prior, sections)):
        return Placement.PREFIX
    # A delta leaves out every section of other providers; its own handed-back ones it may drop (R-PLACEMENT).
    keys = {(s["provider"], s["label"]) for s in sections}
    foreign = [p for p in prior if p["provider"] != name] or prior
    return Placement.DELTA if not any((p["provider"], p["label"]) in keys for p in foreign) else Placement.MOVED


class Checker:
    def __init__(self, transcript: ProviderTranscript, manifest: Manifest):
        self.transcript, self.manifest = transcript, manifest
        self.capabilities = transcript.capabilities or {}
        self.compactor = bool(self.capabilities.get("compactor"))
        self.counting = Counting(transcript)
        self.findings: list[Finding] = []
        self.reductions: list[bool] = []  # per reply that reduced a chain over budget: did it summarize any?
        self.pieces: list[list[tuple]] = []  # per such reply, what it wrote in place of what: (original, residue)
        # R-EAGER-SOURCE: per input but its source (Checker.eager_input), what it last served for that input while
        # its source could be read (since the last Configure), and whether it has ever said the source was
        # unavailable (which shows it reads the source when called).
        self.served: dict[str, list[dict]] = {}
        self.said_unavailable = False
        self.contributed: set[tuple] = set()  # R-EVERY-FIRING-WHOLE: the firings it answered with sections
        # R-STATIC-SECTION-HOLDS: per requirement and per input as far as it gives reasons (Checker.reasons), the
        # firings since the last Configure with the sections of each that must hold; and whether a fixture was
        # changed since then (what it serves may then be any state of it, R-EAGER-SOURCE).
        self.firings: dict[tuple[str, str], list[Firing]] = {}
        # The files the firings since the last Configure named in files_touched (with their working directory): a
        # JIT reader may keep loaded what a file touched earlier brought in (context/README.md#firing-cadence--jit-loading).
        self.touched: frozenset[tuple[str, str]] = frozenset()
        # R-STATIC-SECTION-HOLDS: per budget, model and session and per (provider, label), the text a section marked static first had at a firing since
        # the last Configure whose budget held every file whole, and where.
        self.static_words: dict[tuple[str, str, str], tuple[str, str]] = {}  # several under one label: their texts joined
        self.edited = False
        self.configured = False  # R-COMPACTOR-MUST-FIT: the case's last Configure took the config it was sent

    def add(self, requirement: str, passed: bool, message: str, where: str) -> None:
        self.findings.append(Finding(requirement, passed, "" if passed else message, where))

    def check(self, record: StepRecord) -> None:
        where, invariants_from = record.where, len(self.findings)
        for count in record.counts:
            self.add("P-COUNTTOKENS-TEXT-ONLY", not count.refused.startswith("CountTokens content"),
                     "a CountTokens request held a non-text block", where)
        if record.failure is not None:
            self.check_failure(record, where)
        elif record.result is not None:
            self.answer_checks[record.step.kind](record, where)  # a step kind with no entry is a suite defect
        # One finding per fact: an assertion that finds what an invariant of this step already reported
        # (the same requirement, verdict and words) adds nothing.
        self.findings += [f for f in expectations(record, self, where) if f not in self.findings[invariants_from:]]
        self.note_configure(record)
        if record.probe is None:  # what a provider makes of a value it coerced is its own (R-CONFIG-OFF-SCHEMA)
            self.remember(record)

    def remember(self, record: StepRecord) -> None:
        """What later steps of the case are judged against (R-EAGER-SOURCE)."""
        if record.step.kind != "contribute":
            return
        self.touched = self.touched_so_far(record)
        if record.failure is not None:
            self.said_unavailable |= _claimed(record.failure) == "source_unavailable"
        elif record.result is not None and record.source_text is not None:
            self.served[self.eager_input(record)] = self.replayed(own_sections(record, self.compactor,
                                                                               self.manifest.name))

    def eager_input(self, record: StepRecord) -> str:
        """R-EAGER-SOURCE: the input a reader serving what it read earlier answers the same way whatever its source
        now holds: every request field but the turn id (and, but for a compactor, the kernel's figures: a static
        plugin's content follows neither, R-SECTION-STABILITY-DECLARED), the whole prior chain and conversation,
        the other fixture files, the files touched so far and whether CountTokens answers. Not the source: it is
        what may have gone."""
        request = record.request
        ignored = {"turn_id"} | (set() if self.compactor else set(KERNEL_FIGURES))
        return json.dumps([record.other_texts, record.counting_off, sorted(self.touched_so_far(record)),
                           {k: v for k, v in request.items() if k not in ignored}], sort_keys=True)

    def replayed(self, own: list[dict]) -> list[dict]:
        """What an eager reader's answer must repeat of its own sections: all of them, but those a provider declared
        dynamic marks dynamic, which may follow the turn (context/data-types.md#stability-hint--cache-prefix-ordering)
        and say nothing of its source."""
        if self.capabilities.get("stability") == "STABILITY_DYNAMIC":
            return [s for s in own if s["stability"] != "STABILITY_DYNAMIC"]
        return own

    @property
    def answer_checks(self) -> dict:
        """What each op's answer is checked for, beyond the vector's own expectations."""
        return {"get_capabilities": self.check_get_capabilities, "describe": self.check_describe,
                "contribute": self.check_contribute, "configure": lambda record, where: None}

    # -- failures --

    def check_failure(self, record: StepRecord, where: str) -> None:
        failure, kind = record.failure, record.step.kind
        if kind in REQUIRED_OPS:
            self.add("P-RPCS", failure["code"] != "UNIMPLEMENTED", f"{kind} is not implemented", where)
        if failure["code"] == "UNIMPLEMENTED":
            return  # a missing method, not a failure of the provider's work: P-RPCS judges it
        for requirement, judge in ERROR_FORM.items():
            try:
                problems = judge(failure)
            except NotEvaluable:
                continue
            self.add(requirement, not problems, "; ".join(problems), where)
        gave_up = self.gave_up(record)
        if gave_up:
            self.add("C-CHAIN-FITS", False, gave_up, where)

    def gave_up(self, record: StepRecord) -> str:
        """R-COMPACTOR-MUST-FIT: a compactor that fails a Contribute whose prior chain is over its budget has
        not produced the chain that fits, which always exists (the empty chain). Only a budget of 0 may be
        refused as invalid_request (R-UNSERVABLE-REQUEST); a step whose CountTokens the vector made fail
        leaves it no way to count (R-COUNTTOKENS-UNAVAILABLE). Only a configured compactor is judged: before
        any Configure of the case, or after one that failed, it may have no configuration to work by. Nor is
        the firing after a schema probe: the probe's Configure may have given its budget another meaning (a
        value it took), while the firing's budget is the default declared before the probe; what it makes of
        a probe is its own there, failing included, its failure's form aside (R-CONFIG-OFF-SCHEMA). "" when
        the failure is none of this."""
        if not self.compactor or record.step.kind != "contribute" or record.failure is None or record.counting_off \
                or not self.configured or record.probe is not None:
            return ""
        prior, budget = record.request["prior_sections"], record.request["token_budget"]
        total = self.counting.total(record, prior)
        category = _claimed(record.failure)
        if total <= budget or (budget == 0 and category == "invalid_request"):
            return ""
        return (f"handed a chain counting {total} against its budget of {budget}, it failed "
                f"({category or 'uncategorized'}, {record.failure['code']}) instead of returning a chain that fits; "
                "dropping sections always gives one (R-COMPACTOR-MUST-FIT)")

    # -- answers --

    def check_get_capabilities(self, record: StepRecord, where: str) -> None:
        caps = record.result.get("capabilities", {})
        budget = caps.get("default_token_budget", 0)
        self.add("P-CAP-DEFAULT-BUDGET", budget > 0,
                 f"default_token_budget is {budget}; it must be a positive number (R-DEFAULT-BUDGET-POSITIVE)", where)
        self.add("P-CAP-STABILITY", caps.get("stability") in STABILITIES,
                 f"stability is {caps.get('stability')}", where)
        self.add("P-CAP-CONFIG-SCHEMA", "config_schema" in caps and not self.schema_gaps(caps),
                 f"the capabilities carry no config_schema" if "config_schema" not in caps else
                 f"its config_schema lacks {self.schema_gaps(caps)}: a kernel decodes the manifest's config "
                 "through the schema's names and types, so Configure would never see those fields", where)
        changed = static_changes(self.capabilities, caps)
        self.add("P-CAP-STATIC-PROPERTIES", not changed, "; ".join(changed), where)

    def schema_gaps(self, caps: dict) -> list[str]:
        """The keys of the manifest's config the capabilities' config_schema does not declare."""
        return schema_gaps(caps.get("config_schema") or {}, self.manifest.config)

    def check_describe(self, record: StepRecord, where: str) -> None:
        """Every field of the ProducerRef the spec names (context/protocol.md#describe) is reported: the
        strings set, the context category, a protocol version (0 is proto3's unset)."""
        producer = record.result.get("producer", {})
        problems = [f"{field} is empty" for field in ("name", "version", "source") if not producer.get(field)]
        if producer.get("category") != "CATEGORY_CONTEXT":
            problems.append(f"category is {producer.get('category')}, not CATEGORY_CONTEXT")
        if int(producer.get("protocol_version") or 0) < 1:
            problems.append(f"protocol_version is {producer.get('protocol_version', 0)}, not a version")
        self.add("P-DESCRIBE", not problems, "; ".join(problems), where)

    def check_contribute(self, record: StepRecord, where: str) -> None:
        """Each requirement judged on what this reply shows; one with nothing to judge (no prior chain,
        no section of its own) gives no finding rather than a pass it did not earn."""
        request, reply = record.request, record.result
        prior, sections, budget = request["prior_sections"], reply["sections"], request["token_budget"]
        own = own_sections(record, self.compactor, self.manifest.name)
        # After a schema probe the provider works by a config it coerced, which may have given its budget, its
        # source or its way of reducing another meaning (R-CONFIG-OFF-SCHEMA): what its reply is made of is not
        # judged against the budget or the fixture then, but its form is, as any reply's.
        probed = record.probe is not None
        # What it wrote this firing. A section it hands back exactly as it was sent (its own from an earlier
        # turn, R-FIRING-STARTS-EMPTY, or for a compactor anyone's) restates what it was given: no evidence of
        # how it writes sections.
        fresh = [s for s in own if s not in prior]
        delta = False  # sections it gave the same firing before, left out: P-FULL-CHAIN's, not also a static one gone
        if not self.compactor:
            if prior:
                self.check_placement(prior, sections, where)
            if fresh:
                self.add("P-SECTION-PROVIDER", all(s["provider"] == self.manifest.name for s in fresh),
                         f"its sections claim the names {sorted({s['provider'] for s in fresh})}, "
                         f"not its declared {self.manifest.name!r}", where)
            if own and not probed:
                total = self.counting.total(record, own)
                self.add("P-WITHIN-BUDGET", total <= budget, f"its sections count {total} against a budget of {budget}",
                         where)
            self.add("P-NO-REWRITE-UNLESS-COMPACTOR", not reply["rewritten_history"],
                     "a provider that is not a compactor returned rewritten_history", where)
            delta = not probed and self.check_repeated_firing(record, own, where)
        if not probed and not delta:
            self.check_holding(record, fresh, where)
        if self.compactor:
            self.check_compactor_names(prior, own, where)
            if sections and not probed:
                total = self.counting.total(record, sections)
                self.add("C-CHAIN-FITS", total <= budget, f"its whole chain counts {total} against a budget of {budget}",
                         where)
            self.check_history_rewrite(request, reply, where)
            if not probed:
                self.note_reduction(record, prior, sections, budget)
        # A compactor does not answer for a missing label it kept from the owner's section it rewrote, nor for a
        # missing stability some section it was sent carries (a summary may take its original's, under its own
        # name too): a kernel may keep another provider's unlabelled section (R-MISSING-LABEL). A label or a
        # stability it kept that is there is judged, and passes: a compactor that rewrites each section under
        # its owner's name and label writes sections as much as one that writes its own.
        labelled = [s for s in fresh if s["label"] or not (self.compactor and _kept(s, prior, "label"))]
        stable = [s for s in fresh if s["stability"] in STABILITIES
                  or not (self.compactor and s["stability"] in {p["stability"] for p in prior})]
        if labelled:
            self.add("P-SECTION-LABEL", all(s["label"] for s in labelled), "a section has no label", where)
        if stable:
            self.add("P-SECTION-STABILITY", all(s["stability"] in STABILITIES for s in stable),
                     "a section has no stability", where)
        if fresh:
            self.add("P-TEXT-ONLY", all(tokens.is_text_only(s["content"]) for s in fresh),
                     "a section holds a non-text block", where)
        self.check_tokens(fresh, record, where)
        if not probed:
            self.check_truncated(fresh, record, where)

    def must_hold(self, fresh: list[dict]) -> dict[str, tuple]:
        """The sections of a reply that must hold while its input gives them no reason to change, under the
        requirement that says so: those it marks static (R-STATIC-SECTION-HOLDS) and, from a provider declared
        static that is no compactor, those it marks dynamic too: the declaration speaks for all its content
        (R-SECTION-STABILITY-DECLARED). Each as (provider, label, text), in the chain's order; none is a value too,
        so that a section which comes and goes is seen to."""
        def marked(stability: str) -> tuple:
            return tuple((s["provider"], s["label"], tokens.text_of(s["content"])) for s in fresh
                         if s["stability"] == stability)
        held = {"P-STATIC-SECTION-HOLDS": marked("STABILITY_STATIC")}
        if self.capabilities.get("stability") == "STABILITY_STATIC" and not self.compactor:
            held["P-SECTION-STABILITY-DECLARED"] = marked("STABILITY_DYNAMIC")
        return held

    def touched_so_far(self, record: StepRecord) -> frozenset[tuple[str, str]]:
        """The files touched in the firings since the last Configure, this one's included."""
        request = record.request or {}
        return self.touched | {(request.get("working_directory", ""), name) for name in request.get("files_touched") or []}

    def reasons(self, record: StepRecord) -> str:
        """The input as far as it gives a provider reason to change a section that must hold: the fixture files,
        whether CountTokens answers, every request field but the turn id (and, but for a compactor, the kernel's
        figures), the files touched so far in the session (a file touched earlier may stay loaded), the static
        prior sections whole, and the other prior sections and the conversation by their shape only: their words
        may change turn to turn, their sizes press on a budget (R-STATIC-SECTION-HOLDS)."""
        request = record.request
        ignored = {"turn_id", "prior_sections", "conversation_history"} | (set() if self.compactor else set(KERNEL_FIGURES))
        prior = [p if p["stability"] == "STABILITY_STATIC" else _worded_out(p) for p in request["prior_sections"]]
        return json.dumps([record.source_text, record.other_texts, record.counting_off, sorted(self.touched_so_far(record)),
                           {k: v for k, v in request.items() if k not in ignored}, prior,
                           [_worded_out(m) for m in request.get("conversation_history", [])]], sort_keys=True)

    def check_holding(self, record: StepRecord, fresh: list[dict], where: str) -> None:
        """R-STATIC-SECTION-HOLDS and R-SECTION-STABILITY-DECLARED: the sections that must hold (must_hold) are
        the same on every firing since the last Configure whose input gives them no reason to change (reasons):
        another turn id, other kernel figures, other words in a dynamic prior section or in the conversation,
        or nothing at all. Shown two ways. A file reader whose budget holds all its files whole has nothing to
        cut or summarize, so nothing to word anew: any two such firings are compared. Otherwise a summary may
        be worded anew each time, and only a provider shown steady is judged: the same request repeated, its
        turn id the same or not, gave them unchanged, and a firing of other words gave them otherwise. Once a
        fixture was changed since the Configure, what it serves may be any state of it: nothing is judged."""
        if self.edited:
            return
        reasons, whole = self.reasons(record), self.room_for_its_files(record)
        reworded = self.static_rewording(record, fresh, where) if whole else []
        before = len(self.findings)
        for requirement, held in self.must_hold(fresh).items():
            group = self.firings.setdefault((requirement, reasons), [])
            now = Firing(record.request, held, where, self.verbatim(record, held))
            group.append(now)
            if not any(f.held for f in group):
                continue  # nothing it wrote had to hold: no evidence either way
            compared = group[:-1] if whole else _steady_against(group, now)
            # Its fixtures' own lines, cut or selected, are no summary: nothing licenses another cut or selection
            # of the same input (R-STATIC-SECTION-HOLDS), so each such firing is compared with every other.
            verbatim = [] if whole or not now.verbatim else [f for f in group[:-1] if f.verbatim and f not in compared]
            moved = next((other for other in [*compared, *verbatim] if other.held != now.held), None)
            if compared or verbatim:
                self.add(requirement, moved is None, moved and self.moved_message(
                    requirement, now, moved, "whole" if whole else "verbatim" if moved in verbatim else ""), where)
        # One finding per fact: a rewording the comparison above already reported adds nothing.
        if reworded and not any(f.requirement == "P-STATIC-SECTION-HOLDS" and not f.passed
                                for f in self.findings[before:]):
            self.add("P-STATIC-SECTION-HOLDS", False, "with room in its budget for its files whole, and its files "
                     "unedited, its sections marked static changed their words: " + "; ".join(reworded) + ". The "
                     "files touched may bring a static section or take it away, but not reword one: static says "
                     "unchanged for the session (R-STATIC-SECTION-HOLDS)", where)

    def static_rewording(self, record: StepRecord, fresh: list[dict], where: str) -> list[str]:
        """R-STATIC-SECTION-HOLDS, for a file reader whose budget holds every file whole (nothing to cut or
        summarize): the files touched may bring a section marked static or take it away (the JIT pattern,
        context/README.md#firing-cadence--jit-loading), but its words under its label follow its files only, which
        are unedited until the next Configure: the same (provider, label) marked static reads the same at every
        such firing for one budget, model and session (a provider may tailor its content to the model, or take
        less than a budget that holds it all). A note of the request itself (the files touched, say) changes
        with it, which a section marked dynamic may do (R-SECTION-STABILITY-DECLARED). What reads otherwise, in
        words; the first text of each is kept."""
        scope = json.dumps([record.request.get(k) for k in ("token_budget", "model_target", "session_id",
                                                            "parent_session_id", "working_directory")], sort_keys=True)
        changed, words = [], {}
        for section in fresh:  # several under one label are taken together, in order
            if section["stability"] == "STABILITY_STATIC":
                words.setdefault((section["provider"], section["label"]), []).append(tokens.text_of(section["content"]))
        for place, texts in words.items():
            text = "\n\n".join(texts)
            first = self.static_words.setdefault((scope, *place), (text, where))
            if first[0] != text:
                changed.append(f"{place[1]!r} ({place[0]}) does not read as it did at {first[1]}")
        return changed

    def verbatim(self, record: StepRecord, held: tuple) -> bool:
        """Whether a file reader (no compactor) wrote the sections that had to hold, at least one, of its fixtures'
        own lines only, whole or cut at their ends: a cut or a selection, not words of its own."""
        if self.compactor or not self.manifest.reads_files or record.source_text is None or not held:
            return False
        sources = [_Source(lines) for text in [record.source_text, *record.other_texts] for lines in _line_forms(text)]
        lines = [_flat(line) for _, _, text in held for line in text.splitlines() if line.strip()]
        return bool(lines) and all(any(s.holds(line) for s in sources) for line in lines)

    @staticmethod
    def moved_message(requirement: str, now: Firing, other: Firing, evidence: str) -> str:
        changed = sorted({(label, provider) for provider, label, _ in set(now.held) ^ set(other.held)})
        sections = ", ".join(f"{label!r} ({provider})" for label, provider in changed)
        why = {"whole": "with room in its budget for its files whole it had nothing to cut or summarize, so nothing "
                        "to word anew",
               "verbatim": "both times they were its files' own lines, cut or selected, which no licence to word a "
                           "summary anew covers"}.get(evidence, "the same request repeated gave them unchanged")
        what = (f"its sections marked static ({sections})" if requirement == "P-STATIC-SECTION-HOLDS" else
                f"it declares STABILITY_STATIC, and its sections marked dynamic ({sections})")
        rule = ("static says a section stays the same for the session (R-STATIC-SECTION-HOLDS)"
                if requirement == "P-STATIC-SECTION-HOLDS" else
                "a static plugin's content stays the same for the session save where its files, its config or its "
                "request (the files touched, the budget, the model) give it reason, whatever hint a section carries "
                "(R-SECTION-STABILITY-DECLARED)")
        return f"{what} are not as they were at {other.where}, {_differences(other.request, now.request)}: {why}; {rule}"

    def check_repeated_firing(self, record: StepRecord, own: list[dict], where: str) -> bool:
        """R-EVERY-FIRING-WHOLE: a static file reader that answered a firing with sections of its own answers a
        later firing of the very same input (source, and every field of the request but its turn_id: budget,
        model with its window and ceiling, files touched, the kernel's figures, and the texts of the whole
        prior chain, every provider's) with sections again, unless it is handed its own earlier ones (a kernel
        carrying the chain): each firing's prompt is built from the chain it returns, so leaving out what it
        sent before drops it. Another prior chain is another input: a reader may add nothing a chain already
        holds. What a Configure set up is forgotten at the next one (note_configure). Whether it charged a delta."""
        if not self.manifest.reads_files or self.capabilities.get("stability") != "STABILITY_STATIC" \
                or record.source_text is None or record.counting_off:
            return False  # a firing whose CountTokens fails is another input: it may contribute nothing (R-COUNTTOKENS-UNAVAILABLE)
        request = record.request
        rest = {k: v for k, v in request.items() if k not in ("turn_id", "prior_sections")}
        firing = (record.source_text, json.dumps(rest, sort_keys=True), _chain_texts(request["prior_sections"]))
        if own:
            self.contributed.add(firing)
            return False
        if firing in self.contributed and not _handed_its_own(request["prior_sections"], self.manifest.name):
            self.add("P-FULL-CHAIN", False, "it answered an earlier firing of the same source, budget, model and "
                     "prior chain with its sections, and leaves them out of this one: a delta across firings, "
                     "which the kernel's prompt, built from this chain alone, loses (R-EVERY-FIRING-WHOLE)", where)
            return True
        return False

    def note_configure(self, record: StepRecord) -> None:
        """What a Configure (a probe's too) changes for the steps after it: the provider is a new input, so the
        firings it answered before are forgotten (R-EVERY-FIRING-WHOLE), and so is what it served before (an
        eager reader reads its source again at Configure, R-EAGER-SOURCE); and it has a configuration it took
        only when the Configure succeeded (R-COMPACTOR-MUST-FIT). Another config may rightly write other
        sections that hold, and an edited fixture may be read at any later firing (R-STATIC-SECTION-HOLDS)."""
        if record.step.kind == "configure":
            self.contributed.clear()
            self.served = {}
            self.firings.clear()
            self.touched = frozenset()
            self.static_words.clear()
            self.edited = False
            self.configured = record.result is not None
        elif record.step.kind in FIXTURE_EDITS:
            self.edited = True

    def check_compactor_names(self, prior: list[dict], written: list[dict], where: str) -> None:
        """A compactor's sections are its own or rewrites of others' (context/data-types.md#ordering--chaining):
        each it wrote carries its declared name or the name of a provider whose sections it was sent."""
        names = {self.manifest.name} | {p["provider"] for p in prior}
        strangers = sorted({s["provider"] for s in written} - names)
        if written:
            self.add("P-SECTION-PROVIDER", not strangers, f"it wrote sections under {strangers}, neither its declared "
                     f"name {self.manifest.name!r} nor that of a provider whose sections it was sent", where)

    def check_truncated(self, own: list[dict], record: StepRecord, where: str) -> None:
        """R-TRUNCATED-UNIT on every reply of a file reader that read its fixture (what it returns comes
        from that file, so the flag can be judged against it), and of a compactor, whose source is the
        chain it was handed."""
        problems = self.truncation_problems(own, record)
        if problems is not None:
            self.add("P-TRUNCATED-FLAG", not problems, "; ".join(problems), where)

    def truncation_problems(self, own: list[dict], record: StepRecord) -> list[str] | None:
        """What is wrong with the truncated flags of the sections it wrote: a file reader's held against its file,
        a compactor's against the chain it was handed; None when nothing can be judged."""
        if not own:
            return None
        if self.compactor:
            return _compactor_truncation_problems(own, record.request["prior_sections"])
        if self.manifest.reads_files and record.source_text is not None:
            return _truncation_problems(own, record.source_text, record.other_texts, self.held_whole(record))
        return None

    def held_whole(self, record: StepRecord) -> bool:
        """Whether the budget held the whole source as written, in any split of it into blocks at its lines: what
        was left out of it then was stripped, not cut to fit (R-TRUNCATED-UNIT). Otherwise a reader that keeps,
        say, TOML front matter as content may have dropped it for the budget, and says truncated rightly."""
        return self.whole_cost(record, record.source_text or "") <= record.request["token_budget"]

    def room_for_its_files(self, record: StepRecord) -> bool:
        """Whether a file reader that is no compactor, and could count, had a budget that holds every file of the
        case whole, each in any split into blocks at its lines: it then had nothing to cut or summarize
        (R-STATIC-SECTION-HOLDS)."""
        if self.compactor or not self.manifest.reads_files or record.source_text is None or record.counting_off:
            return False
        files = [record.source_text, *record.other_texts]
        return sum(self.whole_cost(record, text) for text in files) <= record.request["token_budget"]

    def whole_cost(self, record: StepRecord, text: str) -> int:
        """What a text counts for the request's model, with room for it split into a block per line."""
        lines = sum(1 for line in text.splitlines() if line.strip())
        return self.counting.for_target(record, [{"text": {"text": text}}]) + tokens.BLOCK_SEPARATOR_TOKENS * lines

    def check_placement(self, prior: list[dict], sections: list[dict], where: str) -> None:
        found = placement(prior, sections, self.manifest.name)
        self.add("P-FULL-CHAIN", found is not Placement.DELTA, f"the reply holds none of the {len(prior)} prior section(s): a delta", where)
        self.add("P-OWN-SECTIONS-ONLY", found is not Placement.MOVED, "the prior sections do not come back as an untouched "
                 "prefix (changed, dropped, reordered or preceded by its own)", where)

    def check_tokens(self, own: list[dict], record: StepRecord, where: str) -> None:
        for section in own:
            problem = self.counting.figure_problem(record, section)
            if problem is not None:  # None: a right figure this process was never seen given (R-COUNT-FOR-THE-TARGET)
                self.add("P-TOKENS-COUNTTOKENS", not problem, problem, where)

    def check_history_rewrite(self, request: dict, reply: dict, where: str) -> None:
        if reply["rewritten_history"]:
            problems = history_problems(request, reply)
            self.add("C-REWRITTEN-HISTORY-TEXT", not problems, "; ".join(problems), where)
            malformed = message_problems(request, reply)
            self.add("C-REWRITTEN-HISTORY-MESSAGES", not malformed, "; ".join(malformed), where)

    def note_reduction(self, record: StepRecord, prior: list[dict], sections: list[dict], budget: int) -> None:
        """R-SUMMARIZE-EVIDENCE: when the reply reduced a prior chain over a budget with room for a summary,
        whose content could be summarized (some section of it holds two words or more), did it summarize
        anything (a rewrite that is not the original cut short, or new text of its own), or only cut and drop?"""
        over = self.counting.total(record, prior) > budget
        summarizable = any(len(tokens.text_of(p["content"]).split()) > 1 for p in prior)
        reduced = _chain_texts(prior)  # the content it reduced: a chain as text, recounted figures change nothing
        if budget < SUMMARY_ROOM or not over or not summarizable or _chain_texts(sections) == reduced:
            return
        originals = {(p["provider"], p["label"]): tokens.text_of(p["content"]) for p in prior}
        names = {self.manifest.name} | {p["provider"] for p in prior} | {p["label"] for p in prior}
        pieces = []
        for section in sections:
            text = tokens.text_of(section["content"])
            original = originals.get((section["provider"], section["label"]))
            if not text.strip() or (original is not None and (text == original or _is_cut(text, original))):
                continue  # kept, cut short or emptied: no summary
            if original is None:  # a section of its own: each line may stand for a section it was handed, so a
                # line is keyed by the chain it reduced and its place: the same chain reduced again may well
                # bring the same line, which is no template (R-SUMMARIZE-EVIDENCE)
                pieces += [((reduced, i), _residue(line, names)) for i, line in enumerate(text.splitlines())
                           if line.strip()]
            else:
                pieces.append((original, _residue(text, names)))
        self.pieces.append(pieces)
        self.reductions = summaries_shown(self.pieces)

    def check_summaries(self) -> None:
        """What the case shows of C-SUMMARIZE: a pass when one of its reductions summarized, a warning when
        none did. The warning stands only if no case of the run summarized (judge_over_run)."""
        if self.compactor and self.reductions:
            self.add("C-SUMMARIZE", any(self.reductions), f"none of its {len(self.reductions)} reduction(s) of an "
                     "over-budget chain summarized anything: it only cut, dropped, or wrote words that do not depend on "
                     "the content (R-SUMMARIZE-EVIDENCE)", SUMMARY_WHERE)


SUMMARY_WHERE = "the case's reductions"  # where check_summaries' findings are made, to tell them apart


def _summary_finding(f: Finding) -> bool:
    return f.requirement == "C-SUMMARIZE" and f.where.endswith(SUMMARY_WHERE)


def judge_over_run(cases: list) -> list:
    """R-SUMMARIZE-EVIDENCE over the whole run: a compactor that summarized in some case does not only
    ever truncate, so the cases where it did not summarize draw no warning. A vector's own `summarizes`
    assertion stands as written."""
    if not any(_summary_finding(f) and f.passed for case in cases for f in case.findings):
        return cases
    for case in cases:
        case.findings = [f for f in case.findings if f.passed or not _summary_finding(f)]
    return cases


def pending_over_run(case) -> bool:
    """Whether all a case fails is a C-SUMMARIZE warning judge_over_run may yet withdraw."""
    failed = [f for f in case.findings if not f.passed]
    return bool(failed) and all(map(_summary_finding, failed))


def one_scenario(findings: list[Finding]) -> list[Finding]:
    """The findings a generated scenario is judged by: one scenario's reductions say nothing of whether the
    compactor only ever truncates, so its C-SUMMARIZE warning is left to the vectors (judge_over_run)."""
    return [f for f in findings if f.passed or not _summary_finding(f)]


def _truncation_problems(own: list[dict], source: str | None, others: list[str] = (),
                         held_whole: bool = True) -> list[str]:
    """R-TRUNCATED-UNIT, whitespace aside: sections that together hold the whole source say nothing
    was cut; a section that is one verbatim run of the source starting or ending inside a sentence (or
    marked as cut at its end) says it was cut. Anything else may say either: whole lines or whole sentences
    (only the provider knows whether its unit is the file or a part), a selection from several places, or
    words of its own (a summary). Lines a reader adds around what it took from the source (a heading
    naming the file, a closing note) are seen through, in both rules (_taken).
    The source is taken as it was written and in each stripped form a provider may return
    (R-TRUNCATED-UNIT: stripping authoring artifacts cuts nothing down), the stripped forms only where the
    budget held the source as written (`held_whole`): under a smaller one, what a stripped form leaves out
    may have been dropped to fit by a provider that reads it as content. A section that is whole lines of
    another fixture file (a JIT reader's narrower file) is one of the "anything else"."""
    forms = [_Source(lines) for lines in _line_forms(source or "")]
    sources = forms + [_Source(lines) for other in others for lines in _line_forms(other)]
    taken = [_taken(s, forms, sources) for s in own]
    whole = " ".join(run for run, _ in taken if run)
    if own and (whole == forms[0].joined or held_whole and any(whole == f.joined for f in forms)):
        return [f"section {s['label']!r} says truncated, but the sections hold the whole source"
                + (" (its authoring artifacts stripped)" if whole != forms[0].joined else "")
                for s in own if s["truncated"]]
    if own and any(whole == f.joined for f in forms):
        return []  # the whole source but for what a stripping leaves out, under a budget too small for it all
    return [_cut_message(s, marked) for s, (run, marked) in zip(own, taken)
            if not s["truncated"] and _cut(run, marked, forms, sources)]


def _compactor_truncation_problems(written: list[dict], prior: list[dict]) -> list[str] | None:
    """R-TRUNCATED-UNIT on the sections a compactor wrote, judged against the section of the chain they stand
    in the place of (the same provider and label), as a reader's against its file, in the same stripped forms
    (authoring artifacts and heading markers left out): those that together hold
    its text whole (lines of their own around it set aside) say false where it did, for nothing in it was cut,
    by its owner or by the compactor, and either where it said true (its owner cut it, the compactor did not);
    a verbatim piece of it cut inside a sentence says true. A section under a name or label of its own (a merge,
    a summary, a status note) may say either: only the compactor knows what it stands for. None when no section
    stands in the place of one it was handed."""
    places: dict[tuple, list[dict]] = {}
    for section in written:
        places.setdefault((section["provider"], section["label"]), []).append(section)
    problems, judged = [], False
    for place, sections in places.items():
        originals = [p for p in prior if (p["provider"], p["label"]) == place]
        if not originals:
            continue
        judged = True
        forms = [[_Source(lines) for lines in _line_forms("\n".join(tokens.texts_of(p["content"])))]
                 for p in originals]
        sources = [f for each in forms for f in each]  # each original as written, then in its stripped forms
        taken = [_taken(s, sources, sources) for s in sections]
        whole = " ".join(run for run, _ in taken if run)
        # Whole, a note of its own in brackets after it marks no cut: nothing of the text is missing.
        kept = [p for p, each in zip(originals, forms) if whole and whole == each[0].joined
                and tokens.is_text_only(p["content"])]
        if kept:
            problems += [f"section {s['label']!r} ({s['provider']}) holds the text of the section it stands for "
                         "whole, which said truncated false, yet says truncated: nothing in it was cut"
                         for s in sections if s["truncated"] and not any(p["truncated"] for p in kept)]
        elif whole and any(whole == f.joined for f in sources):
            continue  # whole but for what a stripping leaves out, which a compactor may have dropped to fit: either
        else:
            problems += [_cut_message(s, marked) for s, (run, marked) in zip(sections, taken)
                         if not s["truncated"] and _cut(run, marked, sources, sources)]
    return problems if judged else None


def _cut_message(section: dict, marked: bool) -> str:
    return (f"section {section['label']!r} is a verbatim piece of its source "
            + ("that it marks as cut in its text" if marked else "cut inside a sentence")
            + ", but says truncated false")


def _line_forms(text: str) -> list[list[str]]:
    """The text's non-blank lines, whitespace flattened, in each of its stripped forms."""
    return [[_flat(line) for line in form.splitlines() if line.strip()] for form in _stripped_forms(text)]


_FRONT_MATTER = re.compile(r"\A(---|\+\+\+)[ \t]*\n(?:.*?\n)?\1[ \t]*(?:\n|\Z)", re.DOTALL)
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_COMMENT_LINES = re.compile(r"^[ \t]*<!--(?:(?!-->).)*-->[ \t]*$\n?", re.DOTALL | re.MULTILINE)
_HEADING_MARK = re.compile(r"^([ \t]*)#{1,6}[ \t]+(?=\S)", re.MULTILINE)  # a markdown heading's opening #s


def _stripped_forms(source: str) -> list[str]:
    """The source as written, then as each stripping of authoring artifacts leaves it
    (context/data-types.md#stripping-non-semantic-artifacts): without its front matter (YAML or TOML),
    without the HTML comments that fill whole lines, or without every HTML comment, or both; and each of
    those without its markdown heading markers (R-TRUNCATED-UNIT: the content is the provider's to format,
    and a heading served as a plain line has lost none of its words)."""
    forms = [source]
    for text in (source, _FRONT_MATTER.sub("", source, count=1)):
        forms += [text, _COMMENT_LINES.sub("", text), _HTML_COMMENT.sub("", text)]
    forms += [_HEADING_MARK.sub("", form) for form in forms]
    return list(dict.fromkeys(forms))


def _flat(text: str) -> str:
    return " ".join(text.split())


def _lines_of(section: dict) -> list[str]:
    """The non-blank lines of a section's text blocks, whitespace flattened."""
    return [_flat(line) for text in tokens.texts_of(section["content"]) for line in text.splitlines() if line.strip()]


# Where a sentence ends inside a line (spacing flattened): its closing mark, with any closing quotes or brackets
# after it, before a space; a full-width mark ends one by itself. A provider may return whole sentences as it
# may whole lines (R-TRUNCATED-UNIT). A comma or a semicolon ends none: a list cut there is a list cut short.
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*(?= )|[。！？]")


class _Source:
    """A text as its non-blank lines, whitespace flattened, joined by single spaces, with the places in that
    joined text where a line or a sentence starts and ends."""

    def __init__(self, lines: list[str]):
        self.joined, self.line_set = " ".join(lines), set(lines)
        self.starts, self.ends, at = set(), set(), 0
        for line in lines:
            self.starts.add(at)
            self.ends.add(at + len(line))
            for end in _SENTENCE_END.finditer(line):
                self.ends.add(at + end.end())
                self.starts.add(at + end.end() + (line[end.end():end.end() + 1] == " "))
            at += len(line) + 1

    def holds(self, text: str) -> bool:
        return bool(text) and text in self.joined

    def whole_units(self, text: str) -> bool:
        """Whether text is a run of it that starts where a line or a sentence starts and ends where one ends."""
        found = self.joined.find(text) if text else -1
        while found >= 0:
            if found in self.starts and found + len(text) in self.ends:
                return True
            found = self.joined.find(text, found + 1)
        return False


def _taken(section: dict, forms: list[_Source], sources: list[_Source]) -> tuple[str, bool]:
    """What a section took from its source, as one text, and whether it marks a cut at its end (CUT_MARK, where
    the source does not have those words): its lines as written where they are one run of the source (in one of
    `forms`), else what is left once the lines it added at either end are seen through (_seen_through)."""
    lines, marked = _lines_of(section), False
    bare = CUT_MARK.sub("", lines[-1]) if lines else ""
    if lines and bare != lines[-1] and not any(s.holds(lines[-1]) for s in sources):
        lines, marked = lines[:-1] + ([bare] if bare else []), True
    text = " ".join(lines)
    if not any(f.holds(text) for f in forms):
        text = " ".join(_seen_through(lines, sources))
    return text, marked


def _seen_through(lines: list[str], sources: list[_Source]) -> list[str]:
    """The lines without those a provider added to what it took from its source: wherever it stands, a line
    found nowhere in the source (a heading naming the file, one of its own between two pieces, a note of its
    own); at either end, a whole line of the source that does not run on into the line beside it (a heading
    it repeats). A line that is a piece of a source line stays: it may be the cut itself, or a word of a
    summary, which nothing tells apart. The last line left is kept."""
    def added(line: str, pair: str) -> bool:  # at an end: a whole line of the source standing apart
        return any(line in s.line_set for s in sources) and not any(s.holds(pair) for s in sources)
    lines = [line for line in lines if any(s.holds(line) for s in sources)] or lines[-1:]
    start, end = 0, len(lines)
    while end - start > 1 and added(lines[start], f"{lines[start]} {lines[start + 1]}"):
        start += 1
    while end - start > 1 and added(lines[end - 1], f"{lines[end - 2]} {lines[end - 1]}"):
        end -= 1
    return lines[start:end]


def _cut(run: str, marked: bool, forms: list[_Source], sources: list[_Source]) -> bool:
    """Whether run is one verbatim run of the source (in one of `forms`) that, in none of `sources` (the
    source's forms and the other fixture files), starts and ends where lines or sentences do; or is such a
    run at all and marked as cut, which says so in the provider's own words."""
    return any(f.holds(run) for f in forms) and (marked or not any(s.whole_units(run) for s in sources))


def history_problems(request: dict, reply: dict) -> list[str]:
    """R-REWRITTEN-HISTORY-CONTENT: new blocks are text; others only as copied from the history sent."""
    received = [b for m in request["conversation_history"] for b in m["content"]]
    foreign = [b for m in reply["rewritten_history"] for b in m["content"]
               if not tokens.is_text_only([b]) and b not in received]
    return [f"rewritten_history holds {len(foreign)} non-text block(s) it was never sent"] if foreign else []


WRITABLE_ROLES = ("ROLE_USER", "ROLE_ASSISTANT")  # content.v1.Role but its unset value (there is no SYSTEM)


def message_problems(request: dict, reply: dict) -> list[str]:
    """C-REWRITTEN-HISTORY-MESSAGES: every message of rewritten_history that is not one it was sent, as sent,
    is a Message a model call can carry: a role of the enum, and content that is not empty (some block that
    is not an empty text)."""
    problems = []
    for i, message in enumerate(reply["rewritten_history"]):
        if message in request["conversation_history"]:
            continue  # copied as it came: the kernel's own message
        if message.get("role") not in WRITABLE_ROLES:
            problems.append(f"rewritten_history[{i}] has role {message.get('role') or 'ROLE_UNSPECIFIED'}")
        if not any(b and (not tokens.is_text_only([b]) or tokens.text_of([b]).strip()) for b in message.get("content", [])):
            problems.append(f"rewritten_history[{i}] has no content")
    return problems


def _residue(text: str, names: set[str]) -> str:
    """A summary's text with the labels and provider names of the chain taken out (longest first), spacing
    collapsed: what it says beyond naming what it stands for."""
    for name in sorted(filter(None, names), key=len, reverse=True):
        text = text.replace(name, " ")
    return " ".join(text.split())


def summaries_shown(reductions: list[list[tuple]]) -> list[bool]:
    """R-SUMMARIZE-EVIDENCE, per reduction: whether some piece it wrote says something of its own original.
    One that says nothing once the names are out (no letter or digit), or the very same as a piece written
    for another original in the case, is a template, the same whatever the content ("Summary of <label>: ")."""
    originals: dict[str, set] = {}
    for pieces in reductions:
        for original, residue in pieces:
            originals.setdefault(residue, set()).add(original)
    def says_something(residue: str) -> bool:
        return any(c.isalnum() for c in residue) and len(originals[residue]) == 1
    return [any(says_something(residue) for _, residue in pieces) for pieces in reductions]


def _is_cut(text: str, original: str) -> bool:
    shortened = " ".join(text.split()).rstrip(".… ")
    return " ".join(original.split()).startswith(shortened)


# --- the error taxonomy, judged on a failure ----------------------------------------------

def _context_error_problems(failure: dict) -> list[str]:
    context_error = failure.get("context_error")
    if isinstance(context_error, dict) and "unreadable" not in context_error and context_error.get("message"):
        return []
    said = (f"its category travels only in a google.rpc.ErrorInfo ({errors.error_info_category(failure['details'])}); "
            if errors.error_info_category(failure.get("details", [])) else "")
    return [f"the {failure['code']} failure carries no ContextError with a message: {said}{context_error}"
            " (R-ERROR-DETAIL-FORM)"]


def _category_problems(failure: dict) -> list[str]:
    context_error = failure.get("context_error")
    readable = isinstance(context_error, dict) and "unreadable" not in context_error
    if readable and errors.category_of(context_error) is not None:
        return []
    return [f"the failure carries no ContextError category: {context_error} (R-ERROR-DETAIL-FORM)"]


def _code_problems(failure: dict) -> list[str]:
    category = _claimed(failure)
    if category is None or (category, failure["code"]) == ("unknown", "UNKNOWN"):
        raise NotEvaluable  # no category to map; or P-ERROR-NOT-UNKNOWN's own case
    want = errors.GRPC_CODE[category]
    return [] if failure["code"] == want else [f"{category} travelled as {failure['code']}, not {want}"]


def _not_unknown_problems(failure: dict) -> list[str]:
    """An unknown failure (or one that names no category: "anything else") is never gRPC UNKNOWN."""
    if _claimed(failure) not in (None, "unknown"):
        raise NotEvaluable  # a categorized failure's code is P-ERROR-CODE's business
    return ["the failure travelled as gRPC UNKNOWN"] if failure["code"] == "UNKNOWN" else []


def _claimed(failure: dict) -> str | None:
    context_error = failure.get("context_error") or {}
    return errors.claimed_category(None if "unreadable" in context_error else context_error, failure.get("details", []))


# Each requirement about a failure's form, judged on its own observable (one fault, one requirement).
ERROR_FORM = {"P-ERROR-NOT-UNKNOWN": _not_unknown_problems, "P-CONTEXT-ERROR-FIELDS": _context_error_problems,
              "P-ERROR-CATEGORIZED": _category_problems, "P-ERROR-CODE": _code_problems}


# --- explicit expectations ---------------------------------------------------------

def observation(record: StepRecord, checker: Checker) -> dict:
    """What a step's assertions look at. A failed contribute call contributed nothing: no sections, no
    text (R-UNSERVABLE-REQUEST); what only a reply has is left out."""
    seen: dict = {"failed": record.failure is not None, "failure": record.failure, "counts": record.counts,
                  "record": record}
    if record.step.kind == "contribute" and record.failure is not None:
        seen |= {"own": [], "chain": [], "own_text": "", "budget": record.request["token_budget"]}
    if record.failure is not None or record.result is None:
        return seen
    if record.step.kind == "contribute":
        own = own_sections(record, checker.compactor, checker.manifest.name)
        prior, sections = record.request["prior_sections"], record.result["sections"]
        seen |= {"own": own, "own_text": "\n".join(tokens.text_of(s["content"]) for s in own),
                 "written": [s for s in own if s not in prior],  # not handed back as sent
                 "placement": placement(prior, sections, checker.manifest.name), "source_text": record.source_text,
                 "chain": sections,
                 "budget": record.request["token_budget"],
                 "rewrites": bool(record.result["rewritten_history"]),
                 "history_problems": history_problems(record.request, record.result)}
    seen["capabilities"] = record.result.get("capabilities")
    seen["producer"] = record.result.get("producer")
    return seen


def expectations(record: StepRecord, checker: Checker, where: str) -> list[Finding]:
    """One finding per requirement the step asserts on; none when nothing it asserts is there to judge."""
    if not record.step.expect or record.unserved:
        return []
    return PROVIDER.check(record.step.expect, observation(record, checker), where, checker)


def _on_failure(judge):
    """An assertion about a failure's form: judged when the call failed, not evaluable when it succeeded."""
    def check(want, seen: dict, checker: Checker) -> list[str]:
        if seen["failure"] is None:
            raise NotEvaluable
        return judge(seen["failure"])
    return check


def _fails(want: dict, seen: dict, checker: Checker) -> list[str]:
    failure = seen["failure"]
    if failure is None:
        return ["the call succeeded; it must fail"]
    if "category" in want:
        category = _claimed(failure)
        if category is None:
            raise NotEvaluable  # it failed without naming a category: P-ERROR-CATEGORIZED's business
        if category != want["category"]:
            return [f"it failed as {category} ({failure['code']}), not {want['category']}"]
    if failure["code"] == want.get("not_code"):
        return [f"the failure travelled as {failure['code']}"]
    return []


def _vanished_source(want, seen: dict, checker: Checker) -> list[str]:
    """R-EAGER-SOURCE, a firing after its source went away: a reader that reads it now says
    source_unavailable; one that serves what it read earlier returns exactly what it served before,
    which shows nothing of how it reports an unreadable source (not evaluable)."""
    failure = seen["failure"]
    if failure is not None:
        category = _claimed(failure)
        if category is None:
            raise NotEvaluable  # it failed without naming a category: P-ERROR-CATEGORIZED's business
        return [] if category == "source_unavailable" else [
            f"its source is gone, and it failed as {category} ({failure['code']}), not source_unavailable"]
    if "own" not in seen:
        return ["nothing observed: the step is not a contribute call"]
    before = checker.served.get(checker.eager_input(seen["record"]))
    if before is None:
        # It never served this input while the source was there: what an eager reader answers to another request
        # (other files touched, another budget or chain) is not what it served then, so nothing tells the answers apart.
        raise NotEvaluable
    if checker.replayed(seen["own"]) == before:
        raise NotEvaluable  # what it served before for this input, unchanged: an eager reader's answer
    return [f"its source is gone, yet it neither failed with source_unavailable nor served what it served "
            f"before for the same request: {len(seen['own'])} own section(s) instead of the {len(before)} it served "
            "then"]


def _restored_source(want, seen: dict, checker: Checker) -> list[str]:
    """R-EAGER-SOURCE, a firing after its source came back: it is readable, so it is not reported
    unavailable. Succeeding shows that only for a reader that said it was unavailable while it was gone."""
    failure = seen["failure"]
    if failure is not None:
        if _claimed(failure) != "source_unavailable":
            raise NotEvaluable  # another failure: its form is judged by the taxonomy's requirements
        return ["its source is readable again, yet it failed as source_unavailable"]
    if not checker.said_unavailable:
        raise NotEvaluable  # it never read its source at call time in this case: nothing to recover from
    return []


def _reply(judge):
    """An assertion about a successful reply: not evaluable when the call failed."""
    def check(want, seen: dict, checker: Checker) -> list[str]:
        if seen["failure"] is not None:
            raise NotEvaluable
        return judge(want, seen, checker)
    return check


def _own(judge):
    """An assertion about what the provider contributed; a failed call contributed nothing."""
    def check(want, seen: dict, checker: Checker) -> list[str]:
        if "own" not in seen:
            return ["nothing observed: the step is not a contribute call"]
        return judge(want, seen, checker)
    return check


def _fits(part: str, what: str):
    """A budget assertion over `part` (its own sections, or the whole chain): with no section (a failed
    call, an empty reply) nothing exceeds the budget, but nothing was shown to fit it either; a compactor
    that failed instead of fitting the chain it was handed fails it (R-COMPACTOR-MUST-FIT)."""
    def check(want, seen: dict, checker: Checker) -> list[str]:
        if part not in seen:
            return ["nothing observed: the step is not a contribute call"]
        if part == "chain" and checker.gave_up(seen["record"]):
            return [checker.gave_up(seen["record"])]
        if not seen[part]:
            raise NotEvaluable
        total = checker.counting.total(seen["record"], seen[part])
        return [] if total <= seen["budget"] else [f"{what} count {total} against {seen['budget']}"]
    return check


def _wrote(judge):
    """An assertion about the sections the provider wrote: not evaluable when it wrote none
    (a failed call, or a provider with nothing to add this firing)."""
    def check(want, seen: dict, checker: Checker) -> list[str]:
        if seen["failure"] is not None or not seen.get("own"):
            raise NotEvaluable
        return judge(want, seen, checker)
    return check


def _each_own(judge):
    """judge(want, section, checker) for every section the provider wrote."""
    return _wrote(lambda want, seen, checker: _each_judged(seen["own"], lambda s: judge(want, s, checker)))


def _each_written(judge):
    """judge(want, section, checker) for every section the provider wrote this firing, not those it handed
    back exactly as it was sent them (no evidence of how it writes one)."""
    return _wrote(lambda want, seen, checker: _each_judged(seen["written"], lambda s: judge(want, s, checker)))


def _each_judged(sections: list[dict], judge) -> list[str]:
    """The problems judge(section) finds, over the sections it can judge; not evaluable when it can judge none."""
    problems, judged = [], False
    for section in sections:
        try:
            problems += judge(section)
            judged = True
        except NotEvaluable:
            pass
    if not judged:
        raise NotEvaluable
    return problems


def _figure_judge(checker: Checker, record: StepRecord):
    """Counting.figure_problem as a judge for _each_judged: a right figure never seen given is not evaluable."""
    def judge(section: dict) -> list[str]:
        problem = checker.counting.figure_problem(record, section)
        if problem is None:
            raise NotEvaluable
        return [problem] if problem else []
    return judge


def _not_yet() -> list[str]:
    raise NotEvaluable


def _judged(problems: list[str] | None) -> list[str]:
    """A check's problems; not evaluable where it had nothing to judge (None)."""
    return _not_yet() if problems is None else problems


def _capability(test, message):
    return _reply(lambda want, seen, checker: [] if test(seen.get("capabilities") or {}, checker)
                  else [message(seen.get("capabilities") or {})])


PROVIDER = Language({
    "fails": _fails,
    "succeeds": lambda want, seen, checker: [] if seen["failure"] is None else
                [f"the call failed: {seen['failure']['code']}: {seen['failure'].get('message', '')}"],
    "context_error_complete": _on_failure(_context_error_problems),
    "categorized": _on_failure(_category_problems),
    "code_matches_category": _on_failure(_code_problems),
    "code_not_unknown": _on_failure(_not_unknown_problems),
    # whether it asked at all is P-TOKENS-COUNTTOKENS' business
    "counted_text_only": lambda want, seen, checker: [f"a CountTokens request held non-text: {c.refused}"
                                                      for c in seen["counts"]
                                                      if c.refused.startswith("CountTokens content")],
    "capabilities_unchanged": _capability(lambda caps, checker: not static_changes(checker.capabilities, caps),
                                          lambda caps: "its stability or compactor flag changed"),
    "default_budget_positive": _capability(lambda caps, checker: caps.get("default_token_budget", 0) > 0,
                                           lambda caps: f"default_token_budget {caps.get('default_token_budget', 0)}"),
    "stability_declared": _capability(lambda caps, checker: caps.get("stability") in STABILITIES,
                                      lambda caps: f"stability {caps.get('stability')}"),
    "config_schema_declared": _capability(lambda caps, checker: "config_schema" in caps and not checker.schema_gaps(caps),
                                          lambda caps: "no config_schema, or one that leaves out keys the manifest's "
                                                       "config sets"),
    "producer": _reply(lambda want, seen, checker: [f"producer: {p}" for p in match(want, seen.get("producer") or {})]),
    # what was contributed: a failed call contributed nothing
    "own_sections": _own(lambda want, seen, checker: [] if want.get("min", 0) <= len(seen["own"]) <= want.get(
        "max", len(seen["own"])) else [f"{len(seen['own'])} own section(s), expected {want}"]),
    "own_text_contains": _own(lambda want, seen, checker: [f"its text lacks {t!r}" for t in want
                                                           if t not in seen["own_text"]]),
    "contributes": _own(lambda want, seen, checker: [] if seen["own_text"].strip() else
                        [f"it contributed no text of its own ({len(seen['own'])} own section(s))"
                         + (": the call failed" if seen["failed"] else "")]),
    "vanished_source": _vanished_source,
    "restored_source": _restored_source,
    "within_budget": _fits("own", "its sections"),
    "chain_fits": _fits("chain", "the chain"),
    # what only a reply has
    "whole_chain": _reply(lambda want, seen, checker: [] if seen["placement"] is not Placement.DELTA else
                          ["the reply is a delta: none of the prior sections"]),
    "prior_untouched": _reply(lambda want, seen, checker: [] if seen["placement"] is not Placement.MOVED else
                              ["the prior sections are not an untouched prefix"]),
    "truncated_iff_cut": _wrote(lambda want, seen, checker: _judged(checker.truncation_problems(seen["own"],
                                                                                             seen["record"]))),
    "own_text_excludes": _wrote(lambda want, seen, checker: [f"its text still holds {t!r}" for t in want
                                                             if t in seen["own_text"]]),
    # every section it wrote
    "tokens_counted": _wrote(lambda want, seen, checker: _each_judged(seen["own"], _figure_judge(checker,
                                                                                             seen["record"]))),
    "own_named": _each_written(lambda want, s, checker: [] if s["provider"] == checker.manifest.name else
                           [f"section {s['label']!r} is named {s['provider']!r}"]),
    "own_labelled": _each_own(lambda want, s, checker: [] if s["label"] else
                              [f"a section of {s['provider']} has no label"]),
    "own_stability": _each_own(lambda want, s, checker: [] if s["stability"] in STABILITIES else
                               [f"section {s['label']!r} has stability {s['stability']}"]),
    "own_text_only": _each_own(lambda want, s, checker: [] if tokens.is_text_only(s["content"]) else
                               [f"section {s['label']!r} holds a non-text block"]),
    "history_blocks_ok": _reply(lambda want, seen, checker: seen["history_problems"] if seen["rewrites"]
                                else _not_yet()),
    "history_messages_ok": _reply(lambda want, seen, checker: message_problems(seen["record"].request,
                                                                               seen["record"].result)
                                  if seen["rewrites"] else _not_yet()),
    "rewrites_history": _reply(lambda want, seen, checker: [] if seen["rewrites"] is want else
                               [f"rewritten_history present: {seen['rewrites']}"]),
    "summarizes": _reply(lambda want, seen, checker: _not_yet() if not checker.reductions else [] if any(
        checker.reductions) else [f"none of its {len(checker.reductions)} reduction(s) so far summarized anything (it cut, dropped, "
                                  "or wrote words that do not depend on the content)"]),
})
