"""What a conforming kernel may do with one provider's answer.

Given the chain a provider was sent and what it answered, `judge` lists the
chains the kernel may hold afterwards (more than one where a ruling accepts
several behaviours), the diagnostics each requires, whether the turn may
fail, and which requirement is broken when the kernel does otherwise: each
wrong chain it recognises with the rule that chain breaks and why, and a blame
for any other. This is ctxconf's own reading of the rules, kept apart from the
reference kernel so that the two are independent implementations of the same
spec.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from conformance.engine.matching import in_place
from conformance.engine.scenario import FakeProvider, Model
from conformance.wire import errors, tokens


@dataclass(frozen=True)
class Expected:
    """One section the chain must hold: equal in every field but these."""
    section: dict
    token_figures: tuple[int, ...]   # R-TOKENS-RECOUNT: the stated figure or the kernel's count
    relabel: bool = False            # R-MISSING-LABEL: any non-empty label will do

    def matches(self, observed: dict) -> bool:
        for key, want in self.section.items():
            if key == "tokens":
                if observed.get("tokens") not in self.token_figures:
                    return False
            elif key == "label" and self.relabel:
                if not observed.get("label"):
                    return False
            elif observed.get(key) != want:
                return False
        return True


@dataclass(frozen=True)
class Needed:
    """A diagnostic the kernel must report: its category (None: any) and the
    requirement a missing one breaks."""
    category: str | None
    requirement: str
    message_contains: tuple[str, ...] = ()   # the message must hold one of these (none: any message)
    miscategorized: str = ""   # broken when diagnostics name the provider, none with this category
    names: tuple[str, ...] = ()   # other providers the diagnostic may name instead (a compactor's rewrite)

    def carried_by(self, message: str) -> bool:
        return not self.message_contains or any(m in message for m in self.message_contains)


@dataclass
class Outcome:
    chain: list[Expected]
    diagnostics: list[Needed] = field(default_factory=list)
    history: list[dict] | None = None   # a rewritten history the kernel applies; None leaves it
    # When a kernel breaking the judgment's rule would hold this same chain, holding it shows nothing;
    # only this report, if given, shows the rule was kept.
    evidenced_by: Needed | None = None

    def matches(self, observed: list[dict]) -> bool:
        return len(observed) == len(self.chain) and all(e.matches(o) for e, o in zip(self.chain, observed))

    def matches_but_tokens(self, observed: list[dict]) -> bool:
        return len(observed) == len(self.chain) and all(
            e.matches({**o, "tokens": e.token_figures[0]}) for e, o in zip(self.chain, observed))


@dataclass(frozen=True)
class Misreading:
    """A wrong chain the judge recognises: a kernel holding a chain `shown_by` accepts broke `requirement`."""
    requirement: str
    why: str
    shown_by: Callable[[list[dict]], bool]
    alone: bool = False   # it accounts for the whole chain: nothing else is charged beside it


@dataclass(eq=False)  # one judgment of one call: kernel_checks removes a retried call's by identity
class Judgment:
    provider: str
    outcomes: list[Outcome]
    blame: str                       # broken when the chain afterwards matches no outcome
    why: str = "a conforming reply is accepted as returned"
    may_fail_turn: bool = False
    fail_blame: str = "K-FIRE-EACH-TURN"  # broken when the turn fails though it may not
    turn_error_contains: tuple[str, ...] = ()  # a failed turn's error must hold one of these
    rejected: list[dict] = field(default_factory=list)  # content that must not reach the prompt
    rejected_history: list[dict] | None = None          # a rewrite that must not be applied
    rejected_history_blame: str = ""
    # The wrong chains it recognises, in the order they take precedence: worked out only when a kernel holds a
    # chain no outcome matches, which a conforming kernel never does.
    misreadings: Callable[[], list[Misreading]] = list
    blame_is_a_guess: bool = False   # it only names the content likely kept wrongly: a misreading found replaces it

    def broken(self, observed: list[dict]) -> list[Misreading]:
        """What holding `observed`, which no outcome matches, breaks: the first misreading that accounts for it
        alone, else each one it shows, and the blame unless one of them replaces it."""
        found = [m for m in self.misreadings() if m.shown_by(observed)]
        alone = [m for m in found if m.alone]
        if alone:
            return alone[:1]
        if not found or not self.blame_is_a_guess:
            found.append(Misreading(self.blame, "", lambda chain: True))
        return found


def kept_as_is(sections: list[dict]) -> list[Expected]:
    return [Expected(s, (s["tokens"],)) for s in sections]


def left_out(provider: str, prior: list[dict], needed: list[Needed]) -> list[Outcome]:
    """A failed provider's contribution is left out of this turn: the chain before it stands. A kernel that
    carries the chain across turns may have handed it sections of its own from the last turn; it may keep
    them, or leave them out with the rest of its contribution (R-ERROR-ISOLATION)."""
    outcomes = [Outcome(kept_as_is(prior), needed)]
    if any(s["provider"] == provider for s in prior):
        outcomes.append(Outcome(kept_as_is([s for s in prior if s["provider"] != provider]), list(needed)))
    return outcomes


# --- failed calls ---------------------------------------------------------------

_ISOLATE_BLAME = {"source_unavailable": "K-ERR-SOURCE-UNAVAILABLE", "budget_exceeded": "K-ERR-BUDGET-EXCEEDED",
                  "scope_violation": "K-ERR-SCOPE-VIOLATION"}
_ISOLATE_LOG = {"source_unavailable": "K-ERR-SOURCE-UNAVAILABLE", "budget_exceeded": "K-NO-SILENT-FALLBACK",
                "scope_violation": "K-ERR-SCOPE-VIOLATION"}


def judge_failure(provider: str, prior: list[dict], error: dict, model: Model, compactor: bool = False) -> Judgment:
    """Contribute failed (R-ERROR-ISOLATION): classify by the ContextError, not the code."""
    category = errors.category_of(error.get("context_error"))
    if category in errors.ISOLATING:
        needed = Needed(category, _ISOLATE_LOG[category], miscategorized=_ISOLATE_BLAME[category])
        # The taxonomy shields only a non-compactor from failing the turn over budget_exceeded; a compactor
        # that cannot fit may fail it, as its over-budget chain may (R-COMPACTOR-OVER-BUDGET).
        may_fail = compactor and category == "budget_exceeded"
        return _misread(Judgment(provider, left_out(provider, prior, [needed]),
                                 blame=_ISOLATE_BLAME[category], fail_blame=_ISOLATE_BLAME[category],
                                 may_fail_turn=may_fail,
                                 why=f"a {category} failure isolates the provider: the chain before it stands"
                                     + (", or, from a compactor, fails the turn" if may_fail else "")),
                        prior, model)
    if category == "invalid_request":
        needed = Needed("invalid_request", "K-ERR-INVALID-REQUEST-LOG")
        why, contains = "an invalid_request failure is isolated with a diagnostic or fails the turn", ()
    elif category == "unknown" or raw_messages(error):
        # The provider's own words (R-RAW-MESSAGE). No category at all (no ContextError, or one whose category
        # is unspecified) is "anything else" in the taxonomy: an unknown failure too.
        raw = raw_messages(error)
        needed = Needed("unknown" if category else None, "K-ERR-UNKNOWN-RAW-MESSAGE", raw)
        why = ("an unknown failure" if category else f"a failure without a category ({error.get('code')})") + \
            " is reported with the provider's own message"
        contains = raw
    else:
        needed = Needed(None, "K-NO-SILENT-FALLBACK")
        why, contains = f"a failure without a ContextError ({error.get('code')}) must be visible", ()
    return _misread(Judgment(provider, left_out(provider, prior, [needed]), blame="K-PRIOR-SECTIONS",
                             why=why, may_fail_turn=True, turn_error_contains=contains), prior, model)


def either(answered: Judgment, other: Judgment,
           because: str = "answered at the kernel's deadline, it timed out") -> Judgment:
    """Two readings of one call, both legal: a call whose answer came at the kernel's deadline, which the kernel
    may have taken or given up on as timed out (K-TIMEOUT), say. Content the answer must not bring in stays
    barred."""
    contains = () if not (answered.turn_error_contains and other.turn_error_contains) else \
        (*answered.turn_error_contains, *other.turn_error_contains)
    return replace(answered, outcomes=[*answered.outcomes, *other.outcomes],
                   may_fail_turn=answered.may_fail_turn or other.may_fail_turn, turn_error_contains=contains,
                   why=f"{answered.why}; or, {because}: {other.why}")


def raw_messages(error: dict) -> tuple[str, ...]:
    """The messages a report of this failure may carry, either of which is its raw message: its ContextError's
    and its status message. When one of them is empty, reporting that one is reporting a raw message too, so no
    text is asked for (R-RAW-MESSAGE)."""
    context_error, status = (error.get("context_error") or {}).get("message") or "", error.get("message") or ""
    if context_error and status:
        return tuple(dict.fromkeys((context_error, status)))
    return () if error.get("context_error") or not status else (status,)


def judge_crash(provider: str, prior: list[dict], model: Model) -> Judgment:
    """The provider's process died during Contribute (R-PLUGIN-CRASH): a source that became unavailable,
    whatever the transport said. Isolated, visibly, and the turn goes on."""
    return _misread(Judgment(provider, left_out(provider, prior, [Needed(None, "K-NO-SILENT-FALLBACK")]),
                             blame="K-ERR-SOURCE-UNAVAILABLE", fail_blame="K-ERR-SOURCE-UNAVAILABLE",
                             why="a provider whose process died is unavailable: the chain before it stands, "
                                 "the turn goes on"), prior, model)


# --- replies -----------------------------------------------------------------------

def judge_reply(fake: FakeProvider, prior: list[dict], reply: dict, budget: int, model: Model) -> Judgment:
    sections, rewrite = reply.get("sections", []), reply.get("rewritten_history", [])
    if not fake.compactor and not in_place(fake.name, prior, sections):
        return Judgment(fake.name, [Outcome(kept_as_is(prior), [Needed("scope_violation", "K-SCOPE-LOG")])],
                        blame="K-SCOPE-DISCARD", fail_blame="K-SCOPE-NO-FAIL",
                        why="the reply touched sections it does not own; the whole reply is discarded",
                        rejected=[s for s in sections if s not in prior], rejected_history=rewrite or None,
                        rejected_history_blame="K-REWRITE-COMPACTOR-ONLY",
                        # Whatever it kept of a reply it had to discard whole, the fault is keeping it.
                        misreadings=lambda: [Misreading("K-SCOPE-DISCARD", "the kernel kept some of it",
                                                        lambda chain: True, alone=True)])
    own = [s for s in sections if fake.compactor or s["provider"] == fake.name]
    non_text = [s for s in own if not tokens.is_text_only(s["content"])]
    # A label of only spaces may be taken for none (R-MISSING-LABEL); one that is empty must be.
    # A section with non-text blocks and no label is both: stripped of the blocks, it is an unlabeled one.
    unlabeled = [s for s in own if not s["label"].strip()]
    # A compactor's section may be another provider's it rewrote: a diagnostic may name either (docs).
    names = lambda s: (s["provider"],) if fake.compactor else ()
    content_rules = [Needed("non_text_content", "K-NON-TEXT-REJECT", names=names(s)) for s in non_text]

    admissible = [s for s in own if s not in non_text and s not in unlabeled]
    # Over budget by some reading of the count, a chain no outcome matches breaks the budget rule.
    over = _budget_blame(fake, admissible, own, budget, model, max)
    # Within budget, the blame can only guess which offending section was kept; a misreading names it.
    guess = None if over else "K-NON-TEXT-REJECT" if content_rules else None
    malformed = bool(non_text or unlabeled)
    judgment = Judgment(fake.name, [], blame=over or guess or "K-PRIOR-SECTIONS", blame_is_a_guess=bool(guess),
                        # A malformed reply may fail the turn (R-NON-TEXT-WHOLE-SECTION, R-MISSING-LABEL).
                        may_fail_turn=malformed,
                        fail_blame="K-BUDGET-NO-TURN-FAIL" if over and not fake.compactor else "K-FIRE-EACH-TURN",
                        rejected_history_blame="K-COMPACTOR-BUDGET" if fake.compactor else "K-REWRITE-COMPACTOR-ONLY")
    notes = []
    if rewrite and not fake.compactor:
        # R-NONCOMPACTOR-REWRITE: the sections may be kept (the rewrite ignored) or the whole reply discarded,
        # which is a fallback to the chain before it and so is reported.
        judgment.outcomes.append(Outcome(kept_as_is(prior), [Needed(None, "K-NO-SILENT-FALLBACK")]))
        notes.append("a non-compactor's rewritten_history is never applied (R-NONCOMPACTOR-REWRITE)")
    if not fake.compactor and sections[:len(prior)] != prior:
        # It edited or dropped sections under its own name that it was handed: its own by name (R-PLACEMENT),
        # or, for a kernel that holds the prior chain untouchable, a scope violation to discard.
        judgment.outcomes.append(Outcome(kept_as_is(prior), [Needed("scope_violation", "K-SCOPE-LOG")]))
        notes.append("it changed sections under its own name that it was handed: accepted, or discarded as a "
                     "scope violation (R-PLACEMENT)")
    if malformed:
        # The whole reply may be refused for a malformed section, visibly; or the turn failed.
        judgment.outcomes.append(Outcome(kept_as_is(prior), (content_rules or [
            Needed("missing_label", "K-NO-SILENT-FALLBACK", names=names(unlabeled[0]))])[:1]))
    if non_text:
        notes.append("a section holding non-text blocks is dropped whole, or only those blocks are, visibly; "
                     "or the reply is refused or the turn failed (R-NON-TEXT-WHOLE-SECTION)")
    if unlabeled:
        notes.append("an unlabeled section is dropped, given a label or kept as it is (R-MISSING-LABEL)")
    for admitted, relabelled, needed in _ways_to_admit(own, non_text, unlabeled, content_rules, names):
        versions = dict(admitted)  # each own section kept, as it may be kept (its non-text blocks removed)
        kept = list(versions.values())
        figures = _figures(kept, own, model)
        stated = sum(s["tokens"] for s in kept)
        # When accepting and rejecting a compactor's chain leave the same chain (it returned the prior
        # chain as it was, token figures aside), the chain shows nothing: only a report of the rejection does.
        unchanged = len(kept) == len(prior) and all(map(same_but_tokens, kept, prior))
        evidence = Needed("budget_exceeded", "K-COMPACTOR-BUDGET") if fake.compactor and unchanged else None
        # R-COMPACTOR-OVER-BUDGET: its chain rejected, a compactor's rewrite may go with it or still apply.
        rejected = [Outcome(kept_as_is(prior), list(needed), history, evidenced_by=evidence)
                    for history in ((None, rewrite) if fake.compactor and rewrite else (None,))]
        if min(figures) > budget:
            judgment.outcomes += rejected
            judgment.may_fail_turn |= fake.compactor
            notes.append(f"{'its whole chain' if fake.compactor else 'its sections'} count {_spread(figures)} "
                         f"(stated {stated}) against a budget of {budget}: rejected whole")
            continue
        accepted = Outcome([Expected(s, (s["tokens"],)) if s not in own else
                            Expected(versions[id(s)], (s["tokens"], model.count(s["content"])), id(s) in relabelled)
                            for s in sections if s not in own or id(s) in versions],
                           list(needed), rewrite if fake.compactor and rewrite else None)
        judgment.outcomes.append(accepted)
        if rewrite and not fake.compactor:
            continue
        if max(figures) > budget:
            judgment.outcomes += rejected
            judgment.may_fail_turn |= fake.compactor
            notes.append(f"counted one way its sections fit a budget of {budget}, counted another they do not "
                         f"({_spread(figures)}): kept or rejected (R-BUDGET-PER-PROVIDER)")
        elif stated > budget:
            judgment.outcomes += rejected
            notes.append(f"it states {stated} tokens, over its budget of {budget}, but counts {_spread(figures)}: "
                         "kept or rejected (R-TOKENS-RECOUNT)")
    kept_ids = {id(e.section) for o in judgment.outcomes for e in o.chain}
    judgment.rejected = [s for s in own if id(s) not in kept_ids]
    if rewrite and (not fake.compactor or all(o.history is None for o in judgment.outcomes)):
        judgment.rejected_history = rewrite
    judgment.why = "; ".join(dict.fromkeys(notes)) or judgment.why
    return _misread(judgment, sections + prior, model,
                    lambda: [_kept_nothing(prior, admissible, own, budget, model, guess or "K-PRIOR-SECTIONS")])


def _ways_to_admit(own: list[dict], non_text: list[dict], unlabeled: list[dict], content_rules: list[Needed],
                   names) -> list[tuple[list[tuple[int, dict]], set[int], list[Needed]]]:
    """Each reading of what a kernel may keep of a reply's own sections, the ones it may give a label of its
    own, and the reports it then owes: a section holding non-text blocks dropped, or only those blocks (and
    the section with them if nothing is left); an unlabeled one dropped, given a label, or kept as it is
    inside a boundary of the kernel's own (R-MISSING-LABEL)."""
    ways = []
    spaces = [s for s in unlabeled if s["label"]]  # a label of only spaces: a label, or none
    for strip in ((False, True) if non_text else (False,)):
        for unlabeled_kept in (("dropped", "relabelled", "kept") if unlabeled else ("dropped",)):
            for spaces_labelled in ((False, True) if spaces else (False,)):
                for keep_emptied in ((False, True) if strip and any(not _stripped(s)["content"] for s in non_text)
                                     else (False,)):
                    none = [s for s in unlabeled if not (spaces_labelled and s in spaces)]
                    kept = []   # (id of the section as returned, the section as kept)
                    for s in own:
                        if s in non_text and not (strip and (_stripped(s)["content"] or keep_emptied)):
                            continue  # dropped for its non-text blocks
                        if s not in none or unlabeled_kept != "dropped":
                            kept.append((id(s), _stripped(s)))
                    relabelled = {id(s) for s in none} if unlabeled_kept == "relabelled" else set()
                    # A dropped unlabeled section is reported; one with non-text blocks already is, for them.
                    needed = content_rules + [Needed("missing_label", "K-NO-SILENT-FALLBACK", names=names(s))
                                              for s in none if unlabeled_kept == "dropped" and s not in non_text]
                    ways.append((kept, relabelled, needed))
    return ways


def _stripped(section: dict) -> dict:
    """The section without its non-text blocks (itself when it has none)."""
    text = [b for b in section["content"] if tokens.is_text_only([b])]
    return section if len(text) == len(section["content"]) else {**section, "content": text}


def _figures(kept: list[dict], returned: list[dict], model: Model) -> set[int]:
    """What a provider's sections count against its budget, by each reading the text leaves open: the sum of
    each section's count or one count over all of them (R-BUDGET-PER-PROVIDER), over the sections the kernel
    keeps or over every section it was returned, those it drops for other reasons included."""
    def over(sections: list[dict]) -> set[int]:
        return {sum(model.count(s["content"]) for s in sections),
                model.count([b for s in sections for b in s["content"]])}
    return over(kept) | over(returned)


def _spread(figures: set[int]) -> str:
    return str(min(figures)) if len(figures) == 1 else f"{min(figures)} to {max(figures)}"


def same_but_tokens(a: dict, b: dict) -> bool:
    """Two sections equal in every field but the token figure."""
    return {**a, "tokens": 0} == {**b, "tokens": 0}


def _budget_blame(fake: FakeProvider, kept: list[dict], returned: list[dict], budget: int, model: Model,
                  reading=min) -> str | None:
    """Which budget rule a kernel that keeps these sections breaks, if they are over budget by the reading
    (min: every reading; max: some reading) of how they are counted."""
    if reading(_figures(kept, returned, model)) <= budget:
        return None
    if fake.compactor:
        return "K-COMPACTOR-BUDGET"
    if sum(s["tokens"] for s in kept) <= budget:
        return "K-BUDGET-VALIDATE"
    if any(s["truncated"] for s in kept):
        return "K-TRUNCATED-NOT-ENOUGH"
    return "K-BUDGET-REJECT"


# --- wrong chains ---------------------------------------------------------------------

def _misread(judgment: Judgment, offered: list[dict], model: Model,
             first: Callable[[], list[Misreading]] = list) -> Judgment:
    """Give `judgment` the wrong chains any answer may leave, after `first`, in the order they are charged."""
    def misreadings() -> list[Misreading]:
        count = "K-COUNT-RESOLUTION" if model.exact else "K-COUNT-FALLBACK-FORMULA"
        how = f"{model.id}'s tokenizer" if model.exact else "the fallback formula"
        # A figure neither offered nor right is the kernel's own count, off, and its budget decisions with it.
        return [
            *first(),
            Misreading(count, f"the kernel kept the right sections, with a token figure of its own, not {how}'s "
                              "count", lambda chain: any(o.matches_but_tokens(chain) for o in judgment.outcomes),
                       alone=True),
            Misreading(count, f"a section the kernel kept carries a token figure neither offered nor {how}'s count",
                       lambda chain: _miscounted(chain, offered, model), alone=True),
            Misreading("K-NON-TEXT-REJECT", "the kernel kept a section holding non-text blocks "
                                            "(R-NON-TEXT-WHOLE-SECTION)",
                       lambda chain: any(not tokens.is_text_only(s["content"]) for s in chain)),
            Misreading("K-NO-KERNEL-CUT", "the kernel kept a section it was offered, shortened",
                       lambda chain: any(_cut_from(s, offered) for s in chain)),
        ]
    judgment.misreadings = misreadings
    return judgment


def _kept_nothing(prior: list[dict], admissible: list[dict], returned: list[dict], budget: int, model: Model,
                  otherwise: str) -> Misreading:
    """The kernel kept nothing of a reply it had to keep, at least in part: which rule did it misapply?"""
    counted = min(_figures(admissible, returned, model))
    formula = Model(model.id, model.context_window, model.reserved_output, model.system_overhead)
    by_formula = min(_figures(admissible, returned, formula))
    # Over by the formula though the tokenizer keeps them within: the count is the likelier fault, even at
    # exactly the budget (a kernel that compares right but counts wrong drops them too), and the message
    # names the other reading.
    if model.exact and by_formula > budget:
        at_budget = f" (or, had it counted right, it took {counted}, exactly its budget, for over it: " \
                    f"K-BUDGET-REJECT)" if counted == budget else ""
        requirement, why = "K-COUNT-RESOLUTION", (f"the fallback formula counts {by_formula}, over its budget of "
                                                  f"{budget}, but {model.id}'s tokenizer counts {counted}{at_budget}")
    elif counted == budget:
        requirement, why = "K-BUDGET-REJECT", f"they count {counted}, exactly its budget, which is within it"
    else:
        requirement, why = otherwise, f"they count {counted} against its budget of {budget}"
    return Misreading(requirement, f"the kernel kept none of its admissible sections: {why}",
                      lambda chain: chain == prior, alone=True)


def _miscounted(chain: list[dict], offered: list[dict], model: Model) -> bool:
    """Some kept section, otherwise as offered, carries a figure of the kernel's own that is wrong:
    neither one it was offered with nor the right count."""
    for kept in chain:
        figures = {original["tokens"] for original in offered if same_but_tokens(kept, original)}
        if figures and kept["tokens"] not in figures | {model.count(kept["content"])}:
            return True
    return False


def _cut_from(section: dict, offered: list[dict]) -> bool:
    """`section` is a shortened copy of an offered section with the same owner and label."""
    text = tokens.text_of(section["content"])
    if any(same_but_tokens(section, original) for original in offered):
        return False
    for original in offered:
        if (original["provider"], original["label"]) == (section["provider"], section["label"]):
            whole = tokens.text_of(original["content"])
            if len(text) < len(whole) and whole.startswith(text[: max(1, len(text) - 3)]):
                return True
    return False
