"""Machine-made mutation analysis of the bundled reference implementations.

    python -m conformance.commands.mutation [--target kernel|filereader|compactor|provider_base|plugin_host|all]...
                                          [--report-dir DIR] [--jobs N] [--resume] [--report-only] [--only ID]
                                          [--untried] [--carry-over]

The hand-written mutants (kernel_mutants.py, provider_mutants.py) prove that the
suite catches the bugs somebody thought of. This proves the other half: every
small change a tool can make to a reference is certified by ctxconf, and each
one the suite still certifies is a survivor a maintainer must explain
(docs/mutation/survivors.yaml): `equivalent`, a spec `freedom`, or an `escape`.
mutation_report.py writes docs/mutation/report.{md,json} from a run and that file.

Why cosmic-ray, and used as a library. Its operators are parso-based, exact
and deterministic: a mutant is (file, operator, occurrence), so it can be
rebuilt at will, and its comparison, arithmetic, unary, boolean, and/or,
number, break/continue, exception, decorator and zero-iteration operators are
the standard set. mutmut 3 needs a pytest suite driving the code (it
trampolines functions and records which tests reach them); our "test" is a
certification command, and its operators cannot be chosen one by one. We do
not use `cosmic-ray exec` itself: it writes each mutant over the file in the
work tree, runs one test command serially, and reads nothing but its exit
status. A mutant here needs one to four ctxconf runs depending on its role,
is classified from the JSON report (a SHOULD warning is not a kill), several
run at once without a second checkout, and the tree must never be left
mutated. So cosmic-ray builds the mutated source (`mutate_code`) and a child
process executes that source in place of the module (see `_child`), leaving
the file on disk untouched.

Three operators cosmic-ray lacks are ours, built on its `Operator` class:
DeleteStatement (a simple statement becomes `pass`; not docstrings, which do
nothing, nor imports, whose deletion only crashes), EmptyReturn (`return X`
becomes `return None`, and the empty value of the declared return type) and
ReplaceCodeString (a string literal that reads as a code or a name, such as a
category, a wire field or an enum, gets a suffix; prose messages are left
alone: the spec leaves their text free). cosmic-ray's VariableReplacer and
VariableInserter are left out: they draw random names, so their mutants are
not reproducible and would break the stable ids. Nothing inside a type
annotation is mutated (they are never evaluated, see `_in_annotation`), and a
mutation that does not compile is reported as such, not tried.

Every mutant is tried (no sampling), against its role, cheapest check first:
the golden vectors (`--no-properties`), and the full `--profile ci`
certification only if they pass. provider_base.py mutants face both
providers. plugin_host.py mutants run with `--launch-plugins`, which costs
~80 s a certification and 33 s for the golden vectors alone (measured on an
idle machine; ~140 mutants at that price would take hours): they face the
vectors under kernel/plugins/ (handshake, callback channel, a plugin crashing;
1.4 s), then those under kernel/errors/ and kernel/counting/ (every failure a
plugin's gRPC status maps to, the Contribute deadline, CountTokens over the
callback channel; ~30 s, mostly waiting out deadlines). The other vectors and
the generated scenarios relay through the same route() those exercise, and
would only repeat them at a minute apiece. The kernel.py lines that glue the
plugin mode in face those two stages as well (PLUGIN_GLUE).

Children run under `nice -n 10` (the machine is shared), in their own process
group with a memory cap, and are killed at a timeout (10x the unmutated run, at
least 120 s): an infinite loop is "timed out", not a stall; --resume tries a
timed-out mutant again.
"""

from __future__ import annotations

import argparse
import builtins
import difflib
import hashlib
import importlib
import importlib.util
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import parso
from cosmic_ray.operators.operator import Example, Operator

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "conformance" / "reference"
MANIFESTS = REPO / "examples" / "manifests"
DEFAULT_REPORT_DIR = REPO / "docs" / "mutation"
DEFAULT_WORK_DIR = Path(tempfile.gettempdir()) / "ctxconf-mutation"
INCOMPETENT_EXIT = 97  # the child's exit code when the mutated module does not import

# --- the roles a reference is certified in ----------------------------------------------

KERNEL = ["kernel"]
FILEREADER = ["provider"]
COMPACTOR = ["provider", "--python", "conformance.reference.compactor:create",
             "--manifest", str(MANIFESTS / "compactor.yaml")]
PLUGINS = ["kernel", "--launch-plugins"]


@dataclass(frozen=True)
class Stage:
    """One ctxconf run. `full` runs have a verdict, which must be conformant. A stage with `when`
    applies only to the mutants whose "function: source line" matches it."""
    role: str
    args: tuple[str, ...]
    full: bool
    when: str = ""


def golden(role: str, base: list[str]) -> Stage:
    return Stage(role, (*base, "--no-properties"), False)


def certified(role: str, base: list[str]) -> Stage:
    return Stage(role, (*base, "--profile", "ci"), True)


# kernel.py also holds the glue of the plugin-launching mode (load and stop close and launch the fleet,
# every op routes its calls through it), which only --launch-plugins exercises: a mutant of a line that
# touches it, or of a function of it, faces the plugin stages too, and only those, at ~40 s a mutant.
PLUGIN_GLUE = r"(?i)plugin|fleet|routed|upstream|command|hook_timeout"  # matched against "function: line"
PLUGIN_STAGES = (Stage("plugins", (*PLUGINS, "-k", "kernel/plugins/"), False),
                 Stage("plugins", (*PLUGINS, "-k", "kernel/errors/", "-k", "kernel/counting/"), False))

# Target -> (file, stages in order). A mutant stops at the first stage that kills it.
TARGETS: dict[str, tuple[str, tuple[Stage, ...]]] = {
    "kernel": ("kernel.py", (golden("kernel", KERNEL), certified("kernel", KERNEL),
                             *(Stage(s.role, s.args, s.full, PLUGIN_GLUE) for s in PLUGIN_STAGES))),
    "filereader": ("filereader.py", (golden("filereader", FILEREADER), certified("filereader", FILEREADER))),
    "compactor": ("compactor.py", (golden("compactor", COMPACTOR), certified("compactor", COMPACTOR))),
    "provider_base": ("provider_base.py", (golden("filereader", FILEREADER), golden("compactor", COMPACTOR),
                                           certified("filereader", FILEREADER), certified("compactor", COMPACTOR))),
    "plugin_host": ("plugin_host.py", PLUGIN_STAGES),
}


# --- operators of our own -----------------------------------------------------------------

def _is_bare_string(node) -> bool:
    """A statement that is only a string literal: a docstring, which does nothing."""
    return node.type in ("string", "strings")


class DeleteStatement(Operator):
    """A simple statement (assignment, call, raise, continue...) becomes `pass`."""

    SKIPPED = {"import_from", "import_name", "return_stmt"}  # returns: EmptyReturn's

    def mutation_positions(self, node):
        if node.type == "simple_stmt":
            first = node.children[0]
            if not _is_bare_string(first) and first.type not in self.SKIPPED and first.get_code().strip() != "pass":
                yield (node.start_pos, node.end_pos)

    def mutate(self, node, index):
        keyword = parso.python.tree.Keyword("pass", node.start_pos, prefix=node.get_first_leaf().prefix)
        tail = [node.children[-1]] if node.children[-1].type == "newline" else []
        node.children = [keyword, *tail]
        return node

    @classmethod
    def examples(cls):
        return (Example("x = 1\n", "pass\n"),)


# The empty value of a declared return type's top-level alternative.
EMPTY = {"list": "[]", "dict": "{}", "str": '""', "int": "0", "float": "0.0", "bool": "False", "tuple": "()",
         "set": "set()"}


def _empties(return_stmt) -> list[str]:
    """None, then the empty value of each type the function declares it returns, but what it returns already."""
    values = ["None"]
    function = return_stmt.search_ancestor("funcdef")
    if function is not None and function.children[3].type == "operator" and function.children[3].value == "->":
        annotation = function.children[4].get_code()
        depth, alternatives, current = 0, [], ""
        for char in annotation:  # split on the | outside brackets
            depth += {"[": 1, "]": -1}.get(char, 0)
            if char == "|" and depth == 0:
                alternatives.append(current)
                current = ""
            else:
                current += char
        alternatives.append(current)
        for alternative in alternatives:
            head = alternative.strip().split("[")[0]
            if head in EMPTY and EMPTY[head] not in values:
                values.append(EMPTY[head])
    returned = return_stmt.children[1].get_code().strip()
    return [value for value in values if value != returned]


class EmptyReturn(Operator):
    """`return X` becomes `return None`, and `return <empty value of the declared type>`."""

    def mutation_positions(self, node):
        if node.type == "return_stmt" and len(node.children) == 2:
            for _ in _empties(node):
                yield (node.start_pos, node.end_pos)

    def mutate(self, node, index):
        value = _empties(node)[index]
        node.children[1] = parso.python.tree.Name(value, node.children[1].start_pos, prefix=" ")
        return node

    @classmethod
    def examples(cls):
        return (Example("def f() -> list:\n    return [1]\n", "def f() -> list:\n    return None\n"),)


_CODE = re.compile(r"""([rbu]?)(['"])([A-Za-z_][A-Za-z0-9_.\-]*)\2""")


class ReplaceCodeString(Operator):
    """A string literal that reads as a code or a name (no spaces) gets a suffix."""

    def mutation_positions(self, node):
        if node.type == "string" and _CODE.fullmatch(node.value) and node.parent.type != "simple_stmt":
            yield (node.start_pos, node.end_pos)

    def mutate(self, node, index):
        prefix, quote, text = _CODE.fullmatch(node.value).groups()
        node.value = f"{prefix}{quote}{text}_mutated{quote}"
        return node

    @classmethod
    def examples(cls):
        return (Example('x = "budget_exceeded"', 'x = "budget_exceeded_mutated"'),)


def operators() -> dict[str, Operator]:
    """Name -> instance: cosmic-ray's deterministic core operators, then ours."""
    from cosmic_ray.plugins import get_operator, operator_names  # loads cosmic-ray's plugin registry: slow
    chosen = {name.split("/", 1)[1]: get_operator(name)() for name in operator_names()
              if name.startswith("core/") and "Variable" not in name}
    return chosen | {"DeleteStatement": DeleteStatement(), "EmptyReturn": EmptyReturn(),
                     "ReplaceCodeString": ReplaceCodeString()}


# --- mutants ----------------------------------------------------------------------------------

@dataclass
class Mutant:
    id: str          # file:line:operator#k, k counting that operator's mutants on that line: stable across runs
    target: str
    file: str
    line: int
    operator: str
    occurrence: int  # cosmic-ray's, over the whole file, for rebuilding the mutant
    source_line: str
    function: str = ""  # the innermost def the line belongs to (its decorators included)
    diff: str = ""
    code: str = field(repr=False, default="")

    def build(self, op: Operator) -> bool:
        """The mutated source and its one-line diff; False when it does not compile (one of cosmic-ray's
        operators applied where Python has no such operator: `{**d}` becomes `{+*d}`), which is no program
        and so no mutant."""
        from cosmic_ray.mutating import mutate_code
        source = (REFERENCE / self.file).read_text(encoding="utf-8")
        self.code = mutate_code(source, op, self.occurrence)
        self.diff = _one_line_diff(source, self.code)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # `x is 0`, an operator's doing, is still a program
                compile(self.code, self.file, "exec")
        except SyntaxError:
            return False
        return True


def _one_line_diff(original: str, mutated: str) -> str:
    a, b = original.splitlines(), mutated.splitlines()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            before = " ⏎ ".join(line.strip() for line in a[i1:i2] if line.strip())
            after = " ⏎ ".join(line.strip() for line in b[j1:j2] if line.strip())
            shorten = lambda s: s if len(s) <= 150 else s[:147] + "..."
            return f"{shorten(before)}  →  {shorten(after) or '(deleted)'}"
    return "(no change)"


def _in_annotation(node) -> bool:
    """Whether the node is part of a type annotation. Every reference has `from __future__ import
    annotations`, so annotations are never evaluated and each mutant of one (cosmic-ray turns the `|` of
    `dict | None` into ten other operators) would be equivalent by construction, at a full certification
    apiece: they are not generated."""
    while node.parent is not None:
        parent, siblings = node.parent, node.parent.children
        before = siblings[siblings.index(node) - 1] if siblings.index(node) else None
        if before is not None and before.type == "operator" and (
                (before.value == "->" and parent.type == "funcdef")
                or (before.value == ":" and parent.type in ("annassign", "param", "tfpdef"))):
            return True
        node = parent
    return False


def mutants_of(target: str, ops: dict[str, Operator]) -> list[Mutant]:
    """Every mutant of the target's file, found without building it (building one parses the file)."""
    from cosmic_ray.ast import ast_nodes, get_ast
    file = TARGETS[target][0]
    source = (REFERENCE / file).read_text(encoding="utf-8")
    lines = source.splitlines()
    found: list[Mutant] = []
    per_line: dict[tuple[int, str], int] = {}
    nodes = list(ast_nodes(get_ast(source)))
    function_of: dict[int, str] = {}
    for node in nodes:  # preorder, so an inner def overwrites the lines of the one around it
        if node.type == "funcdef":
            start = node.parent.start_pos[0] if node.parent.type == "decorated" else node.start_pos[0]
            function_of.update({n: node.name.value for n in range(start, node.end_pos[0] + 1)})
    for name, op in ops.items():
        occurrence = 0
        for node in nodes:
            for (line, _), _ in op.mutation_positions(node):
                occurrence += 1  # cosmic-ray counts every position, generated or not
                if _in_annotation(node):
                    continue
                k = per_line.get((line, name), 0)
                per_line[(line, name)] = k + 1
                found.append(Mutant(f"{file}:{line}:{name}#{k}", target, file, line, name, occurrence - 1,
                                    lines[line - 1].strip(), function_of.get(line, "")))
    return sorted(found, key=lambda m: (m.line, m.operator, m.id))


# --- running one certification ------------------------------------------------------------------

@dataclass
class Outcome:
    status: str                  # killed, warned-only, survived, timed-out, incompetent, uncompilable
    by: list[str] = field(default_factory=list)   # what killed it, or the new SHOULD warnings
    stage: str = ""
    seconds: float = 0.0


def _limits() -> None:
    """In the child: its own process group (a timeout kills the plugins it launched too) and a memory cap,
    since `"x" * 10**9` is one arithmetic mutant away."""
    os.setsid()
    cap = 6 * 2**30
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def run_stage(stage: Stage, module: str | None, code_path: Path | None, work: Path, timeout: float) -> dict:
    """One nice'd child certification; returns {rc, report, seconds, output} or {timeout: True}."""
    work.mkdir(parents=True, exist_ok=True)
    report = work / "report.json"
    report.unlink(missing_ok=True)
    argv = ["nice", "-n", "10", sys.executable, "-m", "conformance.commands.mutation", "--child",
            module or "-", str(code_path or "-"), "--", *stage.args, "--report", str(report),
            "--counterexamples", str(work / "counterexamples")]
    env = {**os.environ, "TMPDIR": str(work), "PYTHONDONTWRITEBYTECODE": "1"}
    started = time.monotonic()
    process = subprocess.Popen(argv, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               preexec_fn=_limits)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return {"timeout": True, "seconds": time.monotonic() - started}
    seconds = time.monotonic() - started
    data = None
    if report.exists():
        try:
            data = json.loads(report.read_text(encoding="utf-8"))
        except ValueError:
            data = None
    return {"rc": process.returncode, "report": data, "seconds": seconds,
            "output": output.decode("utf-8", "replace")[-2000:]}


def should_warnings(report: dict) -> set[str]:
    return {r["id"] for r in report["requirements"] if r["level"] == "SHOULD" and r["status"] in ("fail", "error")}


def verdict_of(stage: Stage, result: dict, baseline_should: set[str]) -> Outcome:
    """Killed, warned-only or survived, from one stage's exit status and report."""
    if result.get("timeout"):
        return Outcome("timed-out", [], stage.role, result["seconds"])
    if result["rc"] == INCOMPETENT_EXIT:
        return Outcome("incompetent", [result["output"].strip().splitlines()[-1][:200]], stage.role,
                       result["seconds"])
    report = result["report"]
    if report is None:
        last = (result["output"].strip().splitlines() or ["(no output)"])[-1]
        return Outcome("killed", [f"no report (exit {result['rc']}): {last[:160]}"], stage.role, result["seconds"])
    broken = [r["id"] for r in report["requirements"]
              if r["level"] in ("MUST", "MUST NOT") and r["status"] in ("fail", "error")]
    broken += [f"errored case {case}" for case in report["summary"].get("errored_cases", [])]
    if stage.full and report["verdict"] != "conformant":
        broken.append(f"verdict: {report['verdict']}")
    if result["rc"] != 0 and not broken:
        broken.append(f"exit {result['rc']}")
    if broken:
        return Outcome("killed", broken, stage.role, result["seconds"])
    new = sorted(should_warnings(report) - baseline_should)
    return Outcome("warned-only" if new else "survived", new, stage.role, result["seconds"])


class Runner:
    """Tries mutants; holds the unmutated baseline every stage is compared with."""

    def __init__(self, work: Path, jobs: int, ops: dict[str, Operator]):
        self.work, self.jobs, self.ops = work, jobs, ops
        self.baseline: dict[Stage, tuple[set[str], float]] = {}
        self.lock = threading.Lock()

    def baseline_of(self, stage: Stage) -> tuple[set[str], float]:
        """The unmutated references must pass the stage; their SHOULD warnings and time are the yardstick.
        Measured when a mutant first reaches the stage, so that a run whose mutants all die early never
        pays for the full certifications."""
        with self.lock:
            if stage not in self.baseline:
                result = run_stage(stage, None, None, self.work / "baseline", timeout=600)
                outcome = verdict_of(stage, result, set())
                if outcome.status in ("killed", "timed-out", "incompetent"):
                    raise SystemExit(f"the unmutated reference fails {' '.join(stage.args)}: {outcome.by}")
                self.baseline[stage] = (should_warnings(result["report"]), result["seconds"])
                print(f"baseline {' '.join(stage.args)}: {result['seconds']:.1f} s, "
                      f"SHOULD warnings {sorted(self.baseline[stage][0]) or 'none'}", file=sys.stderr)
            return self.baseline[stage]

    def timeout(self, stage: Stage) -> float:
        # Generous: on the shared machine, nice'd and six at a time, a 7 s certification was seen to take over
        # 30 s, and a false timeout hides a survivor. An infinite loop is rare enough to pay two minutes for.
        return max(120.0, 10 * self.baseline_of(stage)[1])

    def try_mutant(self, mutant: Mutant, slot: int) -> Outcome:
        if not mutant.build(self.ops[mutant.operator]):
            return Outcome("uncompilable")
        module = "conformance.reference." + mutant.file.removesuffix(".py")
        work = self.work / f"slot{slot}"
        work.mkdir(parents=True, exist_ok=True)
        code_path = work / "mutant.py"
        code_path.write_text(mutant.code, encoding="utf-8")
        total, warned = 0.0, set()
        for stage in stages_for(mutant):
            outcome = verdict_of(stage, run_stage(stage, module, code_path, work / "run", self.timeout(stage)),
                                 self.baseline_of(stage)[0])
            total += outcome.seconds
            if outcome.status in ("killed", "timed-out", "incompetent"):
                outcome.seconds = total
                return outcome
            warned |= set(outcome.by)
        return Outcome("warned-only" if warned else "survived", sorted(warned), "", total)

    def run(self, mutants: list[Mutant], done: dict[str, dict], log: Path) -> dict[str, dict]:
        """Every mutant not already in `done` (a resumed run), two at a time; each result appended to `log`."""
        todo = [m for m in mutants if not _still_valid(done.get(m.id), m)]
        slots = list(range(self.jobs))
        started, finished = time.monotonic(), 0

        def one(mutant: Mutant) -> tuple[Mutant, Outcome]:
            slot = slots.pop()
            try:
                return mutant, self.try_mutant(mutant, slot)
            finally:
                slots.append(slot)

        with ThreadPoolExecutor(self.jobs) as pool, log.open("a", encoding="utf-8") as out:
            for mutant, outcome in pool.map(one, todo):
                finished += 1
                record = result_record(mutant, outcome)
                done[mutant.id] = record
                out.write(json.dumps(record) + "\n")
                out.flush()
                if finished % 25 == 0 or finished == len(todo):
                    print(f"  {finished}/{len(todo)} mutants, {time.monotonic() - started:.0f} s", file=sys.stderr)
        return done


def stages_for(mutant: Mutant) -> list[Stage]:
    where = f"{mutant.function}: {mutant.source_line}"
    return [s for s in TARGETS[mutant.target][1] if not s.when or re.search(s.when, where)]


def _signature(mutant: Mutant) -> list[str]:
    return [" ".join(s.args) for s in stages_for(mutant)]


def _still_valid(record: dict | None, mutant: Mutant) -> bool:
    """Whether a resumed run may keep a result: the same mutant of the same file, and either killed (a stage
    added later cannot revive it) or, but for a timeout, taken through the stages it faces now."""
    if record is None or record.get("hash") != _hash(mutant):
        return False
    faced = record.get("stages", [" ".join(s.args) for s in TARGETS[mutant.target][1] if not s.when])
    if record["status"] == "timed-out":
        return False  # tried again: it may have been the machine's load, not the mutant
    return record["status"] in ("killed", "incompetent", "uncompilable") or faced == _signature(mutant)


def _hash(mutant: Mutant) -> str:
    """What a resumed run's result was for: this mutant of this version of the file."""
    source = (REFERENCE / mutant.file).read_bytes()
    return hashlib.sha256(source + f"{mutant.operator}#{mutant.occurrence}".encode()).hexdigest()[:16]


def result_record(mutant: Mutant, outcome: Outcome) -> dict:
    record = {k: v for k, v in asdict(mutant).items() if k != "code"}
    return record | {"status": outcome.status, "by": outcome.by[:4], "stage": outcome.stage,
                     "seconds": round(outcome.seconds, 2), "hash": _hash(mutant), "stages": _signature(mutant)}


# --- carrying results over to a changed file ----------------------------------------------------------

_ID = re.compile(r"\b[a-z_]+\.py:\d+:\w+#\d+\b")
STALE_PREFIX = "stale_"  # joined to the file name, so that _ID reads another file's id, never this file's


def carry_over(target: str, ops: dict[str, Operator], report_dir: Path) -> list[str]:
    """After an edit of the target's file moved its lines: each result in report.json, and each key of
    survivors.yaml (with the ids its prose names), goes to the current mutant of the same operator and the
    same one-line diff (the k-th such mutant for the k-th such record). A result none matches (its line's text
    changed) is dropped, so that a run tries that mutant again; the new ids still untried are returned."""
    report_path, survivors_path = report_dir / "report.json", report_dir / "survivors.yaml"
    report = json.loads(report_path.read_text(encoding="utf-8"))
    current: dict[tuple[str, str], list[Mutant]] = {}
    for mutant in mutants_of(target, ops):
        mutant.build(ops[mutant.operator])
        current.setdefault((mutant.operator, mutant.diff), []).append(mutant)
    renamed, kept = {}, []
    for record in report["mutants"]:
        if record["target"] != target:
            kept.append(record)
            continue
        matches = current.get((record["operator"], record["diff"]), [])
        if matches:
            mutant = matches.pop(0)
            renamed[record["id"]] = mutant.id
            kept.append(record | {"id": mutant.id, "line": mutant.line, "occurrence": mutant.occurrence,
                                  "function": mutant.function, "stages": _signature(mutant)}
                        | ({"source_line": mutant.source_line} if "source_line" in record else {}))
    report["mutants"] = kept
    report_path.write_text(json.dumps(report), encoding="utf-8")  # mutation_report.write lays it out again
    file_name = TARGETS[target][0]

    def moved(found: re.Match) -> str:
        # An id of this file no result moved to was classified for a line whose text has changed: the id may now
        # name another mutant, which must not inherit the classification. Prefixed, it names none, and the
        # report lists it among the stale classifications for a second look.
        old_id = found.group(0)
        if old_id in renamed or not old_id.startswith(f"{file_name}:"):
            return renamed.get(old_id, old_id)
        return f"{STALE_PREFIX}{old_id}"

    text = survivors_path.read_text(encoding="utf-8")
    survivors_path.write_text(_ID.sub(moved, text), encoding="utf-8")
    tried = {record["id"] for record in kept}
    return [m.id for ms in current.values() for m in ms if m.id not in tried]


def untried(target: str, ops: dict[str, Operator], report_dir: Path) -> list[str]:
    """The target's current mutants report.json holds no result for."""
    report = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    tried = {record["id"] for record in report["mutants"] if record["target"] == target}
    return [m.id for m in mutants_of(target, ops) if m.id not in tried]


# --- the child: a ctxconf run with the mutated module in place ---------------------------------------

def _child(module: str, code_path: str, ctxconf_args: list[str]) -> int:
    """Executes the mutated source as `module` before ctxconf imports it, so the certification, in this
    process, reaches the mutant; the file on disk is never written."""
    if module != "-":
        from cosmic_ray.exceptions import CosmicRayTestingException
        builtins.CosmicRayTestingException = CosmicRayTestingException  # what ExceptionReplacer's mutants catch
        original = REPO / "conformance" / "reference" / (module.rsplit(".", 1)[1] + ".py")
        try:
            spec = importlib.util.spec_from_file_location(module, original)
            mutated = importlib.util.module_from_spec(spec)
            sys.modules[module] = mutated  # a dataclass looks its module up while it is being built
            exec(compile(Path(code_path).read_text(encoding="utf-8"), str(original), "exec"), mutated.__dict__)
            parent, _, name = module.rpartition(".")
            setattr(importlib.import_module(parent), name, mutated)
        except BaseException as exc:  # noqa: BLE001 - any failure to import is the mutant's incompetence
            print(f"incompetent: {type(exc).__name__}: {exc}")
            return INCOMPETENT_EXIT
    from conformance.commands.cli import main
    return main(ctxconf_args)


# --- command line -------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        split = argv.index("--")
        return _child(argv[1], argv[2], argv[split + 1:])
    parser = argparse.ArgumentParser(prog="python -m conformance.commands.mutation", description=__doc__.split("\n")[0])
    parser.add_argument("--target", choices=[*TARGETS, "all"], action="append",
                        help="the reference file(s) to mutate; repeat it for several (default: all)")
    parser.add_argument("--report-dir", type=Path, default=DEFAULT_REPORT_DIR)
    parser.add_argument("--work-dir", type=Path, default=DEFAULT_WORK_DIR,
                        help="scratch space and the results log a --resume picks up (default: %(default)s)")
    parser.add_argument("--jobs", type=int, default=2, help="mutants tried at once (default: 2, the machine's cores)")
    parser.add_argument("--resume", action="store_true", help="keep the results already in the work dir's log")
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite report.md from report.json and survivors.yaml, running nothing")
    parser.add_argument("--only", metavar="ID", action="append", default=[],
                        help="try only the mutant(s) with this id (a test, or a second look at one)")
    parser.add_argument("--untried", action="store_true",
                        help="try only the mutants of the target(s) report.json holds no result for")
    parser.add_argument("--carry-over", action="store_true",
                        help="after an edit of a target's file: move its results in report.json and the keys of "
                             "survivors.yaml to the new ids (same operator, same diff), list what is left untried")
    args = parser.parse_args(argv)

    from conformance.commands import mutation_report
    if args.report_only:
        mutation_report.write(args.report_dir, None)
        return 0
    targets = list(TARGETS) if not args.target or "all" in args.target else list(dict.fromkeys(args.target))
    ops = operators()
    if args.carry_over:
        for target in targets:
            left = carry_over(target, ops, args.report_dir)
            print(f"{target}: {len(left)} mutant(s) without a result: {' '.join(left) or 'none'}", file=sys.stderr)
        mutation_report.write(args.report_dir, None)
        return 0
    if args.untried:
        args.only += [mutant_id for target in targets for mutant_id in untried(target, ops, args.report_dir)]
        if not args.only:
            print("every mutant has a result in report.json", file=sys.stderr)
            return 0
    mutants = [m for t in targets for m in mutants_of(t, ops)]
    if args.only:
        mutants = [m for m in mutants if m.id in args.only]
        if not mutants:
            parser.error(f"no mutant has the id(s) {args.only}")
    print(f"{len(mutants)} mutants of {', '.join(targets)}", file=sys.stderr)

    args.work_dir.mkdir(parents=True, exist_ok=True)
    log = args.work_dir / "results.jsonl"
    done: dict[str, dict] = {}
    if args.resume and log.exists():
        for line in log.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            done[record["id"]] = record
    elif log.exists():
        log.unlink()
    started = time.monotonic()
    runner = Runner(args.work_dir, args.jobs, ops)
    done = runner.run(mutants, done, log)
    wall = time.monotonic() - started
    results = [done[m.id] for m in mutants]
    for scratch in args.work_dir.glob("slot*"):
        shutil.rmtree(scratch, ignore_errors=True)
    mutation_report.write(args.report_dir, {"targets": targets, "results": results, "wall_seconds": round(wall),
                                            "only": bool(args.only),
                                            "command": "python -m conformance.commands.mutation " + " ".join(argv),
                                            "stages": {t: [" ".join(s.args).replace(f"{REPO}/", "") + (f"  (lines matching {s.when})"
                                                                                      if s.when else "")
                                                           for s in TARGETS[t][1]] for t in targets}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
