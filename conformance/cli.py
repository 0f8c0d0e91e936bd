"""The ctxconf command line.

    ctxconf kernel [--python MOD:FACTORY | --stdio CMD] [--report FILE] ...
    ctxconf provider [--python MOD:FACTORY | --stdio CMD] --manifest FILE [--report FILE] ...
    ctxconf replay FILE [--python ... | --stdio ...] [--manifest FILE]
    ctxconf selftest [--profile ci]
    ctxconf requirements [--spec DIR]

Exit codes: 0 conformant (or, for requirements, no gaps), 1 not conformant
(or gaps), 2 bad usage or bad input files.

The heavy modules (hypothesis, grpc, the self-test) are imported where they are
used, so that a run that needs none of them starts in half the time.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from conformance import __version__, catalog as catalog_mod, manifest as manifest_mod, paths
from conformance import vectors as vectors_mod
from conformance.bindings import trace
from conformance.bindings.base import KERNEL_PROTOCOL, PROVIDER_PROTOCOL, CallFailed, HarnessError, LaunchError
from conformance.bindings.python import PythonBinding
from conformance.bindings.stdio import StdioBinding
from conformance.engine.connection import Connection
from conformance.engine import kernel_run, provider_run
from conformance.properties import CASE_IDS, PROFILES

if TYPE_CHECKING:
    from conformance.properties.runner import PropertyRun
from conformance.reports import badge, console, json_report, junit, markdown
from conformance.reports.progress import RunProgress
from conformance.reports.verdict import build
from conformance.schemas import InputError, read_yaml

REFERENCE_KERNEL = "conformance.reference.kernel:create"
REFERENCE_PROVIDER = "conformance.reference.filereader:create"
REFERENCE_MANIFEST = paths.PACKAGE / "reference" / "manifests" / "filereader.yaml"


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
    parser = _parser()
    args = parser.parse_args(argv)
    previous = {signum: signal.signal(signum, _terminate) for signum in UNWIND_SIGNALS
                if threading.current_thread() is threading.main_thread()}  # only the main thread may
    try:
        return args.func(args)
    except (InputError, LaunchError) as exc:
        print(f"ctxconf: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print("ctxconf: interrupted", file=sys.stderr)
        return 128 + getattr(exc, "signum", signal.SIGINT)  # 130, 143 (SIGTERM) or 129 (SIGHUP), as a shell says
    finally:
        for signum, handler in previous.items():
            if handler is not None:  # None: installed outside Python, cannot be put back
                signal.signal(signum, handler)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ctxconf", description="Conformance suite for the pluggableharness "
                                     "context-provider protocol.")
    parser.add_argument("--version", action="version", version=f"ctxconf {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

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
    check.set_defaults(func=_selftest)

    reqs = commands.add_parser("requirements", help="print the coverage matrix; fail on gaps",
                               description="Print the requirements coverage matrix. Exits 1 when a testable "
                               "MUST/MUST NOT/SHOULD has no vector, or (with --spec) an anchor is missing.")
    reqs.add_argument("--spec", type=Path, metavar="DIR", help="a copy of docs/specifications to check anchors against")
    reqs.add_argument("--role", choices=("kernel", "provider", "all"), default="all",
                      help="which side's gaps fail the gate (default: all)")
    reqs.add_argument("--vectors", type=Path, metavar="DIR", help="vector folder (default: the bundled vectors)")
    reqs.set_defaults(func=_requirements)
    return parser


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
    parser.add_argument("--report", type=Path, metavar="FILE", help="write the JSON report here")
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML here")
    parser.add_argument("--markdown", type=Path, metavar="FILE", help="write a Markdown summary here")
    parser.add_argument("--badge", type=Path, metavar="DIR", help="write badge.svg and badge.json (shields.io endpoint) here")
    parser.add_argument("--vectors", type=Path, metavar="DIR", help="vector folder (default: the bundled vectors)")
    parser.add_argument("--trace", type=Path, metavar="FILE", help="write every message exchanged, per case, as "
                        "JSON lines (docs/tracing.md)")
    parser.add_argument("-k", "--filter", metavar="TEXT", help="only cases whose id contains TEXT (a partial run: "
                        f"no verdict; the property tests' ids are {' and '.join(CASE_IDS.values())})")
    parser.add_argument("--baseline", type=Path, metavar="FILE", help="expected failures (YAML list of "
                        "{requirement, case?, reason}); listed failures become xfail")
    parser.add_argument("--timeout", type=_seconds, default=10.0, metavar="SECONDS",
                        help="per-call timeout for the implementation (default: 10)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME",
                        help="also pass this environment variable to a launched implementation")
    parser.add_argument("-v", "--verbose", action="store_true", help="show every failure and untested requirement")


def _seconds(text: str) -> float:
    """A duration: positive and finite (argparse turns the ValueError into a usage error, exit 2)."""
    value = float(text)
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


ROLES = {  # protocol, harness schema, bundled target, requirement roles
    "kernel": (KERNEL_PROTOCOL, "kernel-protocol.json", REFERENCE_KERNEL, catalog_mod.KERNEL_ROLES),
    "provider": (PROVIDER_PROTOCOL, "provider-protocol.json", REFERENCE_PROVIDER, catalog_mod.PROVIDER_ROLES),
}


def _kernel(args: argparse.Namespace) -> int:
    return _role(args, "kernel")


def _provider(args: argparse.Namespace) -> int:
    return _role(args, "provider")


def _role(args: argparse.Namespace, role: str) -> int:
    catalog = catalog_mod.load()
    every = vectors_mod.load_dir(role, catalog, _vectors_dir(args))
    vectors = [v for v in every if not args.filter or args.filter in v.id]
    wanted = not args.no_properties and (not args.filter or args.filter in CASE_IDS[role])
    run = _property_run(args) if wanted else None
    if not vectors and run is None:
        raise InputError("--filter", f"no case id contains {args.filter!r}")
    scope = [f"-k {args.filter!r}"] if args.filter else []
    scope += ["--no-properties"] if args.no_properties else []
    known_cases = {v.id for v in every} | {CASE_IDS[role]}
    return _certify(args, role, catalog, vectors, run, "; ".join(scope) or None, known_cases)


def _replay(args: argparse.Namespace) -> int:
    catalog = catalog_mod.load()
    vector = vectors_mod.load_file(args.file, catalog)
    role = vector.id.split("/")[0]
    # A project's baseline names cases of the whole suite, not just the one replayed.
    known_cases = {v.id for v in vectors_mod.load_dir(role, catalog)} | {vector.id, CASE_IDS[role]}
    return _certify(args, role, catalog, [vector], None, f"replay of {vector.id}", known_cases)


def _certify(args: argparse.Namespace, role: str, catalog, vectors: list, run: PropertyRun | None,
             partial: str | None, known_cases: set[str]) -> int:
    """Run the vectors (then the properties) against the target and report. A partial run (`partial`
    says which) reports what it found but gives no verdict."""
    protocol, schema, reference, roles = ROLES[role]
    _check_targets(args)
    _check_outputs(args)
    manifest = _manifest(args) if role == "provider" else None
    baseline = _baseline(args.baseline, catalog, roles, known_cases)
    with tempfile.TemporaryDirectory(prefix="ctxconf-") as workdir, trace.to_file(args.trace), \
            RunProgress(len(vectors) + (run is not None)) as progress:
        name, opener = _opener(args, protocol, schema, reference, Path(workdir))
        started = time.perf_counter()
        with Connection(opener) as connection:
            _first_start(connection)
            if role == "kernel":
                cases = kernel_run.run_vectors(connection, vectors, progress.finished)
            else:
                cases = provider_run.run_vectors(connection, vectors, manifest, Path(workdir) / "cases",
                                                 progress.finished)
            if run:
                from conformance.properties.runner import kernel_property, provider_property
                progress.starting(f"property tests, profile {run.profile}, seed {run.seed}")
                trace.set_case(CASE_IDS[role])
                cases.append(kernel_property(connection, run) if role == "kernel" else
                             provider_property(connection, run, manifest, Path(workdir) / "properties"))
                progress.finished(cases[-1])
            trace.set_case(None)  # the final stop belongs to the run, not to the last case
            implementation = connection.implementation
    report = build(catalog, roles, role, cases, name, implementation, time.perf_counter() - started, baseline,
                   seed=run.seed if run else None, filtered=partial, rerun_options=_target_argv(args))
    return _emit(report, args)


def _check_outputs(args: argparse.Namespace) -> None:
    """Where results go is checked before the run, so a typo does not cost a whole certification."""
    for option, path in (("--badge", args.badge), ("--counterexamples", getattr(args, "counterexamples", None))):
        if path is not None and path.exists() and not path.is_dir():
            raise InputError(option, f"{path} is a file; name a directory")
    for option, path in (("--report", args.report), ("--junit", args.junit), ("--markdown", args.markdown),
                         ("--trace", args.trace)):
        if path is not None and path.is_dir():
            raise InputError(option, f"{path} is a directory; name a file")
        if path is not None and path.parent.exists() and not path.parent.is_dir():
            raise InputError(option, f"{path.parent} is not a directory")
    for name in args.env:
        if not name or "=" in name or "\0" in name:
            raise InputError("--env", f"{name!r} is not an environment variable name")


def _property_run(args: argparse.Namespace) -> PropertyRun:
    from conformance.properties.runner import PropertyRun
    return PropertyRun(profile=args.profile, seed=args.seed, examples=args.examples,
                       counterexamples=args.counterexamples)


def _vectors_dir(args: argparse.Namespace) -> Path | None:
    if args.vectors is not None and not args.vectors.is_dir():
        raise InputError("--vectors", f"{args.vectors} is not a directory")
    return args.vectors


def _target_argv(args: argparse.Namespace) -> list[str]:
    """The options that name the target and how to reach it, as given: what a rerun of one case needs."""
    argv = []
    for name in ("python", "stdio", "grpc", "grpc_cmd", "plugin", "callback", "cookie", "manifest", "vectors"):
        if getattr(args, name, None) is not None:
            argv += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    if getattr(args, "launch_plugins", False):
        argv.append("--launch-plugins")
    for name, default in (("timeout", 10.0), ("handshake_timeout", 60.0)):
        if getattr(args, name, default) != default:
            argv += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    for env in args.env:
        argv += ["--env", env]
    return argv


def _manifest(args: argparse.Namespace) -> manifest_mod.Manifest:
    if _has_target(args) and not args.manifest:
        raise InputError("--manifest", "a provider target needs a manifest saying how to configure it")
    return manifest_mod.load(args.manifest or REFERENCE_MANIFEST)


def _selftest(args: argparse.Namespace) -> int:
    from conformance import selftest
    started = time.perf_counter()
    outcomes = selftest.run(args.profile, args.seed, args.jobs, args.filter)
    if not outcomes:
        raise InputError("--filter", f"no implementation's name contains {args.filter!r}")
    seconds = time.perf_counter() - started
    print(selftest.render(outcomes, seconds))
    if args.report:
        _write(args.report, json.dumps(selftest.to_json(outcomes, seconds), indent=2) + "\n")
    gaps = not args.filter and (selftest.idle_vectors(outcomes) or selftest.only_by_properties(outcomes))
    return 1 if any(o.problem for o in outcomes) or gaps else 0


TARGETS = ("python", "stdio", "grpc", "grpc_cmd", "plugin")


def _has_target(args: argparse.Namespace) -> bool:
    return any(getattr(args, name, None) is not None for name in TARGETS)


def _check_targets(args: argparse.Namespace) -> None:
    """A target option given empty (an unset CI variable, say) is a mistake, not a request for the reference."""
    for name in TARGETS:
        value = getattr(args, name, None)
        if value is not None and not value.strip():
            raise InputError(f"--{name.replace('_', '-')}", "is empty; name the implementation, or leave the "
                             "option out to certify the bundled reference")


def _opener(args: argparse.Namespace, protocol: str, schema: str, reference: str, workdir: Path):
    """The binding's name and a function opening a fresh binding to the target."""
    name, open_binding = _plain_opener(args, protocol, schema, reference, workdir)
    if not getattr(args, "launch_plugins", False) or protocol != KERNEL_PROTOCOL:
        return name, open_binding
    from conformance.bindings.go_plugin_protocol import DEFAULT_COOKIE, parse_cookie
    from conformance.bindings.launch_plugins import LaunchingKernel
    cookie = parse_cookie(args.cookie) if args.cookie else DEFAULT_COOKIE
    return f"{name}+plugins", lambda: LaunchingKernel(open_binding(), workdir, args.timeout, cookie)


def _plain_opener(args: argparse.Namespace, protocol: str, schema: str, reference: str, workdir: Path):
    from conformance.bindings.go_plugin import GoPluginBinding
    from conformance.bindings.go_plugin_protocol import DEFAULT_COOKIE, parse_cookie
    from conformance.bindings.grpc_kernel import GrpcKernelBinding
    from conformance.bindings.grpc_provider import GrpcProviderBinding
    if getattr(args, "plugin", None):
        if protocol == KERNEL_PROTOCOL:
            raise InputError("--plugin", "launches provider plugins; a kernel vector needs another target")
        cookie = parse_cookie(args.cookie) if args.cookie else DEFAULT_COOKIE
        return "go-plugin", lambda: GoPluginBinding(args.plugin, cookie, workdir, args.timeout,
                                                    args.handshake_timeout, tuple(args.env))
    if getattr(args, "grpc", None) or getattr(args, "grpc_cmd", None):
        if protocol == KERNEL_PROTOCOL:
            return "grpc", lambda: GrpcKernelBinding(workdir, args.timeout, args.grpc, args.grpc_cmd, tuple(args.env))
        return "grpc", lambda: GrpcProviderBinding(workdir, args.timeout, args.grpc, args.grpc_cmd,
                                                   getattr(args, "callback", None), tuple(args.env))
    if args.stdio:
        return "stdio", lambda: StdioBinding(args.stdio, protocol, schema, workdir, args.timeout, tuple(args.env))
    target = args.python or reference
    PythonBinding(target, protocol, args.timeout)  # fail fast on a bad MOD:FACTORY
    return "python", lambda: PythonBinding(target, protocol, args.timeout)


def _first_start(connection: Connection) -> None:
    """Start once up front so a command that cannot run at all is a usage error (exit 2)."""
    try:
        connection.binding()
    except (HarnessError, CallFailed):
        pass  # the implementation started but misbehaved: reported per case


def _baseline(path: Path | None, catalog, roles: tuple[str, ...], known_cases: set[str]) -> list[dict] | None:
    """Expected failures; an entry naming no requirement of this role, or no case, is a mistake (a typo would
    otherwise read as a failure fixed)."""
    if path is None:
        return None
    data = read_yaml(path)
    entries = data.get("expected_failures") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise InputError(str(path), "expected a list of {requirement, case?, reason} (or expected_failures: [...])")
    requirements = {r.id for r in catalog.for_roles(roles)}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("requirement"), str):
            raise InputError(str(path), "each entry needs a requirement id", f"[{i}].requirement")
        if entry["requirement"] not in requirements:
            raise InputError(str(path), f"{entry['requirement']!r} is not a requirement of this role",
                             f"[{i}].requirement")
        if "case" in entry and (not isinstance(entry["case"], str) or entry["case"] not in known_cases):
            raise InputError(str(path), f"no case has the id {entry['case']!r}", f"[{i}].case")
    return entries


def _emit(report, args: argparse.Namespace) -> int:
    outputs = [(args.report, lambda: json.dumps(json_report.to_json(report), indent=2, ensure_ascii=False) + "\n"),
               (args.junit, lambda: junit.to_xml(report)), (args.markdown, lambda: markdown.to_markdown(report))]
    if args.badge:
        outputs += [(args.badge / "badge.svg", lambda: badge.svg(report)),
                    (args.badge / "badge.json", lambda: json.dumps(badge.endpoint(report)) + "\n")]
    written = [c.counterexample for c in report.cases if c.counterexample]
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


def _requirements(args: argparse.Namespace) -> int:
    from conformance import coverage
    catalog = catalog_mod.load()
    matrix = coverage.build(catalog, _vectors_dir(args))
    print(coverage.render(matrix))
    roles = {"kernel": catalog_mod.KERNEL_ROLES, "provider": catalog_mod.PROVIDER_ROLES,
             "all": catalog_mod.KERNEL_ROLES + catalog_mod.PROVIDER_ROLES}[args.role]
    problems = coverage.gaps(matrix, roles)
    if args.spec:
        if not args.spec.is_dir():
            raise InputError(str(args.spec), "not a directory")
        problems += [f"anchor not in the spec: {m}" for m in catalog_mod.missing_anchors(catalog, args.spec)]
    for problem in problems:
        print(f"GAP: {problem}", file=sys.stderr)
    return 1 if problems else 0
