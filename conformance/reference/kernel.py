"""The reference kernel: the context-assemble loop as the spec and ctxconf's
rulings describe it, reached through the python binding (and, through
runners/python/stdio_shim.py, the stdio one).

Every decision is a small method of its own, so that a mutant
(conformance/proofs/kernel_mutants.py) can override one to break one
requirement, and a conforming variant (proofs/kernel_variants.py) one to take
a freedom the spec or a ruling allows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance import __version__
from conformance.bindings.base import CallFailed
from conformance.wire import errors, forms, tokens


@dataclass
class Provider:
    name: str
    capabilities: dict
    override: int | None

    @property
    def compactor(self) -> bool:
        return bool(self.capabilities.get("compactor"))

    @property
    def stability(self) -> str:
        return self.capabilities.get("stability", "STABILITY_UNSPECIFIED")


@dataclass
class Session:
    history: list[dict] = field(default_factory=list)
    last_total: int = 0
    turns: int = 0


class TurnFailed(Exception):
    """Raised to fail the whole turn with a surfaced error."""


class ReferenceKernel:
    IMPLEMENTATION = {"name": "ctxconf-reference-kernel", "version": __version__, "language": "python"}
    FEATURES = ["reload", "count_tokens"]

    def __init__(self) -> None:
        self.models: dict[str, dict] = {}
        self.providers: list[Provider] = []
        self.routing: list[str] = []
        self.sessions: dict[str, Session] = {}
        self.fleet = None      # the launched plugins of this configuration (reference/plugin_host.py)
        self.upstream = None   # the current op's call, for counts the plugins ask the kernel for

    # --- ops ----------------------------------------------------------------------

    def hello(self, request: dict, call) -> dict:
        return {"implementation": self.IMPLEMENTATION, "features": self.FEATURES}

    def load(self, request: dict, call) -> dict:
        config = request["config"]
        self.close_plugins()
        if any(p.get("command") for p in config["providers"]):
            self.fleet = self.launch_plugins(config)
        call = self.routed(call)
        self.models = {m["id"]: m for m in config["models"]}
        self.routing = [config["primary_model"], *config.get("fallback_models", [])]
        self.sessions = {}
        self.providers = self.assembly_order(self.start_providers(config["providers"], call))
        return {"warnings": [w for w in (self.budget_warning(), self.stability_warning()) if w]}

    def assemble(self, request: dict, call) -> dict:
        turn = request["turn"]
        call = self.routed(call)
        session = self.sessions.setdefault(turn["session_id"], Session())
        session.history = session.history + forms.normalize_list("Message", turn.get("new_messages", []))
        model = self.models[turn["model"]]
        diagnostics: list[dict] = []
        try:
            chain = self.run_chain(turn, model, session, diagnostics, call)
        except TurnFailed as failure:
            return {"sections": [], "prompt": "", "history": session.history, "turn_failed": True,
                    "error": {"message": str(failure)}, "diagnostics": diagnostics}
        finally:
            session.turns += 1
        session.last_total = self.assembled_total(chain, session, model, call)
        return {"sections": chain, "prompt": self.render(chain), "history": session.history,
                "turn_failed": False, "error": None, "diagnostics": diagnostics}

    def count_tokens(self, request: dict, call) -> dict:
        call = self.routed(call)
        counted = forms.normalize("CountTokensRequest", request["request"])
        ref = counted.get("model_ref") or {}
        model = self.models.get(ref.get("id", ""))
        if model and model.get("count_tokens") and ref.get("provider") in ("", model.get("provider", "")):
            exact = self.tokenizer_count(counted["content"], model, call)
            if exact is not None:
                return {"count": exact, "exact": True}
        return {"count": self.fallback(counted["content"]), "exact": False}

    def stop(self, request: dict, call) -> dict:
        self.close_plugins()
        return {}

    # --- launched plugins (ctxconf kernel --launch-plugins) ------------------------------

    def launch_plugins(self, config: dict):
        return self.plugin_fleet()(config["providers"], lambda r: self.count_tokens({"request": r}, self.upstream),
                                   config.get("hook_timeout_ms"))

    @staticmethod
    def plugin_fleet() -> type:
        from conformance.reference.plugin_host import PluginFleet  # grpc is loaded only for this mode
        return PluginFleet

    def routed(self, call):
        """The op's call, with the launched providers' calls going to their plugins."""
        self.upstream = call
        return self.fleet.route(call) if self.fleet else call

    def close_plugins(self) -> None:
        """A configuration's plugins end with it: on the next load, and on stop."""
        if self.fleet is not None:
            fleet, self.fleet = self.fleet, None
            fleet.close()

    # --- config load ------------------------------------------------------------------

    def start_providers(self, declared: list[dict], call) -> list[Provider]:
        """Each provider's capabilities, then its configuration, one provider after another."""
        providers = []
        for entry in declared:
            providers.append(self.provider_from(entry, call("GetCapabilities", entry["name"], {})))
            call("Configure", entry["name"], {"config": entry.get("config", {})})
        return providers

    @staticmethod
    def provider_from(entry: dict, reply: dict) -> Provider:
        capabilities = forms.normalize("ContextCapabilities", reply.get("capabilities", {}))
        return Provider(entry["name"], capabilities, entry.get("token_budget_override"))

    def assembly_order(self, providers: list[Provider]) -> list[Provider]:
        return providers  # declaration order, always (KC-NO-REORDER)

    def resolve_cap(self, provider: Provider) -> int:
        if provider.override is not None:
            return provider.override
        return int(provider.capabilities.get("default_token_budget", 0))

    def token_budget(self, provider: Provider, model: dict) -> int:
        """What the provider is handed this turn: its resolved cap, whatever the model."""
        return self.resolve_cap(provider)

    def routing_ceilings(self) -> list[int]:
        return [self.effective_ceiling(self.models[m]) for m in self.routing if m in self.models]

    def budget_warning(self) -> dict | None:
        total, ceilings = sum(self.resolve_cap(p) for p in self.providers), self.routing_ceilings()
        if ceilings and total > min(ceilings):
            return {"code": "budget_sum_exceeds_ceiling",
                    "message": f"the caps add up to {total}, more than the smallest effective ceiling {min(ceilings)}"}
        return None

    def stability_warning(self) -> dict | None:
        seen_dynamic = False
        for provider in self.providers:
            seen_dynamic = seen_dynamic or provider.stability == "STABILITY_DYNAMIC"
            if seen_dynamic and provider.stability == "STABILITY_STATIC":
                return {"code": "dynamic_before_static",
                        "message": f"{provider.name} (static) comes after a dynamic provider; "
                                   "the cache prefix breaks whenever the dynamic content changes"}
        return None

    # --- one firing ---------------------------------------------------------------------

    def effective_ceiling(self, model: dict) -> int:
        return model["context_window"] - model["reserved_output"] - model["system_overhead"]

    def model_target(self, model: dict) -> dict:
        return {"id": model["id"], "context_window": model["context_window"],
                "effective_ceiling": self.effective_ceiling(model)}

    def turn_fields(self, turn: dict) -> dict:
        return {key: turn.get(key, "") for key in ("session_id", "parent_session_id", "turn_id",
                                                    "working_directory")} | {"files_touched": turn.get("files_touched", [])}

    def providers_for_turn(self, session: Session) -> list[Provider]:
        return self.providers

    def initial_chain(self, session: Session) -> list[dict]:
        return []  # every firing starts empty (R-FIRING-STARTS-EMPTY)

    def history_for(self, provider: Provider, history: list[dict]) -> list[dict]:
        return history if provider.compactor else []

    def count_history(self, session: Session, model: dict, call) -> int:
        return self.count(tokens.history_content(session.history), model, call)

    def run_chain(self, turn: dict, model: dict, session: Session, diagnostics: list[dict], call) -> list[dict]:
        chain = self.initial_chain(session)
        history_tokens = self.count_history(session, model, call)
        for provider in self.providers_for_turn(session):
            budget = self.token_budget(provider, model)
            request = self.turn_fields(turn) | {
                "token_budget": budget, "model_target": self.model_target(model), "prior_sections": chain,
                "conversation_history": self.history_for(provider, session.history),
                "history_tokens": history_tokens, "assembled_tokens_last_turn": session.last_total}
            try:
                reply = forms.normalize("ContextContribution", self.contribute(provider, request, call))
            except CallFailed as failure:
                self.report(diagnostics, self.on_failure(provider, failure))
                chain = self.chain_after_failure(provider, chain)
                continue
            except forms.WireFormError as exc:
                self.report(diagnostics, self.diagnostic(provider, "unknown", f"unreadable reply: {exc}"))
                continue
            history = session.history
            chain = self.accept(provider, chain, reply, budget, model, session, diagnostics, call)
            if session.history is not history:
                history_tokens = self.count_history(session, model, call)
        return chain

    def contribute(self, provider: Provider, request: dict, call) -> dict:
        return call("Contribute", provider.name, request)

    def chain_after_failure(self, provider: Provider, chain: list[dict]) -> list[dict]:
        """A failed provider's contribution is left out: the chain before it stands."""
        return chain

    def on_failure(self, provider: Provider, failure: CallFailed) -> dict | None:
        """Isolate every failing provider; R-ERROR-ISOLATION accepts that for every category."""
        category = errors.category_of(failure.context_error) or "unknown"
        message = (failure.context_error or {}).get("message") or failure.message
        return self.diagnostic(provider, category, f"Contribute failed ({failure.code}): {message}", kind="provider_failed")

    def accept(self, provider: Provider, chain: list[dict], reply: dict, budget: int, model: dict,
               session: Session, diagnostics: list[dict], call) -> list[dict]:
        """The chain after this provider's reply, applying every rule the kernel enforces."""
        sections = reply["sections"]
        if provider.compactor:
            kept = self.admissible(provider, sections, diagnostics)
            if self.compactor_over_budget(provider, kept, budget, model, call):
                return self.reject_compactor(provider, chain, reply, budget, session, diagnostics)
            if reply["rewritten_history"]:
                self.apply_rewrite(session, reply["rewritten_history"])
            return self.recounted(kept, model, call)
        if not self.in_scope(provider, chain, sections):
            return self.on_scope_violation(provider, chain, sections, diagnostics)
        if reply["rewritten_history"]:
            return self.on_foreign_rewrite(provider, chain, reply, session, diagnostics)
        own = self.admissible(provider, self.own_part(provider, chain, sections), diagnostics)
        if self.over_budget(own, budget, model, call):
            return self.on_over_budget(provider, chain, own, budget, model, diagnostics)
        return self.with_own(provider, chain, sections, self.recounted(own, model, call))

    def own_part(self, provider: Provider, chain: list[dict], sections: list[dict]) -> list[dict]:
        """What a reply in scope holds of the provider's own: everything after the prior chain."""
        return sections[len(chain):]

    def with_own(self, provider: Provider, chain: list[dict], sections: list[dict], own: list[dict]) -> list[dict]:
        """The chain after an accepted reply: the prior chain, then the provider's sections it kept."""
        return chain + own

    def in_scope(self, provider: Provider, chain: list[dict], sections: list[dict]) -> bool:
        """R-PLACEMENT: the prior chain an untouched prefix, everything after it the provider's own."""
        n = len(chain)
        return len(sections) >= n and sections[:n] == chain and all(s["provider"] == provider.name
                                                                       for s in sections[n:])

    def on_scope_violation(self, provider: Provider, chain: list[dict], sections: list[dict],
                           diagnostics: list[dict]) -> list[dict]:
        self.report(diagnostics, self.diagnostic(provider, "scope_violation",
                                                 "the reply changed sections it does not own; reply discarded"))
        return chain

    def on_foreign_rewrite(self, provider: Provider, chain: list[dict], reply: dict, session: Session,
                           diagnostics: list[dict]) -> list[dict]:
        self.report(diagnostics, self.diagnostic(provider, "scope_violation",
                                                 "only a compactor may rewrite the history; reply discarded"))
        return chain

    def admissible(self, provider: Provider, sections: list[dict], diagnostics: list[dict]) -> list[dict]:
        """Sections that may enter the chain: text-only and labelled, each judged whole."""
        kept = []
        for section in sections:
            if not tokens.is_text_only(section["content"]):
                self.report(diagnostics, self.diagnostic(provider, "non_text_content",
                                                         "a section holds a non-text block; section dropped", section))
            elif not section["label"]:
                self.report(diagnostics, self.diagnostic(provider, "missing_label",
                                                         "a section has no label; section dropped"))
            else:
                kept.append(section)
        return kept

    def over_budget(self, sections: list[dict], budget: int, model: dict, call) -> bool:
        """Judged by the kernel's own count, never the stated figure (R-TOKENS-RECOUNT)."""
        return sum(self.count(s["content"], model, call) for s in sections) > budget

    def on_over_budget(self, provider: Provider, chain: list[dict], own: list[dict], budget: int, model: dict,
                       diagnostics: list[dict]) -> list[dict]:
        self.report(diagnostics, self.diagnostic(provider, "budget_exceeded",
                                                 f"its sections exceed its budget of {budget}; dropped"))
        return chain

    def compactor_over_budget(self, provider: Provider, kept: list[dict], budget: int, model: dict, call) -> bool:
        return self.over_budget(self.counted_against_compactor(provider, kept), budget, model, call)

    def counted_against_compactor(self, provider: Provider, kept: list[dict]) -> list[dict]:
        return kept  # the whole returned chain (R-COMPACTOR-OVER-BUDGET)

    def reject_compactor(self, provider: Provider, chain: list[dict], reply: dict, budget: int, session: Session,
                         diagnostics: list[dict]) -> list[dict]:
        self.report(diagnostics, self.diagnostic(provider, "budget_exceeded",
                                                 f"the compactor's chain exceeds its budget of {budget}; reply rejected"))
        return chain

    def apply_rewrite(self, session: Session, history: list[dict]) -> None:
        session.history = history

    def recounted(self, sections: list[dict], model: dict, call) -> list[dict]:
        return [{**s, "tokens": self.count(s["content"], model, call)} for s in sections]

    def assembled_total(self, chain: list[dict], session: Session, model: dict, call) -> int:
        return sum(self.count(s["content"], model, call) for s in chain)

    def render(self, chain: list[dict]) -> str:
        return "\n\n".join(self.render_section(s) for s in chain)

    def render_section(self, section: dict) -> str:
        """A labelled boundary around the section's text (context/data-types.md#labeling)."""
        return (f"<<< {section['label']} | {section['provider']} >>>\n{tokens.text_of(section['content'])}\n"
                f"<<< end {section['label']} >>>")

    @staticmethod
    def report(diagnostics: list[dict], diagnostic: dict | None) -> None:
        if diagnostic is not None:
            diagnostics.append(diagnostic)

    @staticmethod
    def diagnostic(provider: Provider, category: str, message: str, section: dict | None = None,
                   kind: str = "rejected") -> dict:
        diagnostic = {"kind": kind, "provider": provider.name, "category": category, "message": message}
        if section and section.get("label"):
            diagnostic["label"] = section["label"]
        return diagnostic

    # --- counting -------------------------------------------------------------------------

    def count(self, content: list[dict], model: dict, call) -> int:
        """CountTokens resolution: the model's tokenizer if it has one, else the fallback."""
        if model.get("count_tokens"):
            exact = self.tokenizer_count(content, model, call)
            if exact is not None:
                return exact
        return self.fallback(content)

    def tokenizer_count(self, content: list[dict], model: dict, call) -> int | None:
        """The model provider's own CountTokens, reached by its provider name and the model's id."""
        try:
            reply = call("CountTokens", None, {"model_ref": self.model_ref(model), "content": content})
        except CallFailed:
            return None
        return int(reply["count"])

    def model_ref(self, model: dict) -> dict:
        return {"provider": model.get("provider", ""), "id": model["id"]}

    def fallback(self, content: list[dict]) -> int:
        return tokens.fallback_count(content)


def create() -> ReferenceKernel:
    """The factory for --python conformance.reference.kernel:create."""
    return ReferenceKernel()
