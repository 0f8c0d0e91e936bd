"""Conforming variants of the reference kernel: each takes one freedom the
spec or a ruling allows, and the suite must certify every one CONFORMANT.

They are the other half of kernel_mutants. A mutant proves that a check can
fail; a variant proves that a check does not fail what the spec permits.
Each declares the freedom it takes and the ruling (or spec anchor) that
grants it, and overrides as little of ReferenceKernel as it can. `grpc`
marks the variants the self-test also certifies over the gRPC binding.
"""

from __future__ import annotations

import html
import json
import re

from conformance.bindings.base import CallFailed
from conformance.proofs import wire_forms
from conformance.reference.kernel import ReferenceKernel, Session, TurnFailed
from conformance.wire import errors, tokens

VARIANTS: dict[str, type[ReferenceKernel]] = {}


def variant(freedom: str, grants: str, grpc: bool = False, plugins: bool = False):
    """`plugins`: the freedom is one of the plugin-launching mode, certified there (on kernel/plugins/)."""
    def register(cls: type[ReferenceKernel]) -> type[ReferenceKernel]:
        cls.freedom, cls.grants, cls.grpc, cls.plugins = freedom, grants, grpc, plugins
        VARIANTS[cls.__name__] = cls
        return cls
    return register


def _texts(section: dict) -> list[str]:
    return [block["text"].get("text", "") for block in section["content"] if "text" in block]


# --- rendering the prompt (R-PROMPT-RENDERING) -----------------------------------------

@variant("puts each text block of a section on its own line", "R-PROMPT-RENDERING", grpc=True)
class BlocksOnSeparateLines(ReferenceKernel):
    def render_section(self, section):
        return (f"<<< {section['label']} | {section['provider']} >>>\n" + "\n".join(_texts(section))
                + f"\n<<< end {section['label']} >>>")


@variant("joins the text blocks of a section with a space", "R-PROMPT-RENDERING")
class BlocksJoinedBySpace(ReferenceKernel):
    def render_section(self, section):
        return f"[{section['label']}]\n" + " ".join(_texts(section)) + "\n[/]"


@variant("XML-like tags with escaped attribute values, content escaped as XML text", "R-PROMPT-RENDERING")
class XmlTags(ReferenceKernel):
    def render_section(self, section):
        body = "\n".join(html.escape(t, quote=False) for t in _texts(section))
        return (f'<context_section provider="{html.escape(section["provider"])}" '
                f'label="{html.escape(section["label"])}">\n{body}\n</context_section>')


@variant("a Markdown heading per section, Markdown punctuation in labels backslash-escaped", "R-PROMPT-RENDERING")
class MarkdownHeadings(ReferenceKernel):
    def render_section(self, section):
        label = re.sub(r"([\\`*_{}\[\]()#+\-.!<>|])", r"\\\1", section["label"])
        return f"## {label}\n\n" + "\n\n".join(_texts(section))


@variant("a heading then a code fence longer than any backtick run in the content", "R-PROMPT-RENDERING")
class LongFences(ReferenceKernel):
    def render_section(self, section):
        text = "\n".join(_texts(section))
        longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
        fence = "`" * max(3, longest + 1)
        return f"### {section['label']} (from {section['provider']})\n{fence}\n{text}\n{fence}"


@variant("one JSON object per section: label and every block as JSON strings, non-ASCII escaped",
         "R-PROMPT-RENDERING")
class JsonSections(ReferenceKernel):
    def render(self, chain):
        return "\n".join(json.dumps({"section": s["label"], "from": s["provider"], "text": _texts(s)})
                         for s in chain)


@variant("JSON as .NET's encoder writes it: every non-ASCII or control character as an upper-case \\uXXXX",
         "R-PROMPT-RENDERING")
class JsonUpperCaseEscapes(ReferenceKernel):
    def render(self, chain):
        def dotnet(escape: re.Match) -> str:  # each escape of json.dumps' output, taken left to right
            token = escape.group()
            return "\\u000A" if token == "\\n" else "\\u" + token[2:].upper() if token.startswith("\\u") else token
        lines = (json.dumps({"section": s["label"], "text": _texts(s)}) for s in chain)
        return "\n".join(re.sub(r"\\(?:u[0-9a-f]{4}|.)", dotnet, line) for line in lines)


@variant("labels quoted as JSON strings in a banner line, content raw", "R-PROMPT-RENDERING")
class QuotedLabels(ReferenceKernel):
    def render_section(self, section):
        return f"=== section {json.dumps(section['label'], ensure_ascii=False)} ===\n" + "".join(_texts(section))


@variant("escapes its own delimiter characters (and backslash) inside labels and content", "R-PROMPT-RENDERING")
class EscapesOwnDelimiters(ReferenceKernel):
    @staticmethod
    def escape(text: str) -> str:
        return re.sub(r"([\\<>|])", r"\\\1", text)

    def render_section(self, section):
        label = self.escape(section["label"])
        return (f"<<< {label} | {section['provider']} >>>\n" + self.escape("".join(_texts(section)))
                + f"\n<<< end {label} >>>")


# --- what the kernel does with a reply ---------------------------------------------------------

@variant("gives an unlabelled section a label of its own instead of dropping it", "R-MISSING-LABEL")
class RelabelsUnlabelled(ReferenceKernel):
    def admissible(self, provider, sections, diagnostics):
        named = [{**s, "label": s["label"] or f"untitled section from {provider.name}"} for s in sections]
        return super().admissible(provider, named, diagnostics)


@variant("fails the turn, with the provider's message, on invalid_request, unknown and bare failures",
         "R-ERROR-ISOLATION", grpc=True)
class FailsTurnOnUnsettledFailures(ReferenceKernel):
    def on_failure(self, provider, failure):
        if errors.category_of(failure.context_error) in errors.ISOLATING:
            return super().on_failure(provider, failure)
        message = (failure.context_error or {}).get("message") or failure.message
        raise TurnFailed(f"context-assemble stopped at {provider.name} ({failure.code}): {message}")


@variant("starts each firing from the session's previous final chain (examples.md's turn 4); a provider may then "
         "edit, replace or drop its own earlier sections where they stand", "R-FIRING-STARTS-EMPTY")
class CarriesChainAcrossTurns(ReferenceKernel):
    def assemble(self, request, call):
        result = super().assemble(request, call)
        if not result["turn_failed"]:
            self.sessions[request["turn"]["session_id"]].last_chain = result["sections"]
        return result

    def initial_chain(self, session):
        return list(getattr(session, "last_chain", []))

    def in_scope(self, provider, chain, sections):
        """Others' sections back untouched and in order; its own after them or where its own stood."""
        def foreign_before(chain):
            seen, counts = 0, []
            for s in chain:
                counts.append(seen)
                seen += s["provider"] != provider.name
            return counts
        foreign = [s for s in chain if s["provider"] != provider.name]
        if [s for s in sections if s["provider"] != provider.name] != foreign:
            return False
        slots = {len(foreign)} | {n for s, n in zip(chain, foreign_before(chain)) if s["provider"] == provider.name}
        return all(n in slots for s, n in zip(sections, foreign_before(sections)) if s["provider"] == provider.name)

    AT = "\0at"  # where an own section stood in the reply; the rules that keep one copy it along

    def own_part(self, provider, chain, sections):
        return [{**s, self.AT: i} for i, s in enumerate(sections) if s["provider"] == provider.name]

    def with_own(self, provider, chain, sections, own):
        """Its sections it kept where they stood in the reply, as kept (stripped, relabelled or recounted):
        told apart by position, never by content, which those rules change."""
        kept = {s[self.AT]: {k: v for k, v in s.items() if k != self.AT} for s in own}
        return [kept.get(i, s) for i, s in enumerate(sections) if s["provider"] != provider.name or i in kept]


@variant("keeps an unlabelled section as it is, inside a boundary of its own", "R-MISSING-LABEL")
class KeepsUnlabelledSections(ReferenceKernel):
    def admissible(self, provider, sections, diagnostics):
        unlabelled = "\0unlabelled"  # passes the label rule; every other rule still applies
        kept = super().admissible(provider, [{**s, "label": s["label"] or unlabelled} for s in sections], diagnostics)
        return [{**s, "label": "" if s["label"] == unlabelled else s["label"]} for s in kept]


@variant("fails the turn on unsettled failures and rolls the conversation back to before the failed turn",
         "R-FAILED-TURN")
class RollsBackFailedTurns(FailsTurnOnUnsettledFailures):
    def assemble(self, request, call):
        session = self.sessions.setdefault(request["turn"]["session_id"], Session())
        before = session.history
        result = super().assemble(request, call)
        if result["turn_failed"]:
            session.history = before
            result["history"] = before
        return result


class _EndsChainEarly(ReferenceKernel):
    """No provider is called after the one a subclass names in stop_after; the chain stands as it was."""

    def run_chain(self, turn, model, session, diagnostics, call):
        self.stop_after = None
        return super().run_chain(turn, model, session, diagnostics, call)

    def providers_for_turn(self, session):
        for provider in super().providers_for_turn(session):
            if self.stop_after is not None:
                return
            yield provider


@variant("stops the chain at an unsettled failure and goes on with the chain as it stood, reporting it",
         "R-ERROR-ISOLATION")
class AbortsChainOnUnsettledFailures(_EndsChainEarly):
    def on_failure(self, provider, failure):
        if errors.category_of(failure.context_error) not in errors.ISOLATING:
            self.stop_after = provider.name
        return super().on_failure(provider, failure)


@variant("stops the chain at a reply it cannot read, reporting it, and goes on with the chain as it stood",
         "R-ERROR-ISOLATION")
class AbortsChainOnUnreadableReplies(_EndsChainEarly):
    def contribute(self, provider, request, call):
        reply = super().contribute(provider, request, call)
        if not wire_forms.readable("ContextContribution", reply):
            self.stop_after = provider.name  # the reference reports it when it reads the reply in turn
        return reply


@variant("fails the turn when a compactor's chain is over its budget", "R-COMPACTOR-OVER-BUDGET")
class FailsTurnOnOverBudgetCompactor(ReferenceKernel):
    def reject_compactor(self, provider, chain, reply, budget, session, diagnostics):
        raise TurnFailed(f"compactor {provider.name} returned a chain over its budget of {budget}")


@variant("keeps the token figure a provider stated on a section it accepts", "R-TOKENS-RECOUNT")
class KeepsStatedFigures(ReferenceKernel):
    def recounted(self, sections, model, call):
        return sections


@variant("also rejects sections whose stated figure is over the budget, though their count fits",
         "R-TOKENS-RECOUNT")
class RejectsOverstatedFigures(ReferenceKernel):
    def over_budget(self, sections, budget, model, call):
        return super().over_budget(sections, budget, model, call) or sum(s["tokens"] for s in sections) > budget


@variant("scales every budget down when the caps do not fit the turn's model", "R-BUDGET-SMALLER-MODEL")
class ScalesBudgetsToSmallModels(ReferenceKernel):
    def token_budget(self, provider, model):
        caps = sum(self.resolve_cap(p) for p in self.providers)
        ceiling = self.effective_ceiling(model)
        cap = self.resolve_cap(provider)
        return cap if caps <= ceiling else max(0, cap * ceiling // caps)


@variant("shows later compactors of the firing the history as it was, applying the last rewrite at the end",
         "R-REWRITE-VISIBILITY")
class RewriteAppliedAfterFiring(ReferenceKernel):
    def run_chain(self, turn, model, session, diagnostics, call):
        self.pending = None
        chain = super().run_chain(turn, model, session, diagnostics, call)
        if self.pending is not None:
            session.history = self.pending
        return chain

    def apply_rewrite(self, session, history):
        self.pending = history


@variant("keeps a non-compactor's sections, reports and ignores the rewritten_history it returned",
         "R-NONCOMPACTOR-REWRITE")
class KeepsSectionsOfForeignRewrite(ReferenceKernel):
    def accept(self, provider, chain, reply, budget, model, session, diagnostics, call):
        if reply["rewritten_history"] and not provider.compactor and self.in_scope(provider, chain, reply["sections"]):
            self.report(diagnostics, self.diagnostic(provider, "scope_violation",
                                                     "only a compactor may rewrite the history; rewrite ignored"))
            reply = {**reply, "rewritten_history": []}
        return super().accept(provider, chain, reply, budget, model, session, diagnostics, call)


@variant("reports a failure with the gRPC status message rather than the ContextError's", "R-RAW-MESSAGE")
class ReportsTheStatusMessage(ReferenceKernel):
    def on_failure(self, provider, failure):
        category = errors.category_of(failure.context_error) or "unknown"
        return self.diagnostic(provider, category, f"Contribute failed ({failure.code}): {failure.message}",
                               kind="provider_failed")


@variant("retries a failure marked retryable once before isolating the provider", "R-ERROR-ISOLATION")
class RetriesRetryableOnce(ReferenceKernel):
    def contribute(self, provider, request, call):
        try:
            return super().contribute(provider, request, call)
        except CallFailed as failure:
            category = errors.category_of(failure.context_error)
            if not (failure.context_error or {}).get("retryable") or category in (None, "invalid_request"):
                raise
            return super().contribute(provider, request, call)


@variant("remembers token counts instead of asking the tokenizer again for the same content",
         "kernel-callbacks.md#open-questions")
class CachesTokenCounts(ReferenceKernel):
    def count(self, content, model, call):
        key = (model["id"], json.dumps(content, sort_keys=True))
        cache = self.__dict__.setdefault("counts", {})
        if key not in cache:
            cache[key] = super().count(content, model, call)
        return cache[key]

    def load(self, request, call):
        self.counts = {}
        return super().load(request, call)


# --- what "reject" and "validate" may mean (literal readings of the spec) -------------------------

@variant("rejects an over-budget compactor's chain but applies its rewritten_history all the same",
         "R-COMPACTOR-OVER-BUDGET")
class AppliesRewriteOfRejectedCompactor(ReferenceKernel):
    def reject_compactor(self, provider, chain, reply, budget, session, diagnostics):
        if reply["rewritten_history"]:
            self.apply_rewrite(session, reply["rewritten_history"])
        return super().reject_compactor(provider, chain, reply, budget, session, diagnostics)


@variant("fails the turn when a compactor fails with budget_exceeded", "R-COMPACTOR-OVER-BUDGET")
class FailsTurnOnCompactorBudgetError(ReferenceKernel):
    def on_failure(self, provider, failure):
        if provider.compactor and errors.category_of(failure.context_error) == "budget_exceeded":
            raise TurnFailed(f"compactor {provider.name} could not fit its budget: {failure.message}")
        return super().on_failure(provider, failure)


@variant("removes only the non-text blocks of a section, keeps its text and reports it", "R-NON-TEXT-WHOLE-SECTION")
class StripsNonTextBlocksVisibly(ReferenceKernel):
    def admissible(self, provider, sections, diagnostics):
        kept = []
        for section in sections:
            text = [b for b in section["content"] if set(b) == {"text"}]
            if len(text) < len(section["content"]):
                self.report(diagnostics, self.diagnostic(provider, "non_text_content",
                                                         "non-text blocks removed from a section", section))
            kept.append({**section, "content": text})
        return super().admissible(provider, kept, diagnostics)


@variant("discards a provider's whole reply when any section in it is malformed (non-text or unlabelled)",
         "R-NON-TEXT-WHOLE-SECTION")
class DiscardsMalformedReplies(ReferenceKernel):
    def accept(self, provider, chain, reply, budget, model, session, diagnostics, call):
        own = reply["sections"] if provider.compactor else reply["sections"][len(chain):]
        bad = [s for s in own if not tokens.is_text_only(s["content"]) or not s["label"]]
        if bad and (provider.compactor or self.in_scope(provider, chain, reply["sections"])):
            category = "non_text_content" if any(not tokens.is_text_only(s["content"]) for s in bad) else "missing_label"
            self.report(diagnostics, self.diagnostic(provider, category, "malformed section; whole reply discarded"))
            return chain
        return super().accept(provider, chain, reply, budget, model, session, diagnostics, call)


@variant("fails the turn on a malformed reply (a non-text block or a section without a label)",
         "R-NON-TEXT-WHOLE-SECTION")
class FailsTurnOnMalformedReplies(ReferenceKernel):
    def admissible(self, provider, sections, diagnostics):
        for section in sections:
            if not tokens.is_text_only(section["content"]) or not section["label"]:
                raise TurnFailed(f"{provider.name} returned a malformed section {section['label']!r}")
        return super().admissible(provider, sections, diagnostics)


@variant("validates a provider's sections with one CountTokens call over all of their content",
         "R-BUDGET-PER-PROVIDER")
class CountsContributionAsOne(ReferenceKernel):
    def over_budget(self, sections, budget, model, call):
        return self.count([b for s in sections for b in s["content"]], model, call) > budget


@variant("counts every section a provider returned against its budget, those it drops for other reasons too",
         "R-BUDGET-PER-PROVIDER")
class CountsRejectedSectionsToo(ReferenceKernel):
    def accept(self, provider, chain, reply, budget, model, session, diagnostics, call):
        own = reply["sections"] if provider.compactor else reply["sections"][len(chain):]
        if not provider.compactor and self.in_scope(provider, chain, reply["sections"]) and \
                not reply["rewritten_history"] and self.over_budget(own, budget, model, call):
            self.admissible(provider, own, diagnostics)  # what it would have dropped anyway is still reported
            return self.on_over_budget(provider, chain, own, budget, model, diagnostics)
        return super().accept(provider, chain, reply, budget, model, session, diagnostics, call)


@variant("drops over-budget sections without a diagnostic (the budget rule asks for no log)", "R-LOG-AS-DIAGNOSTIC")
class SilentBudgetRejection(ReferenceKernel):
    def on_over_budget(self, provider, chain, own, budget, model, diagnostics):
        return chain

    def reject_compactor(self, provider, chain, reply, budget, session, diagnostics):
        return chain


@variant("ignores a non-compactor's rewritten_history without a word, keeping its sections", "R-NONCOMPACTOR-REWRITE")
class IgnoresForeignRewriteSilently(ReferenceKernel):
    def accept(self, provider, chain, reply, budget, model, session, diagnostics, call):
        if reply["rewritten_history"] and not provider.compactor:
            reply = {**reply, "rewritten_history": []}
        return super().accept(provider, chain, reply, budget, model, session, diagnostics, call)


@variant("warns when the caps exceed the smallest effective ceiling of every declared model, routed or not",
         "R-BUDGET-SUM-WARNING")
class WarnsOverEveryDeclaredModel(ReferenceKernel):
    def routing_ceilings(self):
        return [self.effective_ceiling(m) for m in self.models.values()]


@variant("lowers every budget in proportion on a turn whose model is smaller than the primary", "R-BUDGET-SMALLER-MODEL")
class ScalesBudgetsOnSmallerModels(ReferenceKernel):
    def token_budget(self, provider, model):
        primary = self.effective_ceiling(self.models[self.routing[0]])
        ceiling = self.effective_ceiling(model)
        cap = self.resolve_cap(provider)
        return cap if ceiling >= primary or primary <= 0 else max(0, cap * ceiling // primary)


@variant("assembled_tokens_last_turn is the sum of the token figures the final chain carries", "R-ASSEMBLED-TOKENS")
class AssembledFromStatedFigures(KeepsStatedFigures):
    def assembled_total(self, chain, session, model, call):
        return sum(int(s["tokens"]) for s in chain)


@variant("assembled_tokens_last_turn is one count over the text of the whole final chain", "R-ASSEMBLED-TOKENS")
class AssembledCountedAtOnce(ReferenceKernel):
    def assembled_total(self, chain, session, model, call):
        return self.count([b for s in chain for b in s["content"]], model, call)


@variant("history_tokens is the sum of each message's own count", "R-HISTORY-TOKENS")
class HistoryCountedPerMessage(ReferenceKernel):
    def count_history(self, session, model, call):
        return sum(self.count(m.get("content", []), model, call) for m in session.history)


@variant("carries the chain across turns and leaves a failed provider's sections from the last turn out of this "
         "one, with the rest of its contribution", "R-ERROR-ISOLATION")
class CarriesChainDropsFailedSections(CarriesChainAcrossTurns):
    def chain_after_failure(self, provider, chain):
        return [s for s in chain if s["provider"] != provider.name]


# --- freedoms taken together (R-FREEDOMS-COMBINE) ------------------------------------------------

def _combined(freedom: str, grants: str, *parts: type[ReferenceKernel]) -> type[ReferenceKernel]:
    """One kernel that takes every part's freedom at once (they override different methods)."""
    cls = type("".join(p.__name__ for p in parts), parts, {"__doc__": freedom, "__module__": __name__})
    globals()[cls.__name__] = cls  # importable by name, as the stdio and gRPC self-test runs import it
    return variant(freedom, grants)(cls)


_combined("carries the chain across turns and reports assembled_tokens_last_turn from the figures it carries",
          "R-FREEDOMS-COMBINE", CarriesChainAcrossTurns, AssembledFromStatedFigures)
_combined("carries the chain across turns and counts assembled_tokens_last_turn all at once", "R-FREEDOMS-COMBINE",
          CarriesChainAcrossTurns, AssembledCountedAtOnce)
_combined("shows later compactors the history from before the firing's rewrites and counts it message by message",
          "R-FREEDOMS-COMBINE", RewriteAppliedAfterFiring, HistoryCountedPerMessage)
_combined("strips non-text blocks and gives an unlabelled section a label of its own", "R-FREEDOMS-COMBINE",
          StripsNonTextBlocksVisibly, RelabelsUnlabelled)
_combined("carries the chain, keeps stated figures, counts a provider's sections at once and strips non-text blocks",
          "R-FREEDOMS-COMBINE", CarriesChainAcrossTurns, KeepsStatedFigures, CountsContributionAsOne,
          StripsNonTextBlocksVisibly)


# --- launched plugins (ctxconf kernel --launch-plugins) --------------------------------------------

@variant("keeps the plugins of a configuration it is done with running until it stops", "R-PLUGIN-LIFETIME",
         plugins=True)
class KeepsPluginsUntilStop(ReferenceKernel):
    def load(self, request, call):
        if self.fleet is not None and not request["config"]["providers"]:
            self.__dict__.setdefault("idle", []).append(self.fleet)  # kept warm, as a pool would
            self.fleet = None
        return super().load(request, call)

    def stop(self, request, call):
        for fleet in self.__dict__.pop("idle", []):
            fleet.close()
        return super().stop(request, call)


def _fleet_with(**overrides) -> staticmethod:
    """A plugin_fleet hook: the reference kernel's plugin host with the given methods its own."""
    def fleet() -> type:
        from conformance.reference.plugin_host import PluginFleet  # grpc is loaded only for this mode
        return type("VariantFleet", (PluginFleet,), overrides)
    return staticmethod(fleet)


def _without_tmpdir(fleet, cookie):
    from conformance.reference.plugin_host import PluginFleet
    return {k: v for k, v in PluginFleet.plugin_env(fleet, cookie).items() if k != "TMPDIR"}


@variant("hands its plugins a smaller environment allowlist (no TMPDIR)", "architecture.md#transport", plugins=True)
class SmallerPluginAllowlist(ReferenceKernel):
    plugin_fleet = _fleet_with(plugin_env=_without_tmpdir)


def _deadline_of_its_own(fleet, declared, count_tokens, hook_timeout_ms, *rest):
    from conformance.reference.plugin_host import PluginFleet
    PluginFleet.__init__(fleet, declared, count_tokens, hook_timeout_ms, *rest)
    # A default of its own when the config sets none; longer than the reference's 10 s for set-up calls, which
    # then get it too: how patient a kernel is with a plugin's set-up calls is its own choice as well.
    fleet.deadline = (hook_timeout_ms or 12000) / 1000


@variant("a default Contribute deadline of its own when the configuration sets no hook_timeout_ms, which its "
         "set-up calls share",
         "agent-loop/hook-dispatch.md#timeout-behavior", plugins=True)
class OwnDefaultHookTimeout(ReferenceKernel):
    plugin_fleet = _fleet_with(__init__=_deadline_of_its_own)


def _close_after_a_short_grace(fleet):
    import subprocess
    from conformance.reference.plugin_host import PluginFleet
    for plugin in fleet.plugins.values():
        plugin.ask_to_stop()
    for plugin in fleet.plugins.values():  # drain, then kill after a grace of its own
        try:
            plugin.process.wait(0.5)
        except subprocess.TimeoutExpired:
            plugin.process.kill()
    PluginFleet.close(fleet)  # the rest of the reference's teardown; its plugins are gone already


@variant("kills a plugin that has not stopped after a shorter grace period than the reference's",
         "R-PLUGIN-LIFETIME", plugins=True)
class ShorterKillGrace(ReferenceKernel):
    plugin_fleet = _fleet_with(close=_close_after_a_short_grace)


def _close_leaving_the_socket_directory(fleet):
    from conformance.reference.plugin_host import PluginFleet
    fleet.sockets.remove = lambda: None  # the directory, under its TMPDIR, stays for the OS to clear
    PluginFleet.close(fleet)


@variant("leaves the socket directory it made for its plugins behind when it closes them", "architecture.md#transport",
         plugins=True)
class LeavesItsSocketDirectory(ReferenceKernel):
    plugin_fleet = _fleet_with(close=_close_leaving_the_socket_directory)


@variant("names the socket of its callback service otherwise (the broker ID stays 1)",
         "kernel-callbacks.md#the-callback-channel", plugins=True)
class OwnCallbackSocketName(ReferenceKernel):
    plugin_fleet = _fleet_with(CALLBACK_SOCKET="callbacks-of-this-kernel")


def _plugins_with(**overrides) -> staticmethod:
    """A plugin_fleet hook: the reference kernel's plugin host, launching each plugin as a Plugin with the given
    members its own."""
    def fleet() -> type:
        from conformance.reference.plugin_host import Plugin, PluginFleet  # grpc is loaded only for this mode
        return type("VariantFleet", (PluginFleet,), {"PLUGIN": type("VariantPlugin", (Plugin,), overrides)})
    return staticmethod(fleet)


@variant("waits a handshake timeout of its own (20 s) for a plugin's handshake line", "architecture.md#transport",
         plugins=True)
class OwnHandshakeTimeout(ReferenceKernel):
    plugin_fleet = _plugins_with(HANDSHAKE_TIMEOUT=20.0)


def _fail_in_own_words(plugin) -> None:
    raise CallFailed("INTERNAL", f"no handshake from {' '.join(plugin.argv)}: the launch of this configuration failed")


@variant("fails the Load of a plugin that never handshakes with an error of its own (INTERNAL, its own words)",
         "architecture.md#transport", plugins=True)
class OwnHandshakeFailure(ReferenceKernel):
    plugin_fleet = _plugins_with(no_handshake=_fail_in_own_words)


def _reader_not_daemon(plugin) -> None:
    import threading
    threading.Thread(target=plugin._read_stdout, args=(plugin.lines,)).start()


@variant("drains its plugins' stdout on ordinary (not daemon) threads, which end when the plugins do",
         "architecture.md#transport", plugins=True)
class NonDaemonStdoutReader(ReferenceKernel):
    plugin_fleet = _plugins_with(start_reader=_reader_not_daemon)


def _read_utf8_only(plugin, lines) -> None:
    for raw in plugin.process.stdout:
        try:
            lines.put(raw.decode("utf-8"))
        except UnicodeDecodeError:
            return  # a line that is not UTF-8 is no handshake: what the plugin prints after it is not read
    lines.put(None)


@variant("stops reading a plugin's stdout at the first line that is not UTF-8", "architecture.md#transport",
         plugins=True)
class StopsAtUndecodableStdout(ReferenceKernel):
    plugin_fleet = _plugins_with(_read_stdout=_read_utf8_only)


# --- the harness surface ----------------------------------------------------------------------

@variant("offers no optional feature: no count_tokens op, no reload", "the harness protocol: features are optional")
class NoOptionalFeatures(ReferenceKernel):
    FEATURES: list[str] = []


@variant("names itself otherwise in hello (another name and language)",
         "the harness protocol: the implementation names itself")
class AnotherKernelName(ReferenceKernel):
    IMPLEMENTATION = {**ReferenceKernel.IMPLEMENTATION, "name": "another-kernel", "language": "another-language"}


@variant("diagnostics of a kind of its own and without the optional label", "R-LOG-AS-DIAGNOSTIC")
class OwnDiagnosticKinds(ReferenceKernel):
    @staticmethod
    def diagnostic(provider, category, message, section=None, kind="rejected"):
        return {"kind": "context-note", "provider": provider.name, "category": category, "message": message}


@variant("asks every provider for its capabilities before configuring any", "context/protocol.md#configure")
class CapabilitiesBeforeConfigure(ReferenceKernel):
    def start_providers(self, declared, call):
        providers = [self.provider_from(entry, call("GetCapabilities", entry["name"], {})) for entry in declared]
        for entry in declared:
            call("Configure", entry["name"], {"config": entry.get("config", {})})
        return providers


@variant("reports every rejected section on its own as well as the provider, with extra fields everywhere",
         "R-LOG-AS-DIAGNOSTIC")
class ChattyDiagnostics(ReferenceKernel):
    def hello(self, request, call):
        return {**super().hello(request, call), "build": {"commit": "0123abc", "dirty": False}}

    def load(self, request, call):
        return {**super().load(request, call), "providers_loaded": len(request["config"]["providers"])}

    def assemble(self, request, call):
        result = super().assemble(request, call)
        result["diagnostics"] = [{**d, "severity": "warning", "turn_id": request["turn"]["turn_id"]}
                                 for d in result["diagnostics"]]
        return {**result, "timing_ms": {"context_assemble": 1.5}}

    def on_over_budget(self, provider, chain, own, budget, model, diagnostics):
        for section in own:
            self.report(diagnostics, self.diagnostic(provider, "budget_exceeded", "dropped with its provider's "
                                                     "other sections", section, kind="section_dropped"))
        return super().on_over_budget(provider, chain, own, budget, model, diagnostics)


class _WireForms(ReferenceKernel):
    """Speaks another JSON form of every protobuf message it sends or returns."""

    @staticmethod
    def form(type_name: str, data: dict) -> dict:
        raise NotImplementedError

    def recode(self, call):
        types = {"Contribute": "ContextRequest", "CountTokens": "CountTokensRequest"}

        def send(name, provider, request):
            return call(name, provider, self.form(types[name], request) if name in types else request)
        return send

    def load(self, request, call):
        return super().load(request, self.recode(call))

    def assemble(self, request, call):
        result = super().assemble(request, self.recode(call))
        return {**result, "sections": wire_forms.each(self.form, "ContextSection", result["sections"]),
                "history": wire_forms.each(self.form, "Message", result["history"])}

    def count_tokens(self, request, call):
        return self.form("CountTokensResult", super().count_tokens(request, self.recode(call)))


@variant("Go protojson forms: lowerCamelCase names, int64 as strings, default values omitted", "the proto3 JSON mapping")
class ProtojsonForms(_WireForms):
    form = staticmethod(wire_forms.protojson)


@variant("enums as numbers", "the proto3 JSON mapping")
class EnumsAsNumbers(_WireForms):
    form = staticmethod(wire_forms.enums_as_numbers)


@variant("fields the suite's protos do not declare, in every message", "the proto3 JSON mapping")
class UnknownFields(_WireForms):
    form = staticmethod(wire_forms.with_unknown_fields)

