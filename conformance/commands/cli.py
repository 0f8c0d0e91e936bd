"""The ctxconf command line.

    ctxconf kernel [--python MOD:FACTORY | --stdio CMD] [--report FILE] ...
    ctxconf provider [--python MOD:FACTORY | --stdio CMD] --manifest FILE [--report FILE] ...
    ctxconf replay FILE [--at FIELD=VALUE] [--python ... | --stdio ...] [--manifest FILE]
    ctxconf selftest [--profile ci] [--shard K/N --report FILE]
    ctxconf requirements [--spec DIR [--accept]]
    ctxconf errata [--format md|json] [--out DIR|FILE] [--matrix REPORT]
    ctxconf explain ID
    ctxconf diff A.json B.json [--markdown]
    ctxconf matrix [FILE.yaml] [--html FILE] [--markdown FILE] [--json FILE] [--shard K/N]
    ctxconf merge SHARD.json... [--report FILE] [--html FILE] [--markdown FILE]

Exit codes: 0 conformant (or, for requirements, no gaps), 1 not conformant
(or gaps), 2 bad usage or bad input files.

The heavy modules (hypothesis, grpc, the self-test) are imported where they are
used, so that a run that needs none of them starts in half the time.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import threading
import time
from pathlib import Path

from conformance import __version__
from conformance.data import catalog as catalog_mod
from conformance.commands import certify
from conformance.bindings.base import KERNEL_PROTOCOL, PROVIDER_PROTOCOL, LaunchError
from conformance.properties import CASE_IDS, PROFILES, SHRINK_WORK
from conformance.reports import badge, console, json_report, junit, markdown
from conformance.reports.verdict import Exit
from conformance.data.schemas import InputError


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread like Ctrl-C's KeyboardInterrupt, so that every `with`
    unwinds the same way: launched implementations killed, the temporary directory removed."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


UNWIND_SIGNALS = [getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]


def _terminate(signum: int, frame) -> None:
    for other in UNWIND_SIGNALS:
        signal.signal(other, signal.SIG_IGN)  # a second signal must not cut the clean-up short
    raise Terminated(signum)


def main(argv: list[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # text a report may hold (a lone surrogate) is escaped, never a crash
        if callable(getattr(stream, "reconfigure", None)):
            stream.reconfigure(errors="backslashreplace")
    args = parse(argv)
    previous = {signum: signal.signal(signum, _terminate) for signum in UNWIND_SIGNALS
                if threading.current_thread() is threading.main_thread()}  # only the main thread may
    try:
        code = args.func(args)
        sys.stdout.flush()  # here, not at exit: a reader gone by then (| head) is a BrokenPipeError caught below
        return code
    except BrokenPipeError:  # the reader stopped (| head): nothing left to say to it, and no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return Exit.OK
    except (InputError, LaunchError) as exc:
        print(f"ctxconf: error: {exc}", file=sys.stderr)
        return Exit.USAGE
    except KeyboardInterrupt as exc:
        print("ctxconf: interrupted", file=sys.stderr)
        return 128 + getattr(exc, "signum", signal.SIGINT)  # 130, 143 (SIGTERM) or 129 (SIGHUP), as a shell says
    finally:
        for signum, handler in previous.items():
            if handler is not None:  # None: installed outside Python, cannot be put back
                signal.signal(signum, handler)


def parse(argv: list[str] | None) -> argparse.Namespace:
    """The command line as the CLI reads it (also the pytest plugin's options); a bad one exits 2."""
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # said by the command's own parser, with its usage, not the top-level one
        parser.commands[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ctxconf", description="Conformance suite for the pluggableharness "
                                     "context-provider protocol.")
    parser.add_argument("--version", action="version", version=f"ctxconf {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    parser.commands = commands.choices  # each command's own parser, by name, as add_parser fills it in

    kernel = commands.add_parser("kernel", help="certify a kernel's context-assemble loop",
                                 description="Certify a kernel. With no target, the bundled reference kernel.")
    _target_options(kernel, "kernel")
    _run_options(kernel)
    kernel.set_defaults(func=_kernel)

    provider = commands.add_parser("provider", help="certify a context-provider plugin",
                                   description="Certify a provider. With no target, the bundled reference file reader.")
    _target_options(provider, "provider")
    _run_options(provider)
    provider.set_defaults(func=_provider)

    replay = commands.add_parser("replay", help="run one vector file, such as a shrunk counterexample",
                                 description="Run one vector file against a kernel or provider (the role its id names).")
    replay.add_argument("file", type=Path, help="the vector file")
    replay.add_argument("--at", metavar="FIELD=VALUE", help="only this sub-run of the vector's sweep, named as its "
                        "findings name it, e.g. steps[1].contribute.token_budget=49 (any integer, not only the "
                        "swept ones)")
    _target_options(replay, "either")
    _run_options(replay, properties=False)
    replay.set_defaults(func=_replay)

    check = commands.add_parser("selftest", help="prove every check can fail, and fails nothing the spec allows",
                                description="Run every mutant, the reference implementations and every conforming "
                                "variant through the vectors and the property tests; print the kill matrix and the "
                                "false-failure matrix. Exits 1 if a mutant survives or fails a requirement it does "
                                "not declare, or if a reference implementation or a variant fails anything.")
    check.add_argument("--profile", choices=sorted(PROFILES), default="ci", help="hypothesis profile (default: ci)")
    check.add_argument("--seed", type=int, help="hypothesis seed (profiles other than ci)")
    check.add_argument("--jobs", type=_positive, help="worker processes (default: one per core)")
    check.add_argument("--report", type=Path, metavar="FILE", help="write both matrices as JSON")
    check.add_argument("-k", "--filter", default="", metavar="TEXT",
                       help="only the implementations whose name contains TEXT")
    check.add_argument("-v", "--verbose", action="store_true",
                       help="also print the scenario space the property tests draw from (docs/scenario-space.md)")
    _shard_option(check, "subjects", "--report")
    check.set_defaults(func=_selftest)

    explain = commands.add_parser("explain", help="explain a requirement, ruling or vector, with its evidence",
                                  description="Print what the suite knows about one requirement, ruling or vector "
                                  "id: its text and spec anchor (a link upstream), the rulings that bear on it, the "
                                  "vectors and checks that evidence it, the mutants and conforming variants that "
                                  "prove them, and a command that runs just those vectors.")
    explain.add_argument("id", help="e.g. K-BUDGET-REJECT, R-ERROR-ISOLATION or kernel/budget/exactly-at-budget-kept")
    explain.set_defaults(func=_explain)

    diff = commands.add_parser("diff", help="compare two JSON reports",
                               description="Compare two JSON reports (--report): the verdict, the requirements and "
                               "cases whose status differs, and the failures new in B or gone from A. Two runs of "
                               "one implementation, or two implementations of one role. Exits 0 when they agree, "
                               "1 when they differ, 2 on a file that is not a ctxconf report.")
    diff.add_argument("a", type=Path, metavar="A.json", help="the earlier run, or the first implementation")
    diff.add_argument("b", type=Path, metavar="B.json", help="the later run, or the second implementation")
    diff.add_argument("--markdown", action="store_true", help="print Markdown (for a CI step summary or a PR)")
    diff.set_defaults(func=_diff)

    matrix = commands.add_parser("matrix", help="certify several implementations and compare them side by side",
                                 description="Certify every implementation a matrix file lists (schema: "
                                 "data/schemas/matrix.json), each as `ctxconf kernel` or `ctxconf provider` would, "
                                 "and write the comparison: each requirement's status and the side each "
                                 "implementation took on each ruling. Exits 1 when an implementation's verdict is "
                                 "not the one its entry expects, 2 on a bad file.")
    matrix.add_argument("file", type=Path, nargs="?", metavar="FILE.yaml",
                        help="the matrix file (default: the bundled demo, examples/matrix.yaml)")
    _matrix_outputs(matrix, "; none for a shard", "")
    _shard_option(matrix, "entries", "--json")
    matrix.set_defaults(func=_matrix)

    merge = commands.add_parser("merge", help="join the shard reports of a sharded selftest or matrix run",
                                description="Join the reports of `ctxconf selftest --shard K/N` or `ctxconf "
                                "matrix --shard K/N` into what the unsharded run prints and writes, with its exit "
                                "code. Exits 2 when a shard is missing or given twice, or the reports come from "
                                "different runs (another N, profile, seed, suite version or unit list).")
    merge.add_argument("shards", type=Path, nargs="+", metavar="SHARD.json", help="every shard's report")
    _matrix_outputs(merge, "; matrix shards only", "; for self-test shards, only when given")
    merge.set_defaults(func=_merge)

    reqs = commands.add_parser("requirements", help="print the coverage matrix; fail on gaps",
                               description="Print the requirements coverage matrix. Exits 1 when a testable "
                               "MUST/MUST NOT/SHOULD has no vector, or (with --spec) an anchor is missing, a keyword "
                               "sentence is neither claimed by a requirement nor listed as unclaimed, a claimed "
                               "sentence is not in the spec, or a sentence something depends on changed since the "
                               "ledger's record (docs/traceability.md).")
    reqs.add_argument("--spec", type=Path, metavar="DIR", help="a copy of docs/specifications to check anchors, "
                      "sentences and drift against")
    reqs.add_argument("--accept", action="store_true", help="with --spec: record that the drift was reviewed (claims "
                      "follow their changed sentences, claims of removed ones are dropped, the ledger records the copy)")
    reqs.add_argument("--catalog", type=Path, metavar="DIR", help="a folder holding requirements.yaml, rulings.yaml "
                      "and sentences.yaml (default: the bundled catalog)")
    reqs.add_argument("--role", choices=("kernel", "provider", "all"), default="all",
                      help="which side's gaps fail the gate (default: all)")
    reqs.add_argument("--vectors", type=Path, metavar="DIR", help="vector folder (default: the bundled vectors)")
    reqs.set_defaults(func=_requirements)

    errata = commands.add_parser("errata", help="write each ruling up as a proposed clarification of the spec",
                                 description="Turn every ruling into a proposed clarification for the spec's "
                                 "repository: the passages involved (anchors with links, sentences by fingerprint, "
                                 "in the suite's words), the question, what the text leaves open, the reading the "
                                 "suite applies and the readings it accepts; with --matrix, what implementations "
                                 "were observed to do (docs/traceability.md).")
    errata.add_argument("--format", choices=("md", "json"), default="md", help="Markdown or JSON (default: md)")
    errata.add_argument("--out", metavar="DIR|FILE", help="one document in FILE, or one file per spec "
                        "anchor in DIR (an existing folder, or a path ending in /); default: the document on stdout")
    errata.add_argument("--matrix", type=Path, metavar="REPORT", help="a ctxconf matrix --json report: add what each "
                        "implementation did")
    errata.add_argument("--vectors", type=Path, metavar="DIR", help="vector folder (default: the bundled vectors)")
    errata.set_defaults(func=_errata)
    return parser


def _shard_option(parser: argparse.ArgumentParser, units: str, report: str) -> None:
    from conformance.commands import shards
    parser.add_argument("--shard", type=shards.parse, metavar="K/N",
                        help=f"run only the K-th of N disjoint slices of the {units}, and write a shard report "
                        f"({report}) for `ctxconf merge`")


def _matrix_outputs(parser: argparse.ArgumentParser, more: str, json_more: str) -> None:
    """The files a matrix is written to (None: the default in MATRIX_OUTPUTS, or none for a shard)."""
    parser.add_argument("--html", type=Path, metavar="FILE", help=f"the self-contained HTML page (default: "
                        f"{MATRIX_OUTPUTS['html']}{more})")
    parser.add_argument("--markdown", type=Path, metavar="FILE", help=f"the Markdown tables (default: "
                        f"{MATRIX_OUTPUTS['markdown']}{more})")
    parser.add_argument("--json", "--report", type=Path, metavar="FILE", help=f"the JSON report (default: "
                        f"{MATRIX_OUTPUTS['json']}{json_more})")


MATRIX_OUTPUTS = {"json": Path("ctxconf-matrix.json"), "markdown": Path("ctxconf-matrix.md"),
                  "html": Path("ctxconf-matrix.html")}


def _target_options(parser: argparse.ArgumentParser, role: str) -> None:
    """How the implementation under test is reached: one binding at most (none: the bundled reference)."""
    protocol = {"kernel": KERNEL_PROTOCOL, "provider": PROVIDER_PROTOCOL}.get(role, "the protocol of the vector's role")
    service = {"kernel": "KernelHarness", "provider": "ContextService (with --callback)"}.get(
        role, "KernelHarness (kernel vectors) or ContextService (provider vectors)")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--python", metavar="MOD:FACTORY", help="an in-process object (python binding)")
    target.add_argument("--stdio", metavar="CMD", help=f"a command speaking {protocol} in JSON lines on stdin/stdout")
    target.add_argument("--grpc", metavar="ADDR", help=f"a running {service}")
    target.add_argument("--grpc-cmd", metavar="CMD", help="launch a gRPC server; it listens on $CTXCONF_LISTEN" +
                        ("" if role == "kernel" else
                         " (a provider finds the suite's KernelCallbackService at $CTXCONF_KERNEL_CALLBACK)"))
    parser.add_argument("--cookie", metavar="KEY=VALUE", help="with --plugin or --launch-plugins: the magic cookie "
                        "the plugins expect (default: the pluggableharness kernel's)")
    if role != "provider":
        parser.add_argument("--launch-plugins", action="store_true", help="the kernel launches the fake providers "
                            "itself, as go-plugin plugins: Load names a command for each instead of an address")
    if role == "kernel":
        return
    target.add_argument("--plugin", metavar="CMD", help="launch a plugin binary as a hashicorp/go-plugin host does")
    parser.add_argument("--callback", metavar="ADDR", help="with --grpc: where the suite serves KernelCallbackService")
    parser.add_argument("--handshake-timeout", type=_seconds, default=60.0, metavar="SECONDS",
                        help="with --plugin: how long to wait for the handshake line (default: 60)")
    parser.add_argument("--manifest", type=Path, metavar="FILE",
                        help="how to configure a provider against fixture files (required with a target)")


def _run_options(parser: argparse.ArgumentParser, properties: bool = True) -> None:
    if properties:
        parser.add_argument("--profile", choices=sorted(PROFILES), default="default",
                            help="hypothesis profile for the property tests: ci (small, derandomized), default, "
                                 "thorough (default: default)")
        parser.add_argument("--seed", type=int, help="hypothesis seed; printed in the report when not given")
        parser.add_argument("--examples", type=_positive, metavar="N",
                            help="generated scenarios to try (overrides the profile)")
        parser.add_argument("--no-properties", action="store_true",
                            help="run the golden vectors only (a partial run: no verdict)")
        parser.add_argument("--counterexamples", type=Path, metavar="DIR", default=Path("ctxconf-counterexamples"),
                            help="where a shrunk failing scenario is written as a vector (default: ./ctxconf-counterexamples)")
        parser.add_argument("--shrink-work", type=_whole, metavar="N", default=SHRINK_WORK,
                            help="how much work shrinking a failing generated scenario may do, in calls made and "
                                 "16 KiB of text moved (the same on any machine); 0 reports the failure as first "
                                 f"found, for a run that needs only the verdict (default: {SHRINK_WORK})")
    parser.add_argument("--report", type=Path, metavar="FILE", help="write the JSON report here")
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML here")
    parser.add_argument("--markdown", type=Path, metavar="FILE", help="write a Markdown summary here")
    parser.add_argument("--html", type=Path, metavar="FILE", help="write a self-contained HTML report here")
    parser.add_argument("--badge", type=Path, metavar="DIR", help="write badge.svg and badge.json (shields.io endpoint) here")
    parser.add_argument("--vectors", type=Path, metavar="DIR", help="vector folder (default: the bundled vectors)")
    parser.add_argument("--trace", type=Path, metavar="FILE", help="write every message exchanged, per case, as "
                        "JSON lines (docs/tracing.md)")
    parser.add_argument("-k", "--filter", action="append", metavar="TEXT", help="only cases whose id contains "
                        "TEXT; repeat it to select the cases matching any (a partial run: "
                        f"no verdict; the property tests' ids are {' and '.join(CASE_IDS.values())})")
    parser.add_argument("--baseline", type=Path, metavar="FILE", help="expected failures (YAML list of "
                        "{requirement, case?, reason}); listed failures become xfail")
    parser.add_argument("--timeout", type=_seconds, default=10.0, metavar="SECONDS",
                        help="per-call timeout for the implementation (default: 10)")
    if properties:
        parser.add_argument("--jobs", type=_positive, default=1, metavar="N",
                            help="run the vectors in N worker processes, each with an implementation of its own "
                                 "(launched N times, or built N times in-process); the report is the same "
                                 "(default: 1)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME",
                        help="also pass this environment variable to a launched implementation")
    parser.add_argument("-v", "--verbose", action="store_true", help="show every failure and untested requirement")


def _seconds(text: str) -> float:
    """A duration: positive and finite (argparse turns the error into a usage error, exit 2)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _at_least(minimum: int):
    """A whole number of at least `minimum` (argparse turns the error into a usage error, exit 2)."""
    def parse(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected a whole number of at least {minimum}, got {text!r}")
        return value
    return parse


_whole, _positive = _at_least(0), _at_least(1)


def _kernel(args: argparse.Namespace) -> int:
    return _emit(certify.role_run(args, "kernel"), args)


def _provider(args: argparse.Namespace) -> int:
    return _emit(certify.role_run(args, "provider"), args)


def _replay(args: argparse.Namespace) -> int:
    return _emit(certify.replay(args), args)


def _selftest(args: argparse.Namespace) -> int:
    from conformance.commands import selftest
    started = time.perf_counter()
    everyone = [s for s in selftest.subjects() if args.filter in s.name]
    if not everyone:
        raise InputError("--filter", f"no implementation's name contains {args.filter!r}")
    mine = selftest.shard_of(everyone, args.shard) if args.shard else {s.key for s in everyone}
    outcomes = selftest.run(args.profile, args.seed, args.jobs, args.filter, where=lambda s: s.key in mine,
                            on_done=lambda *done: print(selftest.progress_line(*done), file=sys.stderr, flush=True))
    seconds = time.perf_counter() - started
    if args.shard:  # the corpus-wide verdicts need every shard: `ctxconf merge` gives them
        header = selftest.shard_header(everyone, args.shard, args.profile, args.seed, args.filter)
        report = selftest.to_shard_json(outcomes, seconds, header)
        print(selftest.render(outcomes, seconds, args.verbose, args.profile, args.shard))
        if args.report:
            _write(args.report, json.dumps(report, indent=2) + "\n")
        return Exit.FAILED if any(o.problem for o in outcomes) else Exit.OK
    return _selftest_verdict(outcomes, seconds, args.report, args.filter, args.profile, args.verbose)


def _selftest_verdict(outcomes, seconds: float, report: Path | None, only: str, profile: str,
                      verbose: bool = False) -> int:
    """What a whole self-test (run at once, or merged from its shards) prints, writes and exits with."""
    from conformance.commands import selftest
    print(selftest.render(outcomes, seconds, verbose, profile))
    if report:
        _write(report, json.dumps(selftest.to_json(outcomes, seconds), indent=2) + "\n")
    gaps = not only and (selftest.idle_vectors(outcomes) or selftest.only_by_properties(outcomes))
    return Exit.FAILED if any(o.problem for o in outcomes) or gaps else Exit.OK


def _html(report) -> str:
    from conformance.reports import html  # jinja2 is imported only for the runs that ask for HTML
    return html.to_html(report)


def _emit(report, args: argparse.Namespace) -> int:
    outputs = [(args.report, lambda: json.dumps(json_report.to_json(report), indent=2, ensure_ascii=False) + "\n"),
               (args.junit, lambda: junit.to_xml(report)), (args.markdown, lambda: markdown.to_markdown(report)),
               (args.html, lambda: _html(report))]
    if args.badge:
        outputs += [(args.badge / "badge.svg", lambda: badge.svg(report)),
                    (args.badge / "badge.json", lambda: json.dumps(badge.endpoint(report)) + "\n")]
    written = [c.counterexample for c in report.cases if c.counterexample]
    written += [str(args.trace)] if getattr(args, "trace", None) else []  # written as the run went
    for path, render in outputs:
        if path:
            _write(path, render())
            written.append(str(path))
    console.print_report(report, verbose=args.verbose, written=written)
    return report.exit_code


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(str(path), f"cannot write: {exc.strerror}") from None


def _explain(args: argparse.Namespace) -> int:
    from conformance.commands import explain
    print(explain.explain(args.id))
    return Exit.OK


def _diff(args: argparse.Namespace) -> int:
    from conformance.reports import diff
    found = diff.compare(diff.load(args.a), diff.load(args.b), str(args.a), str(args.b))
    print(diff.to_markdown(found) if args.markdown else diff.to_text(found), end="")
    return found.exit_code


def _matrix(args: argparse.Namespace) -> int:
    from conformance.commands import matrix
    outputs = _matrix_files(args, everything=not args.shard)
    found, header = matrix.run(args.file or matrix.DEMO, _parser().parse_args, args.shard)
    return _write_matrix(found, outputs, header)


def _matrix_files(args: argparse.Namespace, everything: bool) -> dict[str, Path]:
    """The matrix outputs to write: those asked for, and, for a whole matrix, the others at their defaults."""
    outputs = {kind: getattr(args, kind) or (default if everything or kind == "json" else None)
               for kind, default in MATRIX_OUTPUTS.items()}
    for kind, path in outputs.items():
        if path:
            certify.check_output_file(f"--{kind}", path)
    return {kind: path for kind, path in outputs.items() if path}


def _write_matrix(found, outputs: dict[str, Path], header: dict | None = None) -> int:
    """Write a matrix (or a shard's, with its header in the JSON); exit 1 when an entry's verdict is not the one
    it expects."""
    from conformance.reports import matrix_report
    render = {"json": lambda: json.dumps({**({"shard": header} if header else {}), **matrix_report.to_json(found)},
                                         indent=2, ensure_ascii=False) + "\n",
              "markdown": lambda: matrix_report.to_markdown(found), "html": lambda: matrix_report.to_html(found)}
    for kind, path in outputs.items():
        _write(path, render[kind]())
        print(f"wrote {path}")
    return found.exit_code


def _merge(args: argparse.Namespace) -> int:
    from conformance.commands import shards
    loaded = shards.load(args.shards)
    docs = [doc for _, doc in loaded]
    head = docs[0]["shard"]
    if head["command"] == "matrix":
        from conformance.commands import matrix
        return _write_matrix(matrix.merge(docs), _matrix_files(args, everything=True))
    for option in ("html", "markdown"):
        if getattr(args, option):
            raise InputError(f"--{option}", "a self-test writes no such report; give --report for its JSON")
    from conformance.commands import selftest
    outcomes, seconds = selftest.merge(docs)
    return _selftest_verdict(outcomes, seconds, args.json, head["filter"], head["profile"])


def _requirements(args: argparse.Namespace) -> int:
    from conformance.commands import coverage, traceability
    from conformance.data import vectors as vectors_mod
    if args.accept and not args.spec:
        raise InputError("--accept", "needs --spec DIR, the copy of the spec whose drift was reviewed")
    files = _catalog_files(args.catalog)
    catalog = catalog_mod.load(files["requirements"], files["rulings"])
    matrix = coverage.build(catalog, certify.vectors_dir(args))
    print(coverage.render(matrix))
    roles = tuple(b for name, role in certify.ROLES.items() if args.role in (name, "all") for b in role.binds)
    problems = coverage.gaps(matrix, roles)
    if args.spec:
        vectors = vectors_mod.load_all(catalog, certify.vectors_dir(args))
        found = traceability.check_spec(catalog, files["sentences"], args.spec, vectors)
        if args.accept:
            for line in traceability.accept(found, files):
                print(f"accepted: {line}")
            catalog = catalog_mod.load(files["requirements"], files["rulings"])
            found = traceability.check_spec(catalog, files["sentences"], args.spec, vectors)
        print(traceability.render(found))
        problems += [f"anchor not in the spec: {m}" for m in catalog_mod.missing_anchors(catalog, args.spec)]
        problems += [f"a ruling's quote is not in the spec: {m}" for m in catalog_mod.misquoted(catalog, args.spec)]
        problems += found.problems
    for problem in problems:
        print(f"GAP: {problem}", file=sys.stderr)
    return Exit.FAILED if problems else Exit.OK


def _errata(args: argparse.Namespace) -> int:
    from conformance.commands import errata
    from conformance.data import ledger, paths, vectors as vectors_mod
    catalog = catalog_mod.load()
    matrix = errata.load_matrix(args.matrix) if args.matrix else None
    vectors = vectors_mod.load_all(catalog, certify.vectors_dir(args))
    document = errata.build(catalog, ledger.load(paths.SENTENCES), vectors, matrix)
    out = Path(args.out) if args.out else None
    per_file = out is not None and (out.is_dir() or args.out.endswith(("/", os.sep)))
    for path, text in errata.write(document, args.format, out, per_file):
        if path is None:
            print(text, end="")
        else:
            _write(path, text)
            print(f"wrote {path}", file=sys.stderr)
    return Exit.OK


def _catalog_files(folder: Path | None) -> dict[str, Path]:
    from conformance.data import paths
    if folder is None:
        return {"requirements": paths.REQUIREMENTS, "rulings": paths.RULINGS, "sentences": paths.SENTENCES}
    if not folder.is_dir():
        raise InputError(str(folder), "not a directory")
    return {name: folder / f"{name}.yaml" for name in ("requirements", "rulings", "sentences")}
