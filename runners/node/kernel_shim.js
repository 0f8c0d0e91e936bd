#!/usr/bin/env node
// A minimal kernel speaking ctxconf-kernel/1 over stdio (docs/kernel-protocol.md),
// in plain Node 20 with no packages: a template for a kernel shim in a language
// other than Python, and a kernel of its own that ctxconf certifies.
//
//   ctxconf kernel --stdio "node runners/node/kernel_shim.js"
//
// One JSON object per line each way. While an op runs, the shim calls back
// ({"cb": N, "call": ..., "provider": ..., "request": ...}) and waits for the
// suite's {"cb": N, "result"|"error"} before writing anything else.
"use strict";

const readline = require("node:readline");

// --- the channel: lines in, lines out, one callback at a time -------------------------

const lines = [];
let waiting = null; // the resolver of the read in progress
let closed = false;
const input = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
input.on("line", (line) => { if (waiting) { const w = waiting; waiting = null; w(line); } else lines.push(line); });
input.on("close", () => { closed = true; if (waiting) { const w = waiting; waiting = null; w(null); } });

function nextLine() {
  if (lines.length) return Promise.resolve(lines.shift());
  if (closed) return Promise.resolve(null);
  return new Promise((resolve) => { waiting = resolve; });
}

// Caps, windows and ceilings are int64 and held as BigInt: a Number is exact only up to 2^53. The suite writes
// int64 as JSON numbers, which JSON.parse would round past that: `parse` reads those as strings first. The
// shim writes a BigInt a Number holds as a number, a larger one as a string (the proto3 JSON mapping allows both).
const wire = (key, value) => (typeof value === "bigint" ? (Number.isSafeInteger(Number(value)) ? Number(value) : String(value)) : value);

// JSON.parse, with every integer of 16 digits or more (outside strings) read as a string of its digits.
function parse(line) {
  if (!/\d{16}/.test(line)) return JSON.parse(line);
  let out = "", inString = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (inString) {
      out += c;
      if (c === "\\") out += line[++i];
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') { inString = true; out += c; continue; }
    const digits = /^-?\d{16,}(?![.eE\d])/.exec(line.slice(i, i + 40));
    if (digits) { out += `"${digits[0]}"`; i += digits[0].length - 1; continue; }
    out += c;
  }
  return JSON.parse(out);
}

function send(message) {
  process.stdout.write(JSON.stringify(message, wire) + "\n");
}

class CallFailed extends Error {
  constructor(error) {
    super(`${error.code}: ${error.message || ""}`);
    this.error = error; // {code, message, context_error?, details?}
  }
}

let nextCb = 0;
async function call(name, provider, request) {
  nextCb += 1;
  const message = { cb: nextCb, call: name, request };
  if (provider !== null) message.provider = provider;
  send(message);
  const line = await nextLine();
  if (line === null) process.exit(0); // the suite went away
  const answer = parse(line);
  if (answer.error) throw new CallFailed(answer.error);
  return answer.result;
}

// --- wire forms: the suite writes canonical proto3 JSON; fill in what proto3 may omit --------

const int = (value) => Number(value || 0);
const int64 = (value) => BigInt(value || 0);
const isText = (block) => Object.keys(block).length === 1 && "text" in block;
const textsOf = (content) => content.filter((b) => "text" in b).map((b) => (b.text && b.text.text) || "");

function block(b) {
  return "text" in b ? { text: { text: (b.text && b.text.text) || "" } } : b;
}

function section(s) {
  return {
    provider: s.provider || "", label: s.label || "", content: (s.content || []).map(block),
    tokens: int(s.tokens), stability: s.stability || "STABILITY_UNSPECIFIED", truncated: Boolean(s.truncated),
  };
}

// Key order does not matter to the suite; compare sections by their sorted-key JSON.
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}
const same = (a, b) => canonical(a) === canonical(b);

// --- counting: the model's tokenizer when it has one, else the one fallback formula ---------

function fallback(content) {
  // One ceiling over the UTF-8 bytes of all text blocks together (R-FALLBACK-TOTAL).
  return Math.ceil(Buffer.byteLength(textsOf(content).join(""), "utf8") / 4);
}

async function tokenizer(content, model) {
  try {
    const reply = await call("CountTokens", null, { model_ref: { provider: model.provider, id: model.id }, content });
    return int(reply.count);
  } catch (e) {
    if (e instanceof CallFailed) return null;
    throw e;
  }
}

async function count(content, model) {
  if (model.count_tokens) {
    const exact = await tokenizer(content, model);
    if (exact !== null) return exact;
  }
  return fallback(content);
}

const CATEGORIES = ["source_unavailable", "budget_exceeded", "scope_violation", "invalid_request", "unknown"];
function categoryOf(contextError) {
  const name = String((contextError && contextError.category) || "");
  const short = name.replace(/^CONTEXT_ERROR_CATEGORY_/, "").toLowerCase();
  return name.startsWith("CONTEXT_ERROR_CATEGORY_") && CATEGORIES.includes(short) ? short : "unknown";
}

// --- the kernel --------------------------------------------------------------------------

const kernel = { models: {}, routing: [], providers: [], sessions: {} };

const ceiling = (m) => int64(m.context_window) - int64(m.reserved_output) - int64(m.system_overhead);
const cap = (p) => (p.override !== null && p.override !== undefined ? int64(p.override) : int64(p.capabilities.default_token_budget));
const least = (values) => values.reduce((a, b) => (b < a ? b : a));

async function load({ config }) {
  kernel.models = Object.fromEntries(config.models.map((m) => [m.id, m]));
  kernel.routing = [config.primary_model, ...(config.fallback_models || [])];
  kernel.sessions = {};
  kernel.providers = [];
  for (const entry of config.providers) { // capabilities, then configuration, in declaration order
    const reply = await call("GetCapabilities", entry.name, {});
    kernel.providers.push({ name: entry.name, capabilities: reply.capabilities || {}, override: entry.token_budget_override });
    await call("Configure", entry.name, { config: entry.config || {} });
  }
  const warnings = [];
  const total = kernel.providers.reduce((sum, p) => sum + cap(p), 0n);
  const ceilings = kernel.routing.filter((id) => kernel.models[id]).map((id) => ceiling(kernel.models[id]));
  if (ceilings.length && total > least(ceilings)) {
    warnings.push({ code: "budget_sum_exceeds_ceiling", message: `caps add up to ${total}, over ${least(ceilings)}` });
  }
  let dynamic = false;
  for (const p of kernel.providers) { // warn only: the order stays as declared
    dynamic = dynamic || p.capabilities.stability === "STABILITY_DYNAMIC";
    if (dynamic && p.capabilities.stability === "STABILITY_STATIC") {
      warnings.push({ code: "dynamic_before_static", message: `${p.name} (static) follows a dynamic provider` });
      break;
    }
  }
  return { warnings };
}

function diagnostic(provider, category, message, kind = "rejected") {
  return { kind, provider: provider.name, category, message };
}

async function total(sections, model) {
  let sum = 0;
  for (const s of sections) sum += await count(s.content, model);
  return sum;
}

async function recounted(sections, model) {
  const out = [];
  for (const s of sections) out.push({ ...s, tokens: await count(s.content, model) });
  return out;
}

// Sections that may enter the chain: text only and labelled, each judged whole.
function admissible(provider, sections, diagnostics) {
  return sections.filter((s) => {
    if (!s.content.every(isText)) {
      diagnostics.push(diagnostic(provider, "non_text_content", "a section holds a non-text block; dropped"));
      return false;
    }
    if (!s.label) {
      diagnostics.push(diagnostic(provider, "missing_label", "a section has no label; dropped"));
      return false;
    }
    return true;
  });
}

// The chain after one provider's reply, and the history it leaves.
async function accept(provider, chain, reply, budget, model, session, diagnostics) {
  const sections = (reply.sections || []).map(section);
  const rewrite = reply.rewritten_history || [];
  if (provider.capabilities.compactor) {
    const kept = admissible(provider, sections, diagnostics);
    if (await total(kept, model) > budget) { // the whole returned chain against its budget
      diagnostics.push(diagnostic(provider, "budget_exceeded", `the compactor's chain exceeds ${budget}; rejected`));
      return chain;
    }
    if (rewrite.length) session.history = rewrite;
    return recounted(kept, model);
  }
  const n = chain.length;
  const inScope = sections.length >= n && chain.every((s, i) => same(s, sections[i])) &&
    sections.slice(n).every((s) => s.provider === provider.name);
  if (!inScope || rewrite.length) { // touched what it does not own, or rewrote history without being a compactor
    diagnostics.push(diagnostic(provider, "scope_violation", "the reply went beyond its own sections; discarded"));
    return chain;
  }
  const own = admissible(provider, sections.slice(n), diagnostics);
  if (await total(own, model) > budget) { // the kernel's own count, never the stated figure
    diagnostics.push(diagnostic(provider, "budget_exceeded", `its sections exceed its budget of ${budget}; dropped`));
    return chain;
  }
  return chain.concat(await recounted(own, model));
}

// The shape a ContextContribution has: a list of sections, each with a string label and a list of blocks.
const readable = (reply) => Boolean(reply) && Array.isArray(reply.sections || []) &&
  (reply.sections || []).every((s) => s && typeof (s.label ?? "") === "string" && Array.isArray(s.content ?? []));

const historyContent = (history) => history.flatMap((m) => m.content || []);

async function assemble({ turn }) {
  const session = kernel.sessions[turn.session_id] || (kernel.sessions[turn.session_id] = { history: [], last: 0 });
  session.history = session.history.concat(turn.new_messages || []);
  const model = kernel.models[turn.model];
  const target = { id: model.id, context_window: int64(model.context_window), effective_ceiling: ceiling(model) };
  const diagnostics = [];
  let chain = []; // every firing starts empty
  let historyTokens = await count(historyContent(session.history), model);
  for (const provider of kernel.providers) {
    const budget = cap(provider);
    const request = {
      session_id: turn.session_id, parent_session_id: turn.parent_session_id || "", turn_id: turn.turn_id,
      files_touched: turn.files_touched || [], working_directory: turn.working_directory || "",
      token_budget: budget, model_target: target, prior_sections: chain,
      conversation_history: provider.capabilities.compactor ? session.history : [],
      history_tokens: historyTokens, assembled_tokens_last_turn: session.last,
    };
    let reply;
    try {
      reply = await call("Contribute", provider.name, request);
    } catch (e) {
      if (!(e instanceof CallFailed)) throw e;
      const ce = e.error.context_error;
      const said = (ce && ce.message) || e.error.message || "";
      diagnostics.push(diagnostic(provider, categoryOf(ce), `Contribute failed (${e.error.code}): ${said}`, "provider_failed"));
      continue; // isolated: the chain before it stands
    }
    if (!readable(reply)) { // not a ContextContribution: a failure with no ContextError, isolated visibly
      diagnostics.push(diagnostic(provider, "unknown", "the reply is no ContextContribution; ignored", "provider_failed"));
      continue;
    }
    const before = session.history;
    chain = await accept(provider, chain, reply, budget, model, session, diagnostics);
    if (session.history !== before) historyTokens = await count(historyContent(session.history), model);
  }
  session.last = await total(chain, model);
  const prompt = chain.map((s) => `<<< ${s.label} | ${s.provider} >>>\n${textsOf(s.content).join("\n")}\n<<< end ${s.label} >>>`)
    .join("\n\n");
  return { sections: chain, prompt, history: session.history, turn_failed: false, error: null, diagnostics };
}

async function countTokens({ request }) {
  const ref = request.model_ref || {};
  const model = kernel.models[ref.id || ""];
  const content = request.content || [];
  // The ref names a model provider and its model: under another provider it is no model we know.
  const sameProvider = model && (!ref.provider || ref.provider === (model.provider || ""));
  if (model && model.count_tokens && sameProvider) {
    const exact = await tokenizer(content, model);
    if (exact !== null) return { count: exact, exact: true };
  }
  return { count: fallback(content), exact: false };
}

const OPS = {
  hello: async () => ({
    implementation: { name: "ctxconf-node-kernel", version: "0.1.0", language: "javascript" },
    features: ["reload", "count_tokens"],
  }),
  load,
  assemble,
  count_tokens: countTokens,
  stop: async () => ({}),
};

async function main() {
  for (let line = await nextLine(); line !== null; line = await nextLine()) {
    if (!line.trim()) continue;
    const request = parse(line);
    const op = OPS[request.op];
    let reply;
    try {
      reply = op ? { result: await op(request) } : { error: { code: "UNIMPLEMENTED", message: `no op ${request.op}` } };
    } catch (e) { // report and keep serving: the suite decides what an error means
      reply = { error: { code: "INTERNAL", message: String((e && e.stack) || e) } };
    }
    send({ id: request.id, ...reply });
    if (request.op === "stop") break;
  }
  input.close(); // nothing else keeps the process alive: it exits once stdout is flushed
  process.stdin.destroy();
}

main();
