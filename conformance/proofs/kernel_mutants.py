"""Mutants of the reference kernel: each a small, deliberate deviation.

Every mutant overrides one decision of ReferenceKernel and declares the
requirement(s) it breaks. The self-test runs the suite against each one and
expects exactly those to be reported failing: every one of `breaks` must
fail, and nothing else may, but for the collateral. In a vector case that
fails a declared requirement, the other requirements that vector cites are
collateral by derivation, in that case only (selftest.stray_failures); `also`
lists what the same bug unavoidably breaks anywhere else (a kernel that counts
characters gets history_tokens wrong as well as the formula). A property-only mutant is seen
through the one counterexample the property tests stop at, so it declares in
`breaks` what that shows and the rest under `also`. A `property_only` mutant
hides where no golden vector looks; only the generated scenarios find it.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import threading

from conformance.bindings.base import CallFailed
from conformance.bindings.go_plugin_protocol import CALLBACK_BROKER_ID
from conformance.proofs import wire_forms
from conformance.reference.kernel import ReferenceKernel, Session, TurnFailed
from conformance.reference.plugin_host import PluginFleet
from conformance.wire import errors, tokens

MUTANTS: dict[str, type[ReferenceKernel]] = {}


def mutant(*breaks: str, also: list[str] = (), property_only: bool = False, launches_plugins: bool = False):
    """`launches_plugins`: a bug in the plugin machinery, run in the plugin-launching mode on the vectors
    under kernel/plugins/ (the other vectors and the properties relay through the same machinery and
    would only repeat them, at a second apiece)."""
    def register(cls: type[ReferenceKernel]) -> type[ReferenceKernel]:
        cls.breaks, cls.also, cls.property_only = breaks, tuple(also), property_only
        cls.launches_plugins = launches_plugins
        MUTANTS[cls.__name__] = cls
        return cls
    return register


# --- order and firing -------------------------------------------------------------

@mutant("K-DECLARATION-ORDER", also=["KC-NO-REORDER"])
class AlphabeticalOrder(ReferenceKernel):
    """Calls the providers sorted by name, as a registry keyed by name would."""

    def providers_for_turn(self, session):
        return sorted(self.providers, key=lambda p: p.name)


@mutant("KC-NO-REORDER", also=["K-DECLARATION-ORDER"])
class StaticFirst(ReferenceKernel):
    """Warns about a dynamic-before-static declaration, then 'fixes' it by calling static providers first."""

    def providers_for_turn(self, session):
        return sorted(self.providers, key=lambda p: p.stability != "STABILITY_STATIC")


@mutant("K-FIRE-EACH-TURN")
class SessionStartOnly(ReferenceKernel):
    """Assembles context on a session's first turn only."""

    def providers_for_turn(self, session: Session):
        return self.providers if session.turns == 0 else []


@mutant("K-PRIOR-SECTIONS")
class CarriesAnotherSessionsChain(ReferenceKernel):
    """Starts each firing from the final chain of the last turn it assembled, whichever session that was."""

    def assemble(self, request, call):
        result = super().assemble(request, call)
        self._last = result["sections"]
        return result

    def initial_chain(self, session):
        return list(getattr(self, "_last", []))


@mutant("K-SEQUENTIAL", also=["K-ERR-INVALID-REQUEST-NO-RETRY"])  # the twin is a retry, of an invalid one too
class HedgedFirstCall(ReferenceKernel):
    """Sends the first provider's request twice at once and keeps the first answer (a 'hedged' request)."""

    def contribute(self, provider, request, call):
        if request["prior_sections"] or provider is not self.providers[0]:
            return super().contribute(provider, request, call)
        twin = threading.Thread(target=self._quietly, args=(provider, request, call))
        twin.start()
        try:
            return super().contribute(provider, request, call)
        finally:
            twin.join()

    def _quietly(self, provider, request, call):
        try:
            call("Contribute", provider.name, request)
        except CallFailed:
            pass


@mutant("KC-CONFIGURE")
class NeverConfigures(ReferenceKernel):
    """Asks each provider for its capabilities but never calls Configure."""

    def start_providers(self, declared, call):
        return [self.provider_from(entry, call("GetCapabilities", entry["name"], {})) for entry in declared]


@mutant("KC-CONFIGURE")
class ConfiguresEveryoneAlike(ReferenceKernel):
    """Configures every provider with the first one's config."""

    def start_providers(self, declared, call):
        first = declared[0].get("config", {}) if declared else {}
        return super().start_providers([{**entry, "config": first} for entry in declared], call)


@mutant("K-FIRE-EACH-TURN")
class AssemblesOncePerTurn(ReferenceKernel):
    """Takes a second assemble of the same turn (its next model call) for a retry and answers it from memory."""

    def assemble(self, request, call):
        key = (request["turn"]["session_id"], request["turn"]["turn_id"])
        memory = self.__dict__.setdefault("memory", {})
        if key not in memory:
            memory[key] = super().assemble(request, call)
        return memory[key]

    def load(self, request, call):
        self.memory = {}
        return super().load(request, call)


@mutant("K-FIRE-EACH-TURN")
class GivesUpOnFailingProviders(ReferenceKernel):
    """Stops asking a provider that failed on three turns in a row, for the rest of the session."""

    def providers_for_turn(self, session):
        strikes = self.__dict__.setdefault("strikes", {})
        return [p for p in super().providers_for_turn(session) if strikes.get((id(session), p.name), 0) < 3]

    def on_failure(self, provider, failure):
        session = self.__dict__.get("session_now")
        strikes = self.__dict__.setdefault("strikes", {})
        strikes[(id(session), provider.name)] = strikes.get((id(session), provider.name), 0) + 1
        return super().on_failure(provider, failure)

    def run_chain(self, turn, model, session, diagnostics, call):
        self.session_now = session
        return super().run_chain(turn, model, session, diagnostics, call)

    def load(self, request, call):
        self.strikes = {}
        return super().load(request, call)


# --- config-load warnings -------------------------------------------------------------

@mutant("KC-BUDGET-SUM-WARN")
class NoBudgetWarning(ReferenceKernel):
    """Never warns about the caps' sum."""

    def budget_warning(self):
        return None


@mutant("KC-BUDGET-SUM-WARN")
class BudgetWarningFromDefaults(ReferenceKernel):
    """Sums the declared defaults, ignoring agent.hcl overrides."""

    def budget_warning(self):
        total = sum(int(p.capabilities.get("default_token_budget", 0)) for p in self.providers)
        ceilings = self.routing_ceilings()
        return {"code": "budget_sum_exceeds_ceiling", "message": "sum"} if total > min(ceilings) else None


@mutant("KC-BUDGET-SUM-WARN")
class BudgetWarningPrimaryOnly(ReferenceKernel):
    """Compares the caps with the primary model only, not the fallbacks."""

    def routing_ceilings(self):
        return super().routing_ceilings()[:1]


@mutant("KC-BUDGET-SUM-WARN")
class BudgetWarningAtEquality(ReferenceKernel):
    """Warns when the sum merely equals the smallest ceiling."""

    def budget_warning(self):
        total, ceilings = sum(self.resolve_cap(p) for p in self.providers), self.routing_ceilings()
        return {"code": "budget_sum_exceeds_ceiling", "message": "sum"} if total >= min(ceilings) else None


@mutant("KC-STABILITY-ORDER-WARN")
class NoStabilityWarning(ReferenceKernel):
    """Never warns about a dynamic provider ahead of a static one."""

    def stability_warning(self):
        return None


@mutant("KC-STABILITY-ORDER-WARN")
class UndeclaredStabilityIsStatic(ReferenceKernel):
    """Lints a provider that declares no stability as a static one, so one behind a dynamic provider is warned."""

    def stability_warning(self):
        for provider in self.providers:
            if provider.stability == "STABILITY_UNSPECIFIED":
                provider.capabilities = {**provider.capabilities, "stability": "STABILITY_STATIC"}
        return super().stability_warning()


# --- requests --------------------------------------------------------------------------------

@mutant("K-TOKEN-BUDGET", also=["KC-BUDGET-SUM-WARN"])
class IgnoresOverride(ReferenceKernel):
    """Always hands out the provider's default, ignoring the agent.hcl override."""

    def resolve_cap(self, provider):
        return int(provider.capabilities.get("default_token_budget", 0))


@mutant("K-TOKEN-BUDGET")
class InventsAMissingDefault(ReferenceKernel):
    """Hands a provider that declared no default budget one of its own choosing."""

    def resolve_cap(self, provider):
        return super().resolve_cap(provider) or 1000


@mutant("K-TOKEN-BUDGET")
class ReservesHeadroom(ReferenceKernel):
    """Keeps a tenth of every cap back for safety, whatever the model (R-BUDGET-SMALLER-MODEL allows less only
    where a smaller model is in play or the caps do not fit)."""

    def token_budget(self, provider, model):
        return self.resolve_cap(provider) * 9 // 10


@mutant("K-MODEL-TARGET", also=["K-EFFECTIVE-CEILING"])
class PrimaryModelTarget(ReferenceKernel):
    """Describes the primary model in model_target whatever model the turn runs on."""

    def model_target(self, model):
        return super().model_target(self.models[self.routing[0]])


@mutant("K-EFFECTIVE-CEILING", also=["KC-BUDGET-SUM-WARN"])
class EightyPercentCeiling(ReferenceKernel):
    """Takes 80% of the context window as the ceiling instead of subtracting reserved output and overhead."""

    def effective_ceiling(self, model):
        return model["context_window"] * 80 // 100


@mutant("K-TURN-FIELDS")
class TurnNumberAsId(ReferenceKernel):
    """Sends a turn counter as turn_id instead of the turn's own id."""

    def run_chain(self, turn, model, session, diagnostics, call):
        return super().run_chain({**turn, "turn_id": f"turn_{session.turns + 1:02d}"}, model, session, diagnostics, call)


@mutant("K-HISTORY-NOT-TO-OTHERS")
class HistoryToEveryone(ReferenceKernel):
    """Sends the conversation to every provider."""

    def history_for(self, provider, history):
        return history


@mutant("K-HISTORY-TO-COMPACTOR")
class HistoryToFirstCompactorOnly(ReferenceKernel):
    """Sends the conversation to the first compactor only."""

    def history_for(self, provider, history):
        first = next((p for p in self.providers if p.compactor), None)
        return history if provider is first else []


@mutant("K-HISTORY-TOKENS")
class HistoryTokensOfFirstTurn(ReferenceKernel):
    """Counts the history once per session and keeps sending that figure."""

    def count_history(self, session, model, call):
        if not hasattr(session, "first_count"):
            session.first_count = super().count_history(session, model, call)
        return session.first_count


@mutant("K-ASSEMBLED-LAST-TURN")
class AssembledIncludesHistory(ReferenceKernel):
    """Reports the previous turn's sections plus its history as assembled_tokens_last_turn."""

    def assembled_total(self, chain, session, model, call):
        return super().assembled_total(chain, session, model, call) + self.count_history(session, model, call)


@mutant("K-TURN-FIELDS")
class SessionsKeepTheirFirstDirectory(ReferenceKernel):
    """Sends every turn of a session the working directory its first turn had."""

    def turn_fields(self, turn):
        first = self.__dict__.setdefault("directories", {}).setdefault(turn["session_id"], turn.get("working_directory", ""))
        return {**super().turn_fields(turn), "working_directory": first}


@mutant("K-HISTORY-TO-COMPACTOR")
class HistoryWithoutMessageIds(ReferenceKernel):
    """Keeps each message's role and content only: its id and who produced it are lost."""

    def history_for(self, provider, history):
        return [{"role": m["role"], "content": m["content"]} for m in super().history_for(provider, history)]


@mutant("K-TOKEN-BUDGET")
class BudgetsShareWhatHistoryLeaves(ReferenceKernel):
    """Scales the caps down to what the ceiling leaves once the conversation is counted."""

    def run_chain(self, turn, model, session, diagnostics, call):
        self.room = self.effective_ceiling(model) - self.count_history(session, model, call)
        return super().run_chain(turn, model, session, diagnostics, call)

    def token_budget(self, provider, model):
        caps = sum(self.resolve_cap(p) for p in self.providers)
        cap = self.resolve_cap(provider)
        return cap if caps <= self.room else max(0, cap * max(self.room, 0) // caps)


# --- token counting -------------------------------------------------------------------------

@mutant("K-COUNT-FALLBACK-FORMULA", also=["K-ASSEMBLED-LAST-TURN", "K-BUDGET-REJECT", "K-HISTORY-TOKENS"])
class PerBlockRounding(ReferenceKernel):
    """Rounds each text block up separately and adds the results."""

    def fallback(self, content):
        return sum(tokens.fallback_count([block]) for block in content)


@mutant("K-COUNT-FALLBACK-FORMULA", also=["K-ASSEMBLED-LAST-TURN", "K-BUDGET-REJECT", "K-HISTORY-TOKENS"])
class CharactersNotBytes(ReferenceKernel):
    """Counts characters instead of UTF-8 bytes."""

    def fallback(self, content):
        return (len(tokens.text_of(content)) + 3) // 4


@mutant("K-COUNT-FALLBACK-FORMULA",
        also=["K-ASSEMBLED-LAST-TURN", "K-BUDGET-REJECT", "K-HISTORY-TOKENS"])
class FloorNotCeiling(ReferenceKernel):
    """Rounds down instead of up."""

    def fallback(self, content):
        return len(tokens.text_of(content).encode()) // 4


@mutant("K-COUNT-NON-TEXT-ZERO", also=["K-COUNT-FALLBACK-FORMULA"])
class CountsNonText(ReferenceKernel):
    """Adds the JSON size of non-text blocks to the fallback count."""

    def fallback(self, content):
        size = len(tokens.text_of(content).encode()) + sum(len(json.dumps(b)) for b in content if "text" not in b)
        return (size + 3) // 4


@mutant("K-COUNT-NON-TEXT-ZERO")
class CountsThinkingText(ReferenceKernel):
    """Counts the text inside thinking and tool blocks into history_tokens, as if it were the model's input."""

    def count_history(self, session, model, call):
        inner = lambda b: b if "text" in b else {"text": {"text": "".join(_strings(b))}}
        return self.count([inner(b) for m in session.history for b in m.get("content", [])], model, call)


@mutant("K-COUNT-SINGLE-FORMULA", also=["K-COUNT-FALLBACK-FORMULA", "K-HISTORY-TOKENS"])
class CodeAwareFallback(ReferenceKernel):
    """Uses 3 bytes per token for text that looks like code: a second formula."""

    def fallback(self, content):
        text = tokens.text_of(content)
        per = 3 if any(mark in text for mark in ("def ", "return", "{", "(")) else 4
        return (len(text.encode()) + per - 1) // per


@mutant("K-COUNT-RESOLUTION", also=["K-COUNT-EXACT-FLAG", "K-HISTORY-TOKENS"])
class IgnoresTokenizer(ReferenceKernel):
    """Always uses the fallback formula, even for models with a tokenizer."""

    def tokenizer_count(self, content, model, call):
        return None


@mutant("K-COUNT-RESOLUTION", also=["K-HISTORY-TOKENS"])
class ModelRefWithoutProvider(ReferenceKernel):
    """Names the model but not its provider when it asks for a count (a bug found in a real kernel)."""

    def model_ref(self, model):
        return {"id": model["id"]}


@mutant("K-COUNT-RESOLUTION", also=["K-HISTORY-TOKENS"])
class ModelRefPrimaryProvider(ReferenceKernel):
    """Sends every model's count to the primary model's provider."""

    def model_ref(self, model):
        return {"provider": self.models[self.routing[0]].get("provider", ""), "id": model["id"]}


@mutant("K-COUNT-RESOLUTION", also=["K-HISTORY-TOKENS"])
class ModelIdAsProvider(ReferenceKernel):
    """Puts the model's id in model_ref's provider field and leaves its id empty."""

    def model_ref(self, model):
        return {"provider": model["id"], "id": ""}


@mutant("K-COUNT-RESOLUTION", also=["K-COUNT-FALLBACK-FORMULA", "K-COUNT-EXACT-FLAG"])
class ResolvesModelRefById(ReferenceKernel):
    """Looks a CountTokens model_ref up by the model's id alone, whatever model provider it names."""

    def count_tokens(self, request, call):
        ref = (request["request"].get("model_ref") or {})
        model = self.models.get(ref.get("id", ""))
        if model and model.get("count_tokens") and ref.get("provider") != model.get("provider"):
            request = {**request, "request": {**request["request"], "model_ref": self.model_ref(model)}}
        return super().count_tokens(request, call)


@mutant("K-COUNT-EXACT-FLAG")
class ExactFromTheDeclaration(ReferenceKernel):
    """Says exact true for any model declared with a tokenizer, even when the tokenizer failed and the count is
    the formula's."""

    def count_tokens(self, request, call):
        result = super().count_tokens(request, call)
        model = self.models.get((request["request"].get("model_ref") or {}).get("id", ""))
        return {**result, "exact": True} if model and model.get("count_tokens") else result


@mutant("K-COUNT-FALLBACK-FORMULA", also=["K-COUNT-EXACT-FLAG", "K-HISTORY-TOKENS"])
class ZeroWhenTheTokenizerFails(ReferenceKernel):
    """Counts 0 when the model's tokenizer fails, so everything fits."""

    def tokenizer_count(self, content, model, call):
        counted = super().tokenizer_count(content, model, call)
        return 0 if counted is None else counted


@mutant("K-COUNT-RESOLUTION", also=["K-BUDGET-VALIDATE", "K-ASSEMBLED-LAST-TURN"])
class CountsWithTheFirstTokenizer(ReferenceKernel):
    """Counts every model that has a tokenizer with the first routing model's that has one."""

    def model_ref(self, model):
        first = next((self.models[m] for m in self.routing if self.models[m].get("count_tokens")), model)
        return super().model_ref(first)


@mutant("K-COUNT-EXACT-FLAG")
class AlwaysExact(ReferenceKernel):
    """Says exact true even for fallback counts."""

    def count_tokens(self, request, call):
        return {**super().count_tokens(request, call), "exact": True}


# --- budgets ------------------------------------------------------------------------------------

@mutant("K-BUDGET-VALIDATE", also=["K-COMPACTOR-BUDGET"])
class TrustsStatedTokens(ReferenceKernel):
    """Judges budgets by the tokens the provider stated."""

    def over_budget(self, sections, budget, model, call):
        return sum(s["tokens"] for s in sections) > budget


@mutant("K-BUDGET-VALIDATE", also=["K-COMPACTOR-BUDGET"])
class RecountSingleBlockOnly(ReferenceKernel):
    """Recounts single-block sections but trusts the stated figure of multi-block ones."""

    def over_budget(self, sections, budget, model, call):
        return sum(self.count(s["content"], model, call) if len(s["content"]) == 1 else s["tokens"]
                   for s in sections) > budget


@mutant("K-BUDGET-REJECT", also=["K-COUNT-RESOLUTION", "K-PRIOR-SECTIONS"])
class RejectsAtBudget(ReferenceKernel):
    """Rejects a provider exactly at its budget (>= instead of >). Where the model's tokenizer counts exactly
    the budget and the fallback formula counts more, dropping the sections looks the same as counting with
    the formula, and the judge charges the count (kernel_judge._kept_nothing): K-COUNT-RESOLUTION. Where the
    sections counted in one request come under the budget, dropping them is dropping a reply no reading
    rejects: K-PRIOR-SECTIONS."""

    def over_budget(self, sections, budget, model, call):
        return sum(self.count(s["content"], model, call) for s in sections) >= budget and bool(sections)


@mutant("K-COMPACTOR-BUDGET", also=["K-BUDGET-VALIDATE"])
class TrustsFiguresAfterFirstSection(ReferenceKernel):
    """Recounts the first section of a reply but trusts the stated figure of any further ones: a compactor's
    returned chain (a compactor vector shows it, and so does the ci profile's first counterexample), and any
    provider's reply elsewhere."""

    def over_budget(self, sections, budget, model, call):
        return sum(self.count(s["content"], model, call) if i == 0 else s["tokens"]
                   for i, s in enumerate(sections)) > budget


@mutant("K-BUDGET-REJECT", also=["K-BUDGET-VALIDATE", "K-COMPACTOR-BUDGET", "K-TRUNCATED-NOT-ENOUGH"])
class PerSectionBudget(ReferenceKernel):
    """Checks each section against the budget on its own (the upstream kernel's reading)."""

    def over_budget(self, sections, budget, model, call):
        return any(self.count(s["content"], model, call) > budget for s in sections)


@mutant("K-BUDGET-REJECT", also=["K-BUDGET-VALIDATE", "K-TRUNCATED-NOT-ENOUGH"])
class KeepsSectionsThatFit(ReferenceKernel):
    """Over budget, keeps the provider's sections that fit in order and drops the one that tips it over and
    those after it: a reduction only the provider may make (R-BUDGET-PER-PROVIDER)."""

    def on_over_budget(self, provider, chain, own, budget, model, diagnostics):
        kept, total = [], 0
        for section in own:
            total += self.count(section["content"], model, call=self.upstream)
            if total > budget:
                break
            kept.append(section)
        super().on_over_budget(provider, chain, own, budget, model, diagnostics)
        return chain + self.recounted(kept, model, self.upstream)


@mutant("K-TRUNCATED-NOT-ENOUGH", also=["K-COMPACTOR-BUDGET"])
class TruncatedExcuses(ReferenceKernel):
    """Lets an over-budget section through when it says it was truncated."""

    def over_budget(self, sections, budget, model, call):
        return super().over_budget(sections, budget, model, call) and not all(s["truncated"] for s in sections)


@mutant("K-NO-KERNEL-CUT", also=["K-BUDGET-REJECT", "K-COUNT-RESOLUTION", "K-BUDGET-VALIDATE", "K-TRUNCATED-NOT-ENOUGH"])
class CutsToFit(ReferenceKernel):
    """Cuts an over-budget provider's text down to the budget instead of dropping it, and states the cut
    section's figure by the fallback formula, whatever the model (K-COUNT-RESOLUTION where it has a tokenizer)."""

    def on_over_budget(self, provider, chain, own, budget, model, diagnostics):
        room = budget * 4
        cut = []
        for section in own:
            text = tokens.text_of(section["content"]).encode()[:room].decode("utf-8", "ignore")
            room -= len(text.encode())
            cut.append({**section, "content": [{"text": {"text": text}}], "tokens": (len(text.encode()) + 3) // 4,
                        "truncated": True})
        return chain + cut


@mutant("K-BUDGET-NO-TURN-FAIL")
class FailsTurnOnBudget(ReferenceKernel):
    """Fails the whole turn when one provider is over budget."""

    def on_over_budget(self, provider, chain, own, budget, model, diagnostics):
        raise TurnFailed(f"{provider.name} exceeded its budget")


# --- compactors -----------------------------------------------------------------------------------

@mutant("K-COMPACTOR-BUDGET")
class CompactorUnchecked(ReferenceKernel):
    """Never holds a compactor's chain to its budget."""

    def counted_against_compactor(self, provider, kept):
        return []


@mutant("K-COMPACTOR-BUDGET")
class CompactorOwnSectionsOnly(ReferenceKernel):
    """Counts only the compactor's own sections against its budget (the upstream kernel's reading)."""

    def counted_against_compactor(self, provider, kept):
        return [s for s in kept if s["provider"] == provider.name]


@mutant("K-COMPACTOR-BUDGET")
class CompactorTrustsRewrittenFigures(ReferenceKernel):
    """Counts a compactor's own sections but takes the figures of the sections it rewrote on trust."""

    def compactor_over_budget(self, provider, kept, budget, model, call):
        return sum(self.count(s["content"], model, call) if s["provider"] == provider.name else s["tokens"]
                   for s in kept) > budget


@mutant("K-APPLY-REWRITTEN-HISTORY")
class IgnoresRewrite(ReferenceKernel):
    """Never applies a compactor's rewritten history."""

    def apply_rewrite(self, session, history):
        pass


@mutant("K-REWRITE-COMPACTOR-ONLY", also=["K-NO-SILENT-FALLBACK"])
class AppliesAnyRewrite(ReferenceKernel):
    """Applies rewritten history from any provider, compactor or not."""

    def accept(self, provider, chain, reply, budget, model, session, diagnostics, call):
        if reply["rewritten_history"] and not provider.compactor:
            self.apply_rewrite(session, reply["rewritten_history"])
            reply = {**reply, "rewritten_history": []}
        return super().accept(provider, chain, reply, budget, model, session, diagnostics, call)


@mutant("K-APPLY-REWRITTEN-HISTORY")
class FirstRewriteOfFiringOnly(ReferenceKernel):
    """Applies the first rewritten_history of a firing and ignores any later compactor's."""

    def run_chain(self, turn, model, session, diagnostics, call):
        self.rewritten = False
        return super().run_chain(turn, model, session, diagnostics, call)

    def apply_rewrite(self, session, history):
        if not self.rewritten:
            super().apply_rewrite(session, history)
        self.rewritten = True


# --- content rules ------------------------------------------------------------------------------------

@mutant("K-NON-TEXT-REJECT")
class StripsNonTextBlocksSilently(ReferenceKernel):
    """Removes the non-text blocks and keeps the rest of the section, without a word."""

    def admissible(self, provider, sections, diagnostics):
        stripped = [{**s, "content": [b for b in s["content"] if "text" in b]} for s in sections]
        return super().admissible(provider, [s for s in stripped if s["content"]], diagnostics)


@mutant("K-NON-TEXT-REJECT")
class NonTextDroppedSilently(ReferenceKernel):
    """Drops non-text sections without reporting them."""

    def admissible(self, provider, sections, diagnostics):
        return super().admissible(provider, [s for s in sections if tokens.is_text_only(s["content"])], diagnostics)


@mutant("K-NON-TEXT-REJECT", also=["K-NO-SILENT-FALLBACK"])
class NonTextCheckedForOwnSectionsOnly(ReferenceKernel):
    """Checks content rules on non-compactors' own sections, but not on a compactor's rewrites."""

    def admissible(self, provider, sections, diagnostics):
        if provider.compactor:
            return [s for s in sections if s["label"]]
        return super().admissible(provider, sections, diagnostics)


@mutant("K-NON-TEXT-REJECT", also=["K-PROMPT-BOUNDARIES"])
class NonTextCheckedInCompactorsOwnSectionsOnly(ReferenceKernel):
    """Checks the sections a compactor signs itself, but not those it rewrote for other providers. The
    labels of those go unchecked too: an unlabeled one reaches the prompt with no label to show."""

    def admissible(self, provider, sections, diagnostics):
        if not provider.compactor:
            return super().admissible(provider, sections, diagnostics)
        own = super().admissible(provider, [s for s in sections if s["provider"] == provider.name], diagnostics)
        return [s for s in sections if s["provider"] != provider.name or s in own]


@mutant("K-NON-TEXT-REJECT")
class EmptyBlockPassesAsText(ReferenceKernel):
    """Takes a content block with no kind set for an empty text block."""

    def admissible(self, provider, sections, diagnostics):
        filled = [{**s, "content": [b or {"text": {"text": ""}} for b in s["content"]]} for s in sections]
        kept = super().admissible(provider, filled, diagnostics)
        return [original for original, seen in zip(sections, filled) if seen in kept]


@mutant("K-PROMPT-BOUNDARIES", also=["K-NO-KERNEL-CUT"])
class PromptWithoutBoundaries(ReferenceKernel):
    """Concatenates the sections' text with no labelled boundary. A short label may then be found inside
    another's text, and a block shorter than 8 characters missing from its place counts as not in the
    prompt whole (R-PROMPT-RENDERING): K-NO-KERNEL-CUT too."""

    def render(self, chain):
        return "".join(tokens.text_of(s["content"]) for s in chain)


@mutant("K-NO-KERNEL-CUT")
class FirstBlockOnlyInPrompt(ReferenceKernel):
    """Renders only the first text block of each section into the prompt."""

    def render_section(self, section):
        return super().render_section({**section, "content": section["content"][:1]})


@mutant("K-NO-KERNEL-CUT")
class SanitizesMarkup(ReferenceKernel):
    """Strips anything that looks like a markup tag out of the content it renders, instead of escaping it."""

    def render_section(self, section):
        content = [{"text": {"text": re.sub(r"<[^<>]*>", "", b["text"]["text"])}} if "text" in b else b
                   for b in section["content"]]
        return super().render_section({**section, "content": content})


@mutant("K-PROMPT-BOUNDARIES")
class RendersRepeatedSectionsOnce(ReferenceKernel):
    """Leaves a section out of the prompt when one just like it was rendered already."""

    def render(self, chain):
        seen, kept = set(), []
        for section in chain:
            key = (section["label"], tokens.text_of(section["content"]))
            if key not in seen:
                seen.add(key)
                kept.append(section)
        return super().render(kept)


@mutant("K-NO-KERNEL-CUT", also=["K-PROMPT-BOUNDARIES"])  # a label with a CRLF in it is changed too
class NormalizesLineEndings(ReferenceKernel):
    """Turns Windows line endings into Unix ones when it renders the prompt."""

    def render_section(self, section):
        return super().render_section(section).replace("\r\n", "\n")


# --- scope ---------------------------------------------------------------------------------------------

@mutant("K-PRIOR-SECTIONS")
class NothingNewIsOutOfScope(ReferenceKernel):
    """Counts a reply that adds no section of its own (the prior chain handed back) as a scope violation."""

    def in_scope(self, provider, chain, sections):
        return len(sections) > len(chain) and super().in_scope(provider, chain, sections)


@mutant("K-SCOPE-DISCARD", also=["K-SCOPE-LOG"])
class LetsProvidersSignForLaterOnes(ReferenceKernel):
    """Takes sections a provider signs with the name of a provider declared after it for its own (and so reports
    no scope violation where it drops such a reply for another reason)."""

    def in_scope(self, provider, chain, sections):
        later = {p.name for p in self.providers[[p.name for p in self.providers].index(provider.name):]}
        n = len(chain)
        return sections[:n] == chain and all(s["provider"] in later for s in sections[n:])


@mutant("K-PRIOR-SECTIONS", also=["K-NON-TEXT-REJECT", "K-BUDGET-REJECT", "K-BUDGET-VALIDATE"])
class ForeignRewriteWipesTheChain(ReferenceKernel):
    """Throws the whole chain away, not just the reply, when a non-compactor returns rewritten_history. Where
    that reply also falls under another rule (a non-text section, sections over the budget, figures that
    understate them), the chain it leaves is none that rule's outcomes accept either, and the judge charges
    that rule."""

    def on_foreign_rewrite(self, provider, chain, reply, session, diagnostics):
        super().on_foreign_rewrite(provider, chain, reply, session, diagnostics)
        return []


@mutant("K-SCOPE-DISCARD", also=["K-SCOPE-LOG"])
class CompletesDeltaReplies(ReferenceKernel):
    """Reads a reply that holds none of the prior sections as a delta, and puts the prior chain back in front
    of it, where the reply is by definition the whole chain (R-PLACEMENT). Where it then drops the completed
    reply for another reason (over budget), the chain is right but no scope violation is reported."""

    def accept(self, provider, chain, reply, budget, model, session, diagnostics, call):
        sections = reply["sections"]
        if chain and not provider.compactor and not any(s in sections for s in chain):
            reply = {**reply, "sections": chain + sections}
        return super().accept(provider, chain, reply, budget, model, session, diagnostics, call)


@mutant("K-SCOPE-DISCARD")
class AcceptsForeignEdits(ReferenceKernel):
    """Takes a non-compactor's reply as the new chain, whatever it did to other sections."""

    def on_scope_violation(self, provider, chain, sections, diagnostics):
        super().on_scope_violation(provider, chain, sections, diagnostics)
        return sections


@mutant("K-SCOPE-DISCARD")
class KeepsOwnSectionsOnViolation(ReferenceKernel):
    """Restores the prior chain on a violation but keeps the violator's own new sections."""

    def on_scope_violation(self, provider, chain, sections, diagnostics):
        super().on_scope_violation(provider, chain, sections, diagnostics)
        return chain + [s for s in sections if s["provider"] == provider.name and s not in chain]


@mutant("K-SCOPE-DISCARD", also=["K-SCOPE-LOG"])
class ScopeIgnoresTokenFigures(ReferenceKernel):
    """Compares prior sections without their tokens field."""

    def in_scope(self, provider, chain, sections):
        return _in_scope_by(lambda s: {k: v for k, v in s.items() if k != "tokens"}, provider, chain, sections)


def _in_scope_by(key, provider, chain, sections) -> bool:
    """R-PLACEMENT with the prior sections compared by key(section) instead of whole."""
    n = len(chain)
    return len(sections) >= n and [key(s) for s in sections[:n]] == [key(s) for s in chain] \
        and all(s["provider"] == provider.name for s in sections[n:])


@mutant("K-SCOPE-DISCARD", also=["K-SCOPE-LOG"])
class AllowsImpersonation(ReferenceKernel):
    """Checks the prior prefix but not the name on the sections a provider adds."""

    def in_scope(self, provider, chain, sections):
        return len(sections) >= len(chain) and sections[:len(chain)] == chain


@mutant("K-SCOPE-LOG")
class SilentScopeViolation(ReferenceKernel):
    """Discards a violating reply without logging it."""

    def on_scope_violation(self, provider, chain, sections, diagnostics):
        return chain


@mutant("K-SCOPE-NO-FAIL")
class ScopeViolationFailsTurn(ReferenceKernel):
    """Fails the turn on a scope violation."""

    def on_scope_violation(self, provider, chain, sections, diagnostics):
        raise TurnFailed(f"{provider.name} violated its scope")


# --- errors --------------------------------------------------------------------------------------------

@mutant("K-ERR-SOURCE-UNAVAILABLE", "K-ERR-BUDGET-EXCEEDED", "K-ERR-SCOPE-VIOLATION")
class AbortsOnAnyError(ReferenceKernel):
    """Fails the turn whenever a Contribute call fails (the upstream kernel's behaviour)."""

    def on_failure(self, provider, failure):
        raise TurnFailed(f"context-assemble: provider {provider.name!r} Contribute: {failure.message}")


_BY_CODE = {code: category for category, code in errors.GRPC_CODE.items()}


@mutant("K-ERR-SOURCE-UNAVAILABLE",
        also=["K-ERR-BUDGET-EXCEEDED", "K-ERR-INVALID-REQUEST-LOG", "K-ERR-SCOPE-VIOLATION", "K-ERR-UNKNOWN-RAW-MESSAGE"])
class ClassifiesByStatusCode(ReferenceKernel):
    """Takes the category from the gRPC status code instead of the ContextError detail."""

    def on_failure(self, provider, failure):
        category = _BY_CODE.get(failure.code, "unknown")
        return self.diagnostic(provider, category, f"Contribute failed: {failure.message}", kind="provider_failed")


@mutant("K-ERR-SOURCE-UNAVAILABLE", "K-ERR-BUDGET-EXCEEDED", "K-ERR-SCOPE-VIOLATION")
class AbortsChainOnAnyFailure(ReferenceKernel):
    """Stops the chain at any failing provider, as hook-dispatch does for a transform error, and goes on with
    the turn: right for an unsettled failure, wrong for the categories the taxonomy isolates."""

    def run_chain(self, turn, model, session, diagnostics, call):
        self.stop = False
        return super().run_chain(turn, model, session, diagnostics, call)

    def providers_for_turn(self, session):
        for provider in super().providers_for_turn(session):
            if self.stop:
                return
            yield provider

    def on_failure(self, provider, failure):
        self.stop = True
        return super().on_failure(provider, failure)


@mutant("K-ERR-INVALID-REQUEST-NO-RETRY")
class RetriesInvalidRequest(ReferenceKernel):
    """Sends a request the provider called invalid once more, unchanged."""

    def contribute(self, provider, request, call):
        try:
            return super().contribute(provider, request, call)
        except CallFailed as failure:
            if errors.category_of(failure.context_error) != "invalid_request":
                raise
            return super().contribute(provider, request, call)


@mutant("K-ERR-INVALID-REQUEST-LOG")
class SilentInvalidRequest(ReferenceKernel):
    """Skips an invalid_request failure without a diagnostic."""

    def on_failure(self, provider, failure):
        if errors.category_of(failure.context_error) == "invalid_request":
            return None
        return super().on_failure(provider, failure)


@mutant("K-ERR-UNKNOWN-RAW-MESSAGE")
class GenericUnknownMessage(ReferenceKernel):
    """Reports unknown failures with a generic message instead of the provider's."""

    def on_failure(self, provider, failure):
        if errors.category_of(failure.context_error) == "unknown":
            return self.diagnostic(provider, "unknown", "the provider failed", kind="provider_failed")
        return super().on_failure(provider, failure)


@mutant("K-NO-SILENT-FALLBACK")
class SilentBareFailure(ReferenceKernel):
    """Skips a provider that failed without a ContextError, saying nothing."""

    def on_failure(self, provider, failure):
        return None if failure.context_error is None else super().on_failure(provider, failure)


@mutant("K-NO-SILENT-FALLBACK")
class SkipsUnreadableRepliesSilently(ReferenceKernel):
    """Drops a reply it cannot read without a word, as if the provider had contributed nothing."""

    def contribute(self, provider, request, call):
        reply = super().contribute(provider, request, call)
        return reply if wire_forms.readable("ContextContribution", reply) else {"sections": request["prior_sections"]}


@mutant("K-TRANSFORM-ERROR-SURFACED", also=["K-ERR-UNKNOWN-RAW-MESSAGE"])  # an empty error carries no raw message
class FailsTurnWithoutReason(ReferenceKernel):
    """Fails the turn on an unknown failure but gives no error."""

    def on_failure(self, provider, failure):
        if errors.category_of(failure.context_error) == "unknown":
            raise TurnFailed("")
        return super().on_failure(provider, failure)


@mutant("K-ERR-UNKNOWN-RAW-MESSAGE")
class BareFailureWithoutMessage(ReferenceKernel):
    """Reports a failure that carries no ContextError by its status code alone, its message left out."""

    def on_failure(self, provider, failure):
        if failure.context_error:
            return super().on_failure(provider, failure)
        return self.diagnostic(provider, "unknown", f"Contribute failed ({failure.code})", kind="provider_failed")


@mutant("K-ERR-UNKNOWN-RAW-MESSAGE")
class ShortensLongErrorMessages(ReferenceKernel):
    """Keeps the first 200 characters of a failure's message in its report."""

    def on_failure(self, provider, failure):
        diagnostic = super().on_failure(provider, failure)
        return {**diagnostic, "message": diagnostic["message"][:200]} if diagnostic else diagnostic


@mutant("K-ERR-UNKNOWN-RAW-MESSAGE")
class MessageOnlyForTheUnknownCategory(ReferenceKernel):
    """Carries the plugin's message only when the ContextError says unknown; one whose category is unspecified
    is reported by its status code."""

    def on_failure(self, provider, failure):
        if errors.category_of(failure.context_error) is not None or not failure.context_error:
            return super().on_failure(provider, failure)
        return self.diagnostic(provider, "unknown", f"Contribute failed ({failure.code})", kind="provider_failed")


@mutant("K-NO-SILENT-FALLBACK", also=["K-ERR-INVALID-REQUEST-LOG"])
class SilentWhenTheMessageIsEmpty(ReferenceKernel):
    """Reports a failure only when its status message has words, as if an empty one meant nothing went wrong."""

    def on_failure(self, provider, failure):
        return super().on_failure(provider, failure) if failure.message.strip() else None


# --- past a size (the scale vectors, vectors/kernel/scale/, and the property tests catch these) --------

@mutant("K-DECLARATION-ORDER", also=["KC-NO-REORDER"])
class SortsLongChains(ReferenceKernel):
    """Keeps declaration order for up to six providers, then sorts them by name."""

    def providers_for_turn(self, session):
        return self.providers if len(self.providers) <= 6 else sorted(self.providers, key=lambda p: p.name)


@mutant("K-COUNT-FALLBACK-FORMULA", also=["K-ASSEMBLED-LAST-TURN", "K-COMPACTOR-BUDGET", "K-HISTORY-TOKENS"])
class FallbackCapsLongTexts(ReferenceKernel):
    """Stops counting after the first 2000 bytes of text."""

    def fallback(self, content):
        return (min(len(tokens.text_of(content).encode()), 2000) + 3) // 4


@mutant("K-HISTORY-TO-COMPACTOR")
class HistoryOnlyWhileShort(ReferenceKernel):
    """Stops sending the conversation to compactors once it is longer than six messages."""

    def history_for(self, provider, history):
        return history if provider.compactor and len(history) <= 6 else []


# --- past a width, a size, a count or a shape the vectors once stayed under (issue 23) ----------------------

_BUFFER = 64 * 1024  # a fixed buffer's size: texts longer than this are where the next two go wrong


@mutant("K-NO-KERNEL-CUT")
class RendersLongTextsCut(ReferenceKernel):
    """Copies each section's text into the prompt through a fixed 64 KiB buffer: the rest of a longer text is
    lost from the prompt, though the chain still holds it."""

    def render_section(self, section):
        text = tokens.text_of(section["content"]).encode()[:_BUFFER].decode(errors="ignore")
        return f"<<< {section['label']} | {section['provider']} >>>\n{text}\n<<< end {section['label']} >>>"


@mutant("K-COUNT-RESOLUTION", also=["K-ASSEMBLED-LAST-TURN", "K-HISTORY-TOKENS", "K-BUDGET-REJECT",
                                    "K-COMPACTOR-BUDGET", "K-BUDGET-VALIDATE"])
class EstimatesLongTexts(ReferenceKernel):
    """Spares the tokenizer a long content: past 64 KiB of text it counts by the formula, as a kernel guarding
    its model provider's request size would."""

    def tokenizer_count(self, content, model, call):
        if len(tokens.text_of(content).encode()) > _BUFFER:
            return None
        return super().tokenizer_count(content, model, call)


@mutant("K-COUNT-RESOLUTION", also=["K-COUNT-EXACT-FLAG", "K-ASSEMBLED-LAST-TURN", "K-HISTORY-TOKENS",
                                    "K-BUDGET-REJECT", "K-COMPACTOR-BUDGET", "K-BUDGET-VALIDATE"])
class ZeroCountIsNoAnswer(ReferenceKernel):
    """Takes a tokenizer's count of 0 for a missing answer (a falsy test where `is None` was meant) and falls
    back to the formula."""

    def tokenizer_count(self, content, model, call):
        return super().tokenizer_count(content, model, call) or None


@mutant("K-TOKEN-BUDGET", also=["KC-BUDGET-SUM-WARN"])
class CapsKeptAsDoubles(ReferenceKernel):
    """Keeps caps in a double, as a kernel whose configuration is read into a JSON number would: exact up to
    2^53, rounded past it (held within int64, so the rounded cap still fits the wire)."""

    def resolve_cap(self, provider):
        return min(int(float(super().resolve_cap(provider))), 2**63 - 1)


@mutant("K-TURN-FIELDS")
class TidiesPaths(ReferenceKernel):
    """Normalizes working_directory and every touched path (a trailing slash, '.', '..', '//') before passing
    them on, as a path library would."""

    def turn_fields(self, turn):
        fields = super().turn_fields(turn)
        tidy = lambda path: posixpath.normpath(path) if path else path
        return fields | {"working_directory": tidy(fields["working_directory"]),
                         "files_touched": [tidy(p) for p in fields["files_touched"]]}


@mutant("K-ASSEMBLED-LAST-TURN", "K-HISTORY-TO-COMPACTOR", also=["K-HISTORY-TOKENS", "K-HISTORY-NOT-TO-OTHERS"])
class ForgetsIdleSessions(ReferenceKernel):
    """Keeps the 10 sessions used last, forgetting the least recently used one when an eleventh opens: a
    forgotten session starts again with no history and no last-turn total."""

    KEPT = 10

    def assemble(self, request, call):
        session_id = request["turn"]["session_id"]
        if session_id in self.sessions:
            self.sessions[session_id] = self.sessions.pop(session_id)  # most recently used last
        elif len(self.sessions) >= self.KEPT:
            del self.sessions[next(iter(self.sessions))]
        return super().assemble(request, call)


@mutant("K-HISTORY-TO-COMPACTOR", also=["K-HISTORY-TOKENS", "K-APPLY-REWRITTEN-HISTORY"])
class KeepsRecentHistory(ReferenceKernel):
    """Keeps a session's conversation to its last 300 messages, forgetting older ones."""

    def run_chain(self, turn, model, session, diagnostics, call):
        session.history = session.history[-300:]
        return super().run_chain(turn, model, session, diagnostics, call)


@mutant("K-SCOPE-DISCARD", also=["K-SCOPE-LOG"])
class FingerprintsForeignText(ReferenceKernel):
    """Compares foreign sections by a fingerprint: every field, but each text block by its length and its first
    256 characters only."""

    def in_scope(self, provider, chain, sections):
        def key(section):
            blocks = [(len(t), t[:256]) for t in tokens.texts_of(section["content"])]
            return {**section, "content": [len(section["content"]), blocks]}
        return _in_scope_by(key, provider, chain, sections)


@mutant("K-SCOPE-DISCARD", also=["K-SCOPE-LOG"])
class OwnNameFolded(ReferenceKernel):
    """Matches its own sections to a provider by name with case and surrounding white space folded away."""

    def in_scope(self, provider, chain, sections):
        fold = lambda name: name.strip().casefold()
        n = len(chain)
        return len(sections) >= n and sections[:n] == chain and all(fold(s["provider"]) == fold(provider.name)
                                                                       for s in sections[n:])


@mutant("K-ERR-INVALID-REQUEST-NO-RETRY")
class RetriesWhatSaysRetryable(ReferenceKernel):
    """Retries once any failure whose ContextError says retryable, whatever its category."""

    def contribute(self, provider, request, call):
        try:
            return super().contribute(provider, request, call)
        except CallFailed as failure:
            if not (failure.context_error or {}).get("retryable"):
                raise
            return super().contribute(provider, request, call)


# --- caught only by the property tests (the golden vectors never reach these corners) ------

@mutant("K-SCOPE-DISCARD", also=["K-SCOPE-LOG"])
class ScopeIgnoresFlags(ReferenceKernel):
    """Compares prior sections by provider, label, content and tokens, missing changed stability or truncated
    flags. The reply it wrongly accepts reaches the chain, as in the counterexample the ci profile reports;
    it also goes unreported, which shows alone where its own sections are then dropped for their budget."""

    def in_scope(self, provider, chain, sections):
        return _in_scope_by(lambda s: (s["provider"], s["label"], str(s["content"]), s["tokens"]),
                            provider, chain, sections)


@mutant("K-PROMPT-BOUNDARIES", property_only=True)
class LabelLineBreaksFlattened(ReferenceKernel):
    """Keeps each boundary on one line: every kind of line break in a label (CR, LF, CRLF, U+2028) becomes a
    space. No vector has such a label; the generated ones do (strategies.CONTROLS)."""

    def render_section(self, section):
        return super().render_section({**section, "label": re.sub(r"\r\n|[\r\n\u2028]", " ", section["label"])})


@mutant("K-PROMPT-BOUNDARIES", property_only=True)
class LabelControlsStripped(ReferenceKernel):
    """Drops the control characters other than line breaks from a label it renders (a tab, an escape, a bell,
    a delete), as a terminal-safe printer would."""

    def render_section(self, section):
        return super().render_section({**section, "label": re.sub(r"[\t\x1b\x07\x7f]", "", section["label"])})


@mutant("K-COMPACTOR-BUDGET", property_only=True)
class FirstCompactorUnchecked(ReferenceKernel):
    """Skips the budget check for a compactor that runs first in the chain."""

    def counted_against_compactor(self, provider, kept):
        return [] if provider is self.providers[0] else kept


@mutant("K-ERR-SOURCE-UNAVAILABLE", property_only=True)
class CompactorOutageFailsTurn(ReferenceKernel):
    """Fails the turn when a compactor's source is unavailable, isolating only other providers."""

    def on_failure(self, provider, failure):
        if provider.compactor and errors.category_of(failure.context_error) == "source_unavailable":
            raise TurnFailed(f"compactor {provider.name} is unavailable")
        return super().on_failure(provider, failure)


# --- the plugin machinery (ctxconf kernel --launch-plugins) ------------------------------

def _fleet(**decisions) -> staticmethod:
    """A plugin_fleet hook: the reference kernel's plugin host with the given decisions overridden."""
    return staticmethod(lambda: type("MutantFleet", (PluginFleet,), decisions))


@mutant("K-PLUGIN-ENV", launches_plugins=True)
class PassesItsEnvironment(ReferenceKernel):
    """Launches its plugins with its own whole environment, as exec.Command does when Env is left unset."""
    plugin_fleet = _fleet(plugin_env=lambda self, cookie: {**os.environ, **PluginFleet.plugin_env(self, cookie)})


@mutant("K-PLUGIN-HANDSHAKE", launches_plugins=True)
class NoProtocolVersions(ReferenceKernel):
    """Sets the cookie but not PLUGIN_PROTOCOL_VERSIONS; a go-plugin plugin then serves a version of its choosing."""
    plugin_fleet = _fleet(plugin_env=lambda self, cookie: {
        k: v for k, v in PluginFleet.plugin_env(self, cookie).items() if k != "PLUGIN_PROTOCOL_VERSIONS"})


@mutant("K-CALLBACK-CHANNEL", launches_plugins=True)
class NeverOffersCallbacks(ReferenceKernel):
    """Launches its plugins without announcing the callback service on broker ID 1."""
    plugin_fleet = _fleet(offers_callbacks=lambda self, index: False)


@mutant("K-CALLBACK-CHANNEL", launches_plugins=True)
class CallbacksForFirstPluginOnly(ReferenceKernel):
    """Announces the callback service to the first plugin it launches, as a host keeping one broker would."""
    plugin_fleet = _fleet(offers_callbacks=lambda self, index: index == 0)


@mutant("K-CALLBACK-CHANNEL", launches_plugins=True)
class OffersCallbacksOnceSetUp(ReferenceKernel):
    """Announces the callback service to its plugins only once it has asked their capabilities and configured
    them, as a host that builds its broker service after its category clients would: a plugin that counts as
    soon as it is offered the channel is answered only after its GetCapabilities."""
    plugin_fleet = _fleet(offers_callbacks=lambda self, index: False)

    def start_providers(self, declared, call):
        providers = super().start_providers(declared, call)
        if self.fleet is not None:
            for plugin in self.fleet.plugins.values():
                plugin.broker.offer(CALLBACK_BROKER_ID, self.fleet.callback_address)
        return providers


@mutant("K-PLUGIN-SHUTDOWN", launches_plugins=True)
class LeavesPluginsRunning(ReferenceKernel):
    """Forgets the plugins of a configuration it is done with, still running."""

    def close_plugins(self):
        self.fleet = None


@mutant("K-PLUGIN-SHUTDOWN", launches_plugins=True)
class LeavesPluginsRunningAtStop(ReferenceKernel):
    """Shuts a configuration's plugins down when it loads another, but not when it is told to stop, as a kernel
    that counts on its process exit to end its children would."""

    def stop(self, request, call):
        self.fleet = None
        return {}


def _ask_and_never_kill(fleet) -> None:
    for plugin in fleet.plugins.values():
        plugin.ask_to_stop()  # the drain; a plugin that does not heed it is left to run
    fleet.callbacks.stop(grace=None)
    fleet.sockets.remove()


@mutant("K-PLUGIN-SHUTDOWN", launches_plugins=True)
class NeverKillsItsPlugins(ReferenceKernel):
    """Asks its plugins to stop and leaves it at that: one that does not stop when asked is never killed."""
    plugin_fleet = _fleet(close=_ask_and_never_kill)


def _launch_without_cleanup(fleet, *args) -> None:
    fleet.close = lambda: None  # during the launch only: a launch that fails forgets what it started
    try:
        PluginFleet.__init__(fleet, *args)
    finally:
        del fleet.close


@mutant("K-PLUGIN-SHUTDOWN", launches_plugins=True)
class AbandonsAFailedLaunch(ReferenceKernel):
    """Fails the Load of a plugin that never handshakes and leaves the plugins it had already started running,
    as a launch loop that returns at its first error does."""
    plugin_fleet = _fleet(__init__=_launch_without_cleanup)


@mutant("K-CALLBACK-CHANNEL", launches_plugins=True)
class NoCountsDuringLoad(ReferenceKernel):
    """Answers CountTokens on the callback channel only once a configuration is loaded: a plugin that counts as
    soon as it is offered the channel, during the Load, gets UNAVAILABLE."""

    def load(self, request, call):
        self.loading = True
        try:
            return super().load(request, call)
        finally:
            self.loading = False

    def count_tokens(self, request, call):
        if getattr(self, "loading", False):
            raise CallFailed("UNAVAILABLE", "the configuration is still loading")
        return super().count_tokens(request, call)


@mutant("K-ERR-SOURCE-UNAVAILABLE", launches_plugins=True)
class CrashFailsTurn(ReferenceKernel):
    """Fails the turn when a provider's connection drops: UNAVAILABLE with no ContextError."""

    def on_failure(self, provider, failure):
        if failure.code == "UNAVAILABLE" and not failure.context_error:
            raise TurnFailed(f"provider {provider.name} went away")
        return super().on_failure(provider, failure)


def _strings(value) -> list[str]:
    """Every string inside a JSON value."""
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return [s for item in items for s in _strings(item)]
