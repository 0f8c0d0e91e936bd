"""Judging a kernel transcript: the invariants every turn of every case must
hold (whatever the vector, and whatever scenario the property tests generate),
then the vector's own explicit expectations.

Each finding cites the one requirement its observation evidences. The rules
for what a kernel may do with a reply, and which rule a chain it may not hold
breaks, live in kernel_judge; this module walks the transcript in order, keeps
the conversation a conforming kernel would have, and compares.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, replace

from conformance.engine import expectations, prompt_text
from conformance.engine.kernel_driver import CallRecord, Transcript, TurnRecord
from conformance.engine.kernel_judge import Judgment, Outcome, either, judge_crash, judge_failure, judge_reply
from conformance.engine.results import Finding, HarnessProblem
from conformance.engine.scenario import KernelScenario, Model
from conformance.wire import errors, forms, tokens


# The requirements these invariants can report on, for the coverage matrix.
COVERS = frozenset({
    "K-FIRE-EACH-TURN", "K-DECLARATION-ORDER", "K-SEQUENTIAL", "K-PRIOR-SECTIONS", "K-TOKEN-BUDGET",
    "K-MODEL-TARGET", "K-EFFECTIVE-CEILING", "K-TURN-FIELDS", "K-HISTORY-TO-COMPACTOR",
    "K-HISTORY-NOT-TO-OTHERS", "K-HISTORY-TOKENS", "K-ASSEMBLED-LAST-TURN", "K-BUDGET-VALIDATE",
    "K-BUDGET-REJECT", "K-TRUNCATED-NOT-ENOUGH", "K-BUDGET-NO-TURN-FAIL", "K-NO-KERNEL-CUT",
    "K-COMPACTOR-BUDGET", "K-NON-TEXT-REJECT", "K-PROMPT-BOUNDARIES", "K-SCOPE-DISCARD", "K-SCOPE-LOG",
    "K-SCOPE-NO-FAIL", "K-APPLY-REWRITTEN-HISTORY", "K-REWRITE-COMPACTOR-ONLY", "K-ERR-SOURCE-UNAVAILABLE",
    "K-ERR-BUDGET-EXCEEDED", "K-ERR-SCOPE-VIOLATION", "K-ERR-INVALID-REQUEST-NO-RETRY",
    "K-ERR-INVALID-REQUEST-LOG", "K-ERR-UNKNOWN-RAW-MESSAGE", "K-NO-SILENT-FALLBACK",
    "K-TRANSFORM-ERROR-SURFACED", "K-TIMEOUT", "K-COUNT-FALLBACK-FORMULA", "K-COUNT-RESOLUTION",
    "K-COUNT-EXACT-FLAG", "K-COUNT-NON-TEXT-ZERO", "KC-CONFIGURE", "KC-BUDGET-SUM-WARN", "KC-STABILITY-ORDER-WARN", "KC-NO-REORDER",
    "K-CALLBACK-CHANNEL", "K-PLUGIN-HANDSHAKE", "K-PLUGIN-SHUTDOWN", "K-PLUGIN-ENV",
})


@dataclass
class SessionState:
    """The conversation a conforming kernel keeps for one session."""
    history: list[dict] = field(default_factory=list)
    last_totals: frozenset[int] | None = frozenset({0})   # what the previous turn assembled (R-ASSEMBLED-TOKENS);
                                                        # None: unknown (the previous turn failed)
    last_by_formula: frozenset[int] = frozenset({0})      # the same, counted by the fallback formula
    rewritten: bool = False             # a rewrite was applied earlier in the session
    before_rewrite: list[dict] | None = None
    went_wrong: bool = False            # an invariant failed on an earlier turn
    last_chain: list[dict] = field(default_factory=list)  # the final chain of the session's last turn that held
    history_options: list[list[dict]] | None = None  # after a failed turn: what the conversation may be


def check_case(scenario: KernelScenario, transcript: Transcript) -> list[Finding]:
    findings: list[Finding] = []
    if transcript.load is not None:
        codes = {w["code"] for w in transcript.load["warnings"]}
        findings += check_load(scenario, codes)
        findings += expectations.KERNEL.check(scenario.expect_load, {"warnings": codes}, "load")
    sessions: dict[str, SessionState] = {}
    for number, record in enumerate(transcript.turns, 1):
        if record.result is None:
            continue
        where = f"turn {number}"
        expect = record.turn.expect
        if record.turn.kind == "count_tokens":  # one stateless observation: its vector says what it tests
            findings += check_count(scenario, record, where)
            findings += _unless_tokenizer_late(expectations.KERNEL.check(
                expect, observation(scenario, record, transcript), where), record, where)
            continue
        state = sessions.setdefault(record.turn.input["session_id"], SessionState())
        invariants = TurnCheck(scenario, sessions, record, where, transcript.features).run()
        findings += invariants
        broken = {f.requirement for f in invariants if isinstance(f, Finding) and not f.passed}
        if broken or state.went_wrong:
            # A vector's expectations are written for a session that has gone right so far. Once the
            # invariants (which follow what the kernel actually did) have charged a fault, expectations
            # about anything else would charge its consequences too: one fault, one requirement.
            expect = {r: a for r, a in expect.items() if r in broken}
        state.went_wrong = state.went_wrong or bool(broken)
        findings += _unless_tokenizer_late(expectations.KERNEL.check(
            expect, observation(scenario, record, transcript), where), record, where)
    if transcript.plugins is not None:
        findings += check_plugins(transcript, scenario)
    return findings + check_configured(scenario, transcript)


def _unless_tokenizer_late(findings: list[Finding], record: TurnRecord, where: str) -> list[Finding | HarnessProblem]:
    """A vector's expected figures assume the tokenizer answered in time. When the suite's answer came at the
    kernel's deadline the kernel may rightly have counted by the formula (R-TOKENIZER-DOWN), which they do not
    allow for: what they fail is then the case's error, the suite's slowness, and no requirement's failure."""
    if not tokenizer_late(record) or all(f.passed for f in findings):
        return findings
    failed = "; ".join(f"{f.requirement}: {f.message}" for f in findings if not f.passed)
    return [f for f in findings if f.passed] + [HarnessProblem(
        "the suite's tokenizer answered CountTokens at the kernel's deadline, so the kernel may have counted by "
        f"the fallback formula, which the vector's expectations do not allow for ({failed}); rerun on a less "
        "loaded machine", where)]


def check_configured(scenario: KernelScenario, transcript: Transcript) -> list[Finding]:
    """KC-CONFIGURE: each provider asked to contribute was configured first, with its declared config, after
    the kernel learned its capabilities (protocol.md: the ConfigSchema comes before Configure is called)."""
    calls = transcript.load_calls + [c for turn in transcript.turns for c in turn.calls]
    findings = []
    for fake in scenario.providers:
        mine = [c for c in calls if c.provider == fake.name]
        first = next((i for i, c in enumerate(mine) if c.call == "Contribute"), None)
        if first is None:
            continue  # never asked to contribute: nothing here to judge
        before = mine[:first]
        configure = next((i for i, c in enumerate(before) if c.call == "Configure"
                          and (c.request.get("config") or {}) == fake.config), None)
        capabilities = next((i for i, c in enumerate(before) if c.call == "GetCapabilities"), None)
        problem = ("was never configured with its declared config before its first Contribute" if configure is None
                   else "was configured before its capabilities were asked" if capabilities is None or
                   capabilities > configure else "")
        sent = [c.request.get("config") for c in before if c.call == "Configure"]
        findings.append(Finding("KC-CONFIGURE", not problem, f"{fake.name} {problem} (declared {fake.config}, "
                                f"sent {sent or 'no Configure'})", "load"))
    return findings


def check_plugins(transcript: Transcript, scenario: KernelScenario) -> list[Finding | HarnessProblem]:
    """The plugin-launching mode: what each plugin the kernel launched observed of its host. A provider the
    kernel called (through its plugin: the suite saw the call) must have been launched from its command;
    when a kernel launches one is its own affair, so one never called need not have been."""
    called = {c.provider for c in transcript.load_calls + [c for t in transcript.turns for c in t.calls]
              if c.call != "CountTokens"}
    launches = transcript.plugins
    cut_short = transcript.error is not None  # an op that errored (a timeout, say): the kernel was stopped mid-way
    gave_up = transcript.load_failed is not None  # a Load the scenario let fail: it need not have reached them all
    findings = [HarnessProblem(f"the kernel called provider {name!r} without launching its plugin from the "
                               "command it was given (through the harness's own callbacks?): does load start "
                               "that command?", "load")
                for name in sorted(called - {launch.get("name") for launch in launches})]
    if transcript.bypassed:
        findings.append(HarnessProblem("the kernel made provider calls through the harness's own callbacks, not "
                                       f"through the plugins it launched: {', '.join(transcript.bypassed)}", "load"))
    for launch in launches:
        where = f"plugin {launch.get('name')} (pid {launch['pid']})"
        versions = (launch.get("protocol_versions") or "").split(",")
        findings.append(Finding("K-PLUGIN-HANDSHAKE", launch.get("cookie") == "ok" and "1" in versions,
                                f"launched with the magic cookie {launch.get('cookie')} and PLUGIN_PROTOCOL_VERSIONS="
                                f"{launch.get('protocol_versions')!r}; the handshake needs the cookie and version 1", where))
        if launch.get("handed_secret") is not None:
            findings.append(Finding("K-PLUGIN-ENV", not launch["handed_secret"], "its environment held a variable "
                                    "the suite planted in the kernel's own: it inherited the kernel's environment "
                                    "rather than an allowlist", where))
        if "refused" in launch:
            continue  # it never served: nothing else about it to judge
        offered = 1 in launch["offers"]
        if not offered and cut_short:
            continue  # the suite stopped the kernel before it was done: what it never got to do shows nothing
        if offered or not gave_up:  # a Load given up may not have reached this plugin; its shutdown is still due
            findings.append(Finding("K-CALLBACK-CHANNEL", offered, "the kernel never announced its callback service "
                                    f"on broker ID 1 (announced: {launch['offers'] or 'nothing'})", where))
        if offered:
            findings += _judge_offer_probe(launch.get("probe_offer"), f"{where}, counting as soon as it was offered "
                                                                      "(in Load)")
        if launch["probe"] is not None and offered:
            findings += _judge_probe(launch["probe"], where)
            findings += _judge_model_probe(launch["probe_model"], scenario, where)
        if not launch["crashed"] and not cut_short:
            asked = "though it was sent" if launch["shutdown"] else "and was never sent"
            findings.append(Finding("K-PLUGIN-SHUTDOWN", launch["exited"], "still running when the kernel had been "
                                    f"done with its configuration for 5s, {asked} GRPCController/Shutdown", where))
            if launch["exited"]:  # drain, then kill: asked to stop (Shutdown or SIGTERM) before it went
                findings.append(Finding("K-PLUGIN-SHUTDOWN", launch["shutdown"], "killed without being asked to "
                                        "stop first (no GRPCController/Shutdown, no SIGTERM): no drain before "
                                        "the kill (R-PLUGIN-LIFETIME)", where))
    return findings


def _judge_probe(probe: dict | None, where: str) -> list[Finding]:
    """A count without a model_ref over the callback channel: answered, by the fallback formula, not exact
    (kernel-callbacks.md#counttokens), whenever the plugin asks, during a Load as during a turn."""
    if probe is None:
        return []
    findings = [Finding("K-CALLBACK-CHANNEL", probe["ok"], f"CountTokens over the callback channel failed: "
                        f"{probe.get('error')}", where)]
    if probe["ok"]:
        expected = tokens.fallback_count([{"text": {"text": probe["text"]}}])
        findings.append(Finding("K-COUNT-FALLBACK-FORMULA", int(probe.get("count", 0)) == expected,
                                f"CountTokens without a model_ref over the callback channel gave "
                                f"{probe.get('count', 0)}, not the fallback formula's {expected}", where))
        findings.append(Finding("K-COUNT-EXACT-FLAG", not probe.get("exact"), "CountTokens without a "
                                "model_ref said exact: true, though no tokenizer could have counted", where))
    return findings


def _judge_offer_probe(probe: dict | None, where: str) -> list[Finding]:
    """The count a plugin makes the moment it is offered the callback channel, its GetCapabilities waiting for the
    answer: judged as any count, and answered while the plugin was still being set up. An answer that came only
    after it had answered GetCapabilities means the kernel offered the channel, or served it, only once the
    plugin was set up, though the channel is the plugin's from its handshake on
    (kernel-callbacks.md#the-callback-channel)."""
    findings = _judge_probe(probe, where)
    if probe and probe["ok"] and "after_set_up" in probe:
        findings.append(Finding("K-CALLBACK-CHANNEL", not probe["after_set_up"], "the count it made as soon as it was "
                                "offered the callback channel was answered only after it had answered the kernel's "
                                "GetCapabilities: the channel was offered, or served, only once the plugin was set "
                                "up, not from its handshake on", where))
    return findings


def _judge_model_probe(probe: dict | None, scenario: KernelScenario, where: str) -> list[Finding]:
    """A count over the callback channel for a declared model with a tokenizer is that tokenizer's, exact."""
    if not probe or not probe.get("ok"):
        return [] if not probe else [Finding("K-CALLBACK-CHANNEL", False, "CountTokens for a model over the callback "
                                             f"channel failed: {probe.get('error')}", where)]
    ref = probe.get("model_ref") or {}
    model = next((m for m in scenario.models if (m.provider, m.id) == (ref.get("provider"), ref.get("id"))), None)
    if model is None:
        return []
    content = [{"text": {"text": probe["text"]}}]
    want, exact = model.count(content), model.exact
    return [Finding("K-COUNT-RESOLUTION" if exact else "K-COUNT-FALLBACK-FORMULA", int(probe.get("count", 0)) == want,
                    f"CountTokens for {model.id} over the callback channel gave {probe.get('count', 0)}, not "
                    f"{want}", where),
            Finding("K-COUNT-EXACT-FLAG", bool(probe.get("exact")) is exact, f"CountTokens for {model.id} over the "
                    f"callback channel said exact {probe.get('exact')}", where)]


def observation(scenario: KernelScenario, record: TurnRecord, transcript: Transcript) -> dict:
    result = record.result or {}
    if record.turn.kind == "count_tokens":
        model = _counted_for(scenario, record.turn.input)
        return {"count": result.get("count"), "exact": result.get("exact"),
                "exact_truthful": exact_is_truthful(model, record.turn.input["content"], result)}
    calls = record.contributes()
    requests: dict[str, dict] = {}
    for call in calls:
        requests.setdefault(call.provider, call.request)
    return {
        "chain": result.get("sections"), "calls": [c.provider for c in calls],
        "contribute_calls": Counter(c.provider for c in calls), "requests": requests,
        "overlapped": any(c.overlapped for c in record.calls),
        "diagnostics": result.get("diagnostics", []), "turn_failed": result.get("turn_failed"),
        "turn_error": result.get("error"), "history": result.get("history"), "prompt": result.get("prompt"),
    }


def _readable(reply) -> bool:
    try:
        forms.normalize("ContextContribution", reply)
        return True
    except forms.WireFormError:
        return False


def _strings_in(value) -> str:
    """Every string inside a JSON value, joined with nothing: what counting a block's "text" would see."""
    if isinstance(value, str):
        return value
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return "".join(_strings_in(item) for item in items)


def _non_text_as_text(history: list[dict], form) -> list[dict]:
    """The conversation with each non-text block counted as if it were text (`form`: its JSON, or the strings
    in it), as a kernel counting whatever it is given would (K-COUNT-NON-TEXT-ZERO)."""
    return [{**m, "content": [b if tokens.is_text_only([b]) else {"text": {"text": form(b)}}
                              for b in m.get("content", [])]} for m in history]


def history_counts(history: list[dict], count) -> frozenset[int]:
    """R-HISTORY-TOKENS: what a conversation counts, all at once or message by message."""
    return frozenset({count(tokens.history_content(history)), sum(count(m.get("content", [])) for m in history)})


def assembled_totals(chain: list[dict], count) -> frozenset[int]:
    """R-ASSEMBLED-TOKENS: what a chain adds up to, counted section by section or all at once."""
    return frozenset({sum(count(s["content"]) for s in chain), count([b for s in chain for b in s["content"]])})


# --- config load ------------------------------------------------------------------

# The load warnings the checks require, by the requirement each evidences (docs/kernel-protocol.md#warning-codes).
WARNING_CODES = {"KC-BUDGET-SUM-WARN": "budget_sum_exceeds_ceiling", "KC-STABILITY-ORDER-WARN": "dynamic_before_static"}


def dynamic_before_static(stabilities: list[str]) -> bool:
    first_static_after = False
    seen_dynamic = False
    for stability in stabilities:
        seen_dynamic = seen_dynamic or stability == "STABILITY_DYNAMIC"
        first_static_after = first_static_after or (seen_dynamic and stability == "STABILITY_STATIC")
    return first_static_after


def check_load(scenario: KernelScenario, codes: set[str]) -> list[Finding]:
    total = sum(p.cap for p in scenario.providers)
    routing = [scenario.model(m) for m in (scenario.primary_model, *scenario.fallback_models)]
    smallest = min(m.effective_ceiling for m in routing)
    # R-BUDGET-SUM-WARNING: due over the routing chain's smallest ceiling; a kernel that also weighs every
    # model it was given (a sub-agent may be routed to any) may warn over the smallest of those.
    smallest_declared = min(m.effective_ceiling for m in scenario.models)
    findings = []
    for requirement, code, due, may, reason in (
        ("KC-BUDGET-SUM-WARN", WARNING_CODES["KC-BUDGET-SUM-WARN"], total > smallest, total > smallest_declared,
         f"caps add up to {total} against a smallest effective ceiling of {smallest} in the routing chain"
         + (f" and {smallest_declared} among every declared model" if smallest_declared < smallest else "")
         + " (R-BUDGET-SUM-WARNING)"),
        ("KC-STABILITY-ORDER-WARN", WARNING_CODES["KC-STABILITY-ORDER-WARN"],
         dynamic_before_static([p.stability for p in scenario.providers]),
         # A provider that declared no stability may be taken for either (it broke P-CAP-STABILITY).
         any(dynamic_before_static([p.stability if p.stability in ("STABILITY_STATIC", "STABILITY_DYNAMIC") else
                                    taken for p in scenario.providers])
             for taken in ("STABILITY_STATIC", "STABILITY_DYNAMIC")),
         "declared stabilities " + " ".join(p.stability.removeprefix("STABILITY_").lower() for p in scenario.providers)),
    ):
        if may and not due:
            continue  # warning or not, both are accepted: nothing here could fail the requirement
        given = code in codes
        message = "" if given == due else (f"expected a {code} warning: {reason}" if due
                                           else f"unexpected {code} warning: {reason}")
        findings.append(Finding(requirement, given == due, message, "load"))
    return findings


# --- the count_tokens op ---------------------------------------------------------------

def check_count(scenario: KernelScenario, record: TurnRecord, where: str) -> list[Finding]:
    """The count must come from the model's tokenizer when it has one, else from the formula; the exact
    flag must say truthfully which of the two produced the count the kernel gave. A model_ref naming only
    the model's id may be resolved by the id or counted by the formula."""
    request, result = record.turn.input, record.result
    model = _counted_for(scenario, request)
    exact = bool(model and model.exact)
    # A model_ref naming only the id, or a tokenizer answering at the kernel's deadline: the formula may count.
    if exact and (not (request.get("model_ref") or {}).get("provider") or tokenizer_late(record)) and \
            result["count"] == tokens.fallback_count(request["content"]) and result["exact"] is False:
        exact = False
    want = model.tokenizer_count(request["content"]) if exact else tokens.fallback_count(request["content"])
    requirement = "K-COUNT-RESOLUTION" if exact else "K-COUNT-FALLBACK-FORMULA"
    how = "the model's tokenizer" if exact else "the fallback formula"
    return [
        Finding(requirement, result["count"] == want, f"count {result['count']}, but {how} gives {want}", where),
        Finding("K-COUNT-EXACT-FLAG", exact_is_truthful(model, request["content"], result),
                f"exact {result['exact']} for a count of {result['count']}, which is not what produced it", where),
    ]


def tokenizer_late(record: TurnRecord) -> bool:
    """Whether the suite's tokenizer answered some CountTokens call of the turn at the kernel's deadline."""
    return any(c.call == "CountTokens" and c.late for c in record.calls)


def _counted_for(scenario: KernelScenario, request: dict) -> Model | None:
    """The declared model a CountTokens request names; none when it names another model provider."""
    ref = request.get("model_ref") or {}
    model = next((m for m in scenario.models if m.id == ref.get("id")), None)
    return model if model and ref.get("provider") in (None, "", model.provider) else None


def exact_is_truthful(model: Model | None, content: list[dict], result: dict) -> bool:
    """exact says whether a real tokenizer produced the count: never for a model without one; for a model
    with one, true for the tokenizer's count and false for the formula's or any other number."""
    if not (model and model.exact):
        return result["exact"] is False
    by_tokenizer = result["count"] == model.tokenizer_count(content)
    by_formula = result["count"] == tokens.fallback_count(content)
    return True if by_tokenizer and by_formula else result["exact"] is by_tokenizer


# --- one assemble turn ----------------------------------------------------------------------

class TurnCheck:
    def __init__(self, scenario: KernelScenario, sessions: dict[str, SessionState], record: TurnRecord, where: str,
                 features: tuple[str, ...] = ()):
        self.scenario, self.record, self.where = scenario, record, where
        # Over bindings that cannot hold a call open, a hang is simulated as DEADLINE_EXCEEDED:
        # the kernel's reaction is judged, but its own deadline is not (K-TIMEOUT needs a real transport).
        self.real_transport = "real_transport" in features
        # Over stdio a shim must wait for each answer, so calls cannot overlap and K-SEQUENTIAL is not judged.
        self.sees_overlap = "concurrent_callbacks" in features
        self.launched_plugins = "launch_plugins" in features
        self.input = record.turn.input
        self.model: Model = scenario.model(self.input["model"])
        # The suite's tokenizer answered at the kernel's deadline: the kernel may have counted that content by
        # the fallback formula, as when the tokenizer fails (R-TOKENIZER-DOWN); both counts are accepted.
        self.by_formula_too = self.model.exact and tokenizer_late(record)
        self.state = sessions.setdefault(self.input["session_id"], SessionState())
        self.result = record.result
        self.start_history = self.resumed_history()
        self.history = self.start_history           # after the rewrites accepted so far
        self.histories = [self.start_history]       # what a later compactor may be shown (R-REWRITE-VISIBILITY)
        self.findings: list[Finding] = []
        self.judgments: list[Judgment] = []
        self._counted: dict[int, tuple[list[dict], frozenset[int]]] = {}  # see history_figures

    def history_figures(self, history: list[dict]) -> frozenset[int]:
        """history_counts by the turn's model, once per history the turn holds: every Contribute request of the
        turn is judged against the same ones. Known by identity, and held beside its figures, so that an id
        reused by another list never finds them; the turn's histories are never changed in place."""
        entry = self._counted.get(id(history))
        if entry is None or entry[0] is not history:
            figures = history_counts(history, self.model.count)
            if self.by_formula_too:
                figures |= history_counts(history, tokens.fallback_count)
            entry = self._counted[id(history)] = (history, figures)
        return entry[1]

    def add(self, requirement: str, passed: bool, message: str = "", where: str = "") -> None:
        self.findings.append(Finding(requirement, passed, "" if passed else message, where or self.where))

    def run(self) -> list[Finding | HarnessProblem]:
        calls = self.record.contributes()
        names = [p.name for p in self.scenario.providers]
        unknown = [c.provider for c in calls if c.provider not in names]
        if unknown:
            self.findings.append(HarnessProblem(f"Contribute was called on undeclared providers {unknown}", self.where))
            return self.findings
        if self.sees_overlap and len(self.record.calls) > 1:
            self.add("K-SEQUENTIAL", not any(c.overlapped for c in self.record.calls),
                     "a callback arrived while another was still in flight")
        self.check_order(calls, names)
        pending: tuple[CallRecord, Judgment] | None = None
        for call in calls:
            prior = call.request["prior_sections"]
            if pending and pending[0].provider == call.provider:
                # A repeated call (a retry): it must be sent the same chain; only the last one counts.
                self.add("K-PRIOR-SECTIONS", prior == pending[0].request["prior_sections"],
                         f"{call.provider} was called again with a different prior chain", self.at(call))
                self.judgments.remove(pending[1])
            elif pending:
                self.resolve(*pending, observed=prior)
            else:
                # R-FIRING-STARTS-EMPTY: the firing starts empty, or from the session's previous final chain.
                self.add("K-PRIOR-SECTIONS", prior in ([], self.state.last_chain),
                         f"the first provider, {call.provider}, was sent {len(prior)} prior section(s): neither an "
                         f"empty chain nor the session's previous final chain ({len(self.state.last_chain)} "
                         "section(s)) (R-FIRING-STARTS-EMPTY)", self.at(call))
            self.check_request(call)
            pending = (call, self.judge(call))
        if self.result["turn_failed"]:
            self.check_failed_turn(pending)
            # R-FAILED-TURN: the conversation goes on with or without the failed turn's messages, or with a
            # rewrite accepted before the failure; the next turn shows which.
            self.state.history_options = [self.start_history, self.base_history, *self.histories[1:]]
            self.state.history, self.state.last_totals = self.start_history, None
            return self.findings
        missing = [n for n in names if n not in {c.provider for c in calls}]
        # hook-dispatch: a transform failure may abort the rest of the chain, the turn going on with the chain as
        # it stood (R-ERROR-ISOLATION): then only the providers after the failed one may go unasked.
        after_last = pending is not None and all(names.index(n) > names.index(pending[0].provider) for n in missing)
        if missing and after_last and pending[1].fail_blame != "K-FIRE-EACH-TURN":
            # Stopped at a provider whose failure may not stop the turn: the rule that says so is what broke.
            self.add(pending[1].fail_blame, False, f"the chain stopped after {pending[0].provider}, which may not "
                     f"stop it ({pending[1].why}); never asked: {missing}", self.at(pending[0]))
        elif names and not (missing and after_last and pending[1].may_fail_turn):  # with none, nothing to ask
            self.add("K-FIRE-EACH-TURN", not missing, f"never asked to contribute this turn: {missing}")
        if pending:
            self.resolve(*pending, observed=self.result["sections"])
        elif calls == [] and self.result["sections"] and not missing:
            self.add("K-PRIOR-SECTIONS", False, "sections appeared though no provider was called")
        if calls == [] and missing:  # it never fired: what it answered is no assembled context to judge
            self.state.history, self.state.last_totals = self.history, None
            return self.findings
        self.check_prompt()
        self.check_history()
        if self.history is not self.start_history:
            self.state.rewritten, self.state.before_rewrite = True, self.start_history
        self.state.history = self.history
        chain = self.result["sections"]
        self.state.last_chain = chain
        self.state.last_totals = assembled_totals(chain, self.model.count) | {sum(s["tokens"] for s in chain)}
        self.state.last_by_formula = assembled_totals(chain, tokens.fallback_count)
        if self.by_formula_too:
            self.state.last_totals |= self.state.last_by_formula
        return self.findings

    def resumed_history(self) -> list[dict]:
        """The conversation this turn starts from. After a failed turn there are several it may be
        (R-FAILED-TURN): the one a compactor is shown, else the one the first history_tokens counts, else
        the conversation with the failed turn's messages kept."""
        new = self.input["new_messages"]
        options = self.state.history_options or [self.state.history]
        self.state.history_options = None
        declared = {p.name for p in self.scenario.providers}  # a call on any other is charged in run()
        calls = [c for c in self.record.contributes() if c.provider in declared]
        shown = [c.request["conversation_history"] for c in calls if self.scenario.provider(c.provider).compactor]
        counted = calls[0].request["history_tokens"] if calls else None
        chosen = next((o for o in options if o + new in shown), None)
        if chosen is None:  # (an empty conversation is a choice too: never `or` it away)
            # Those the first history_tokens fits; of them, the one the turn ends with when nothing rewrote it
            # (a conversation whose dropped message counted nothing fits both ways).
            fitting = [o for o in options if counted in history_counts(o + new, self.model.count)] or options[:1]
            chosen = next((o for o in fitting if o + new == (self.result or {}).get("history")), fitting[0])
        self.base_history = chosen  # what this turn's messages were added to: a failed turn may go back to it
        return chosen + new

    def at(self, call: CallRecord) -> str:
        return f"{self.where}, {call.provider}"

    # -- order and requests --

    def check_order(self, calls: list[CallRecord], names: list[str]) -> None:
        positions = [names.index(c.provider) for c in calls]
        runs = [p for i, p in enumerate(positions) if i == 0 or p != positions[i - 1]]
        in_order = runs == sorted(runs) and len(runs) == len(set(runs))
        seen = [c.provider for i, c in enumerate(calls) if i == 0 or c.provider != calls[i - 1].provider]
        if len(set(seen)) < 2:
            return  # one provider or none: no order to judge
        self.add("K-DECLARATION-ORDER", in_order, f"providers were called in the order {seen}; declared {names}")
        if not in_order and dynamic_before_static([p.stability for p in self.scenario.providers]):
            self.add("KC-NO-REORDER", False, f"called {seen} where the declaration is {names}: "
                                             "the stability lint must not reorder providers")

    def check_request(self, call: CallRecord) -> None:
        request, fake, where = call.request, self.scenario.provider(call.provider), self.at(call)
        budget = request["token_budget"]
        caps = sum(p.cap for p in self.scenario.providers)
        # R-BUDGET-SMALLER-MODEL: less than the cap is allowed where the caps do not fit the turn's model, or
        # where the turn runs on a model with a smaller context than the primary's.
        smaller = self.model.context_window < self.scenario.model(self.scenario.primary_model).context_window
        if caps <= self.model.effective_ceiling and not smaller:
            self.add("K-TOKEN-BUDGET", budget == fake.cap,
                     f"token_budget {budget}, but its resolved cap is {fake.cap}", where)
        else:
            self.add("K-TOKEN-BUDGET", 0 <= budget <= fake.cap,
                     f"token_budget {budget} is outside 0..{fake.cap} (R-BUDGET-SMALLER-MODEL)", where)
        target = request.get("model_target")  # a message field: absent when the kernel left it unset
        if target is None:
            self.add("K-MODEL-TARGET", False, "the request has no model_target", where)
        else:
            self.add("K-MODEL-TARGET", (target["id"], target["context_window"]) == (self.model.id,
                                                                                  self.model.context_window),
                     f"model_target {target['id']}/{target['context_window']}, but the turn runs on "
                     f"{self.model.id}/{self.model.context_window}", where)
            self.add("K-EFFECTIVE-CEILING", target["effective_ceiling"] == self.model.effective_ceiling,
                     f"effective_ceiling {target['effective_ceiling']}, expected {self.model.effective_ceiling} "
                     f"(window less reserved output less system overhead)", where)
        wrong = [k for k in ("session_id", "parent_session_id", "turn_id", "files_touched", "working_directory")
                 if request[k] != self.input[k]]
        self.add("K-TURN-FIELDS", not wrong, "differs from the turn: " + ", ".join(
            f"{k} {request[k]!r} (turn has {self.input[k]!r})" for k in wrong), where)
        self.check_history_fields(request, fake.compactor, where)
        if self.state.last_totals is not None:
            reported, totals = request["assembled_tokens_last_turn"], self.state.last_totals
            by_formula = reported in self.state.last_by_formula and reported not in totals
            self.add("K-COUNT-RESOLUTION" if by_formula else "K-ASSEMBLED-LAST-TURN", reported in totals,
                     f"assembled_tokens_last_turn {reported}, but the previous turn assembled "
                     f"{' or '.join(map(str, sorted(totals)))}"
                     + (", as its model's tokenizer counts: that is the fallback formula's count" if by_formula else
                        " (R-ASSEMBLED-TOKENS)"), where)

    def check_history_fields(self, request: dict, compactor: bool, where: str) -> None:
        shown = request["conversation_history"]
        counts = [self.history_figures(h) for h in self.histories]
        # A rewrite the kernel applied though it may not is charged once, to the rule it broke; the
        # requests after it are then judged by the history the kernel actually keeps.
        misapplied = [j for j in self.judgments if j.rejected_history is not None]
        if compactor:
            matched = [i for i, h in enumerate(self.histories) if h == shown]
            wrong = next((j for j in misapplied if j.rejected_history == shown), None)
            if matched:
                self.add("K-HISTORY-TO-COMPACTOR", True)
                counts = [counts[matched[0]]]
            elif wrong is not None:
                self.add(wrong.rejected_history_blame, False, f"{wrong.provider}'s rewritten_history replaced the "
                         f"conversation though it may not: {wrong.why}", where)
                self.histories.append(shown)
                counts = [history_counts(shown, self.model.count)]
            elif self.state.before_rewrite is not None and shown == self.state.before_rewrite + self.input["new_messages"]:
                self.add("K-APPLY-REWRITTEN-HISTORY", False, "the compactor was shown the history from before "
                         "an accepted rewrite", where)
            else:
                self.add("K-HISTORY-TO-COMPACTOR", False, f"the compactor was shown {len(shown)} message(s), "
                         f"not the session's {len(self.history)}", where)
        else:
            self.add("K-HISTORY-NOT-TO-OTHERS", shown == [],
                     f"a non-compactor was sent {len(shown)} history message(s)", where)
        figures = sorted(set().union(*counts))
        if request["history_tokens"] in figures:
            self.add("K-HISTORY-TOKENS", True)
            return
        wrong = next((j for j in misapplied
                      if request["history_tokens"] in history_counts(j.rejected_history, self.model.count)), None)
        if wrong is not None:
            self.add(wrong.rejected_history_blame, False, f"history_tokens counts {wrong.provider}'s rewritten_history, "
                     f"which may not replace the conversation: {wrong.why}", where)
            return
        if self.model.exact and any(request["history_tokens"] in history_counts(h, tokens.fallback_count)
                                           for h in self.histories):
            self.add("K-COUNT-RESOLUTION", False, f"history_tokens {request['history_tokens']} is the fallback "
                     f"formula's count; {self.model.id} has a tokenizer, which counts {' or '.join(map(str, figures))}",
                     where)
            return
        other = next((m for m in self.scenario.models if m is not self.model and m.exact and
                      any(request["history_tokens"] in history_counts(h, m.count) for h in self.histories)), None)
        if other is not None and other.tokenizer != self.model.tokenizer:
            self.add("K-COUNT-RESOLUTION", False, f"history_tokens {request['history_tokens']} is {other.id}'s "
                     f"tokenizer's count; the turn runs on {self.model.id}, whose count is "
                     f"{' or '.join(map(str, figures))}", where)
            return
        if any(request["history_tokens"] in history_counts(_non_text_as_text(h, form), self.model.count)
               for h in self.histories for form in (json.dumps, _strings_in)
               if _non_text_as_text(h, form) != h):
            self.add("K-COUNT-NON-TEXT-ZERO", False, f"history_tokens {request['history_tokens']} counts the "
                     f"conversation's non-text blocks, which add nothing; it counts {' or '.join(map(str, figures))}",
                     where)
            return
        self.add("K-HISTORY-TOKENS", False, f"history_tokens {request['history_tokens']}, but the conversation counts "
                 f"{' or '.join(map(str, figures))} (R-HISTORY-TOKENS)", where)

    # -- judging replies --

    def judge(self, call: CallRecord) -> Judgment:
        fake = self.scenario.provider(call.provider)
        prior = call.request["prior_sections"]
        if call.hung:
            judgment = judge_failure(fake.name, prior, {"code": "DEADLINE_EXCEEDED"}, self.model)
            if self.real_transport:
                judgment.blame = "K-TIMEOUT"
                waited = call.hang.abandoned_after
                self.add("K-TIMEOUT", waited is not None, "the kernel never gave up on a Contribute that did not "
                         "answer; the suite stopped waiting", self.at(call))
        elif call.crashed and self.launched_plugins:  # elsewhere the kernel sees a bare UNAVAILABLE, no crash
            judgment = judge_crash(fake.name, prior, self.model)
        elif call.error is not None:
            judgment = judge_failure(fake.name, prior, call.error, self.model, fake.compactor)
        elif not _readable(call.result):  # a reply that is no ContextContribution: a failure with no ContextError
            judgment = judge_failure(fake.name, prior, {"code": "UNREADABLE_REPLY"}, self.model, fake.compactor)
        else:
            judgment = judge_reply(fake, prior, call.result, call.request["token_budget"], self.model)
            if self.by_formula_too:
                judgment = either(judgment, judge_reply(fake, prior, call.result, call.request["token_budget"],
                                                        replace(self.model, tokenizer_down=True)),
                                  "the tokenizer answering at the kernel's deadline, counted by the formula")
        if call.late and not call.hung:  # answered at the kernel's deadline: it may have timed out instead
            judgment = either(judgment, judge_failure(fake.name, prior, {"code": "DEADLINE_EXCEEDED"}, self.model))
        if call.error and errors.category_of(call.error.get("context_error")) == "invalid_request":
            again = [c for c in self.record.contributes() if c is not call and c.provider == call.provider
                     and c.request == call.request]
            self.add("K-ERR-INVALID-REQUEST-NO-RETRY", not again,
                     f"the request it rejected as invalid was sent again unchanged {len(again)} time(s)", self.at(call))
        self.judgments.append(judgment)
        return judgment

    def resolve(self, call: CallRecord, judgment: Judgment, observed: list[dict]) -> None:
        """Compare the chain the kernel kept after `call` with what it may keep."""
        where = self.at(call)
        matching = [o for o in judgment.outcomes if o.matches(observed)]
        # Where several outcomes fit the chain, the one whose diagnostics were reported is the one taken; of
        # those, one whose effect on the history (a compactor's rewrite applied or not) the turn ends with.
        reported = [o for o in matching if all(self.reported(judgment.provider, n) for n in o.diagnostics)]
        outcome = next(iter(self.ending_with(reported) + reported + matching), None)
        if outcome is None:
            # What the kernel should have reported about a chain it got wrong is moot; the chain is the finding,
            # charged to what the judge says holding it breaks.
            for broken in judgment.broken(observed):
                why = "; ".join(filter(None, (judgment.why, broken.why)))
                self.add(broken.requirement, False, f"{why}; the chain it went on with (sent to the next provider, or returned) was {_brief(observed)}, "
                                                    f"expected {_brief_expected(judgment.outcomes)}", where)
            # The history is judged on its own: from the outcome whose rewrite (or none) the turn ends with.
            outcome = next(iter(self.ending_with(judgment.outcomes)), judgment.outcomes[0])
        else:
            evidence = outcome.evidenced_by
            if evidence is None or self.reported(judgment.provider, evidence):
                self.add(judgment.blame, True)
            for needed in outcome.diagnostics:
                self.check_diagnostic(judgment.provider, needed, where)
        if outcome.history is not None:
            self.history = outcome.history
            self.histories.append(outcome.history)
        # Outcomes the chain and the reports cannot tell apart may differ in the history they leave (a refused
        # reply, or one whose bad section alone was dropped and whose rewrite applied): a later compactor's
        # request is what shows which was taken, so it may be shown either.
        for other in reported or matching:
            if other.history is not None and other.history not in self.histories:
                self.histories.append(other.history)

    def ending_with(self, outcomes: list[Outcome]) -> list[Outcome]:
        """The outcomes whose effect on the history (a compactor's rewrite applied, or none) the turn ends with."""
        return [o for o in outcomes if (self.history if o.history is None else o.history) == self.result["history"]]

    def reported(self, provider: str, needed) -> bool:
        return any(d.get("provider") in (provider, *needed.names) and needed.category in (None, d.get("category"))
                   and needed.carried_by(d.get("message", "")) for d in self.result["diagnostics"])

    def check_diagnostic(self, provider: str, needed, where: str) -> None:
        mine = [d for d in self.result["diagnostics"] if d.get("provider") in (provider, *needed.names)]
        fitting = [d for d in mine if needed.category in (None, d.get("category"))]
        if not fitting:
            # Said nothing at all: silent. Said something, but not as this category: it misread the failure.
            requirement = "K-NO-SILENT-FALLBACK" if not mine and needed.requirement == "K-ERR-UNKNOWN-RAW-MESSAGE" \
                else (mine and needed.miscategorized) or needed.requirement
            seen = [d.get("category") for d in mine]
            self.add(requirement, False, f"no {needed.category + ' ' if needed.category else ''}diagnostic naming {provider} "
                                         f"(its diagnostics: {seen or 'none'})", where)
        elif not any(needed.carried_by(d.get("message", "")) for d in fitting):
            self.add(needed.requirement, False, f"the diagnostic for {provider} does not carry the provider's "
                                                f"message {' or '.join(map(repr, needed.message_contains))}", where)
        else:
            self.add(needed.requirement, True)

    def check_failed_turn(self, pending: tuple[CallRecord, Judgment] | None) -> None:
        error = self.result.get("error")
        message = expectations.strings_of(error)
        says_why = isinstance(error, dict) and any(isinstance(v, str) and v.strip() for v in error.values())
        self.add("K-TRANSFORM-ERROR-SURFACED", says_why, f"the turn failed without an error saying why: "
                                                         f"{json.dumps(error, ensure_ascii=False)}")
        if pending is None:
            self.add("K-FIRE-EACH-TURN", False, "the turn failed before any provider was called")
            return
        call, judgment = pending
        if not judgment.may_fail_turn:
            self.add(judgment.fail_blame, False, f"the turn failed after {call.provider}, which may not fail it: "
                                                 f"{judgment.why}", self.at(call))
        elif judgment.turn_error_contains:
            self.add("K-ERR-UNKNOWN-RAW-MESSAGE", any(m in message for m in judgment.turn_error_contains),
                     f"the turn error does not carry the provider's message {' or '.join(map(repr, judgment.turn_error_contains))}")

    # -- the prompt and the history --

    def check_prompt(self) -> None:
        """Each kept section's label, then each of its text blocks in order, inside the prompt in chain
        order, verbatim or escaped; how blocks are joined and boundaries drawn is the kernel's
        choice (R-PROMPT-RENDERING). Rejected text must not appear outside what was kept."""
        prompt, position, spans = self.result["prompt"], 0, []
        for section in self.result["sections"]:
            label = section["label"]
            # An unlabeled section kept as it is sits in a boundary of the kernel's own, with no label to look
            # for; its text is still looked for (R-MISSING-LABEL).
            if label.strip():
                found = prompt_text.find(prompt, label, position)
                if found is None:
                    self.add("K-PROMPT-BOUNDARIES", False, f"the section of {section['provider']} labelled "
                                                           f"{label!r} has no boundary carrying its label, in chain order")
                    return
                position = found[1]
                spans.append(found)
            for text in tokens.texts_of(section["content"]):
                found = prompt_text.find(prompt, text, position)
                if found is None:
                    # Elsewhere in the prompt whole: misplaced. A short text seen elsewhere proves nothing.
                    whole = len(text) >= _DISTINCT and prompt_text.find(prompt, text) is not None
                    self.add("K-PROMPT-BOUNDARIES" if whole else "K-NO-KERNEL-CUT", False,
                             f"the text {_clip(text)} of {section['provider']}'s section {label!r} "
                             + ("is not inside a boundary carrying its label, after the blocks before it"
                                if whole else "is not in the prompt whole"))
                    return
                position = found[1]
                spans.append(found)
        if spans:
            self.add("K-PROMPT-BOUNDARIES", True)
        gaps = [prompt[a:b] for a, b in _gaps(spans, len(prompt))]
        kept = [t for s in self.result["sections"] for t in (s["label"], *tokens.texts_of(s["content"]))]
        for judgment in self.judgments:
            for section in judgment.rejected:
                for text in tokens.texts_of(section["content"]):
                    # Outside every kept block, and not a part of what was kept (a boundary repeats its label).
                    if len(text) >= _DISTINCT and not any(text in k for k in kept) and \
                            any(prompt_text.find(gap, text) for gap in gaps):
                        self.add(judgment.blame, False, f"the prompt still holds the rejected text of "
                                                        f"{judgment.provider}: {_clip(text)}")
                        return

    def history_already_failed(self) -> bool:
        return any(isinstance(f, Finding) and not f.passed and f.requirement in _HISTORY_SEEN_IN_REQUESTS
                   for f in self.findings)

    def check_history(self) -> None:
        observed = self.result["history"]
        if observed == self.history:
            if self.history is not self.start_history:
                self.add("K-APPLY-REWRITTEN-HISTORY", True)
            return
        blame = next(((j.rejected_history_blame, f"{j.provider}'s rewritten_history replaced the conversation "
                       f"though it may not: {j.why}") for j in self.judgments
                      if j.rejected_history is not None and observed == j.rejected_history), None)
        if blame is None and self.history is self.start_history and self.history_already_failed():
            # No rewrite this turn, and its requests showed the kernel lost (or changed) messages and were charged
            # for it: its own report of the conversation only confirms that. The session is judged by that
            # conversation from here on, as one no rewrite made.
            self.history = self.start_history = observed
            return
        if blame is None and (self.history is not self.start_history or self.state.rewritten):
            blame = ("K-APPLY-REWRITTEN-HISTORY", f"the conversation after the turn has {len(observed)} message(s); "
                     f"the accepted rewrite has {len(self.history)}")
        if blame is None:
            self.findings.append(HarnessProblem(f"the history returned ({len(observed)} message(s)) is not the "
                                                f"session's conversation with this turn's new messages appended "
                                                f"({len(self.history)})", self.where))
            return
        self.add(blame[0], False, blame[1])
        # Reported once; from here on, judge the session by the conversation the kernel actually keeps.
        self.history, self.state.rewritten = observed, True


# What a request shows of the kernel's conversation: the history a compactor is sent, and its count.
_HISTORY_SEEN_IN_REQUESTS = frozenset({"K-HISTORY-TO-COMPACTOR", "K-HISTORY-TOKENS"})

# Characters a text needs before finding it somewhere in a prompt says where it came from: a shorter one may be
# part of the kernel's own boundaries, so it is neither charged as leaked nor as misplaced (R-PROMPT-RENDERING).
_DISTINCT = 8


def _gaps(spans: list[tuple[int, int]], end: int) -> list[tuple[int, int]]:
    """The stretches of the prompt outside every span (where the kept labels and blocks were found)."""
    gaps, at = [], 0
    for start, stop in sorted(spans):
        if start > at:
            gaps.append((at, start))
        at = max(at, stop)
    return gaps + ([(at, end)] if at < end else [])


def _clip(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _brief(chain: list[dict]) -> str:
    return "[" + ", ".join(f"{s['provider']}:{s['label']!r}" for s in chain) + "]"


def _brief_expected(outcomes: list[Outcome]) -> str:
    chains = (_brief([{**e.section, "label": "<a label of the kernel's>"} if e.relabel else e.section
                      for e in o.chain]) for o in outcomes)
    return " or ".join(dict.fromkeys(chains))  # outcomes that differ only in what they report read the same
