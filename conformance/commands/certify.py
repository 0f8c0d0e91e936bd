"""Certifying one implementation: the path `ctxconf kernel`, `provider`, `replay` and `matrix` share.

It takes the parsed command-line options (an argparse namespace, or one built
by the same parser), checks them, runs the vectors and the property tests
against the target and returns the Report. Writing the outputs is the caller's.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from conformance.data import manifest as manifest_mod
from conformance.data import catalog as catalog_mod
from conformance.data import paths
from conformance.data import vectors as vectors_mod
from conformance.bindings import trace
from conformance.bindings.base import KERNEL_PROTOCOL, PROVIDER_PROTOCOL, HarnessError
from conformance.bindings.python import PythonBinding
from conformance.bindings.stdio import StdioBinding
from conformance.engine import provider_checks
from conformance.engine.connection import Connection
from conformance.commands.funnel import run_cases
from conformance.engine.results import CaseResult
from conformance.properties import CASE_IDS
from conformance.reports.progress import RunProgress
from conformance.reports.verdict import Report, build
from conformance.data.schemas import InputError, read_yaml

if TYPE_CHECKING:
    from conformance.properties.runner import PropertyRun

REFERENCE_KERNEL = "conformance.reference.kernel:create"
REFERENCE_PROVIDER = "conformance.reference.filereader:create"
REFERENCE_MANIFEST = paths.EXAMPLES / "manifests" / "filereader.yaml"


@dataclass(frozen=True)
class Role:
    """What certifying one role needs: its harness protocol and schema, the bundled implementation certified
    when no target is named, and the catalog roles (`binds`) its requirements have."""
    name: str
    protocol: str
    schema: str
    reference: str
    binds: tuple[str, ...]


ROLES = {role.name: role for role in (
    Role("kernel", KERNEL_PROTOCOL, "kernel-protocol.json", REFERENCE_KERNEL, catalog_mod.KERNEL_ROLES),
    Role("provider", PROVIDER_PROTOCOL, "provider-protocol.json", REFERENCE_PROVIDER, catalog_mod.PROVIDER_ROLES),
)}


@dataclass
class Plan:
    """One certification, before it runs: the cases, the property run, how to reach the target and how to
    judge the results. The CLI runs it in one go (`certify`); the pytest plugin runs it case by case."""
    args: argparse.Namespace
    role: str
    catalog: catalog_mod.Catalog
    vectors: list
    properties: PropertyRun | None
    partial: str | None
    known_cases: set[str]
    manifest: manifest_mod.Manifest | None = None
    baseline: list[dict] | None = None
    binding: str | None = None  # the binding's name, once connected

    def __post_init__(self) -> None:
        _check_targets(self.args)
        check_outputs(self.args)
        self.manifest = _manifest(self.args) if self.role == "provider" else None
        self.baseline = _baseline(self.args.baseline, self.catalog, ROLES[self.role].binds, self.known_cases)

    @property
    def property_case(self) -> str:
        return CASE_IDS[self.role]

    def connect(self, workdir: Path) -> Connection:
        """A connection to the target; started once up front, so a target that cannot run at all is a usage
        error (exit 2) rather than an error in every case."""
        self.binding, opener = _opener(self.args, ROLES[self.role], workdir)
        connection = Connection(opener)
        _first_start(connection)
        return connection

    def report(self, cases: list[CaseResult], implementation: dict, seconds: float) -> Report:
        return build(self.catalog, ROLES[self.role].binds, self.role, cases,
                     self.binding or _opener_name(self.args, self.role), implementation, seconds,
                     self.baseline, seed=self.properties.seed if self.properties else None, filtered=self.partial,
                     rerun_options=_target_argv(self.args))

    def order(self, case: CaseResult) -> int:
        """Where a case stands in a serial run: the vectors in order, then the property tests."""
        ids = [v.id for v in self.vectors]
        return ids.index(case.id) if case.id in ids else len(ids)

    def expected_failure(self, case: CaseResult, implementation: dict) -> str | None:
        """Why the baseline expects this case's failures, when it expects all of them."""
        return "; ".join(self.report([case], implementation, 0.0).xfailed.get(case.id, [])) or None


def plan(args: argparse.Namespace, role: str) -> Plan:
    """`ctxconf kernel` or `ctxconf provider`: the vectors -k selects, then the property tests."""
    catalog = catalog_mod.load()
    every = vectors_mod.load_dir(role, catalog, vectors_dir(args))
    filters = args.filter or []  # -k may be repeated: a case is selected when its id contains any of them

    def selected(case_id: str) -> bool:
        return not filters or any(text in case_id for text in filters)

    vectors = [v for v in every if selected(v.id)]
    run = _property_run(args) if not args.no_properties and selected(CASE_IDS[role]) else None
    if not vectors and run is None:
        raise InputError("--filter", "no case id contains " + " or ".join(repr(text) for text in filters))
    scope = [" ".join(f"-k {text!r}" for text in filters)] if filters else []
    scope += ["--no-properties"] if args.no_properties else []
    return Plan(args, role, catalog, vectors, run, "; ".join(scope) or None, {v.id for v in every} | {CASE_IDS[role]})


def role_run(args: argparse.Namespace, role: str) -> Report:
    return certify(plan(args, role))


def replay(args: argparse.Namespace) -> Report:
    """`ctxconf replay FILE`: one vector file, against the role its id names."""
    catalog = catalog_mod.load()
    vector = vectors_mod.load_file(args.file, catalog)
    if getattr(args, "at", None) is not None:
        vector = vectors_mod.at(vector, args.at)
    role = vector.id.split("/")[0]
    # A project's baseline names cases of the whole suite, not just the one replayed.
    known_cases = {v.id for v in vectors_mod.load_dir(role, catalog)} | {vector.id, CASE_IDS[role]}
    scope = f"replay of {vector.id}" + (f" at {vector.at}" if vector.at else "")
    return certify(Plan(args, role, catalog, [vector], None, scope, known_cases))


def certify(plan: Plan) -> Report:
    """Run the vectors (then the properties) against the target and report. A partial run (`plan.partial`
    says which) reports what it found but gives no verdict."""
    args, role, vectors, run = plan.args, plan.role, plan.vectors, plan.properties
    jobs = _jobs(args)
    with tempfile.TemporaryDirectory(prefix="ctxconf-") as workdir, trace.to_file(args.trace), \
            RunProgress(len(vectors) + (run is not None),
                        provider_checks.pending_over_run if role == "provider" else lambda case: False) as progress:
        started = time.perf_counter()
        with plan.connect(Path(workdir)) as connection:
            parallel = jobs > 1 and len(vectors) > 1
            cases = _parallel_vectors(args, role, vectors, Path(workdir), jobs, progress.finished) if parallel else []
            cases += run_cases(role, connection, [] if parallel else vectors, run, Path(workdir), plan.manifest,
                               progress.finished, progress.starting, progress.update)
            implementation = connection.implementation
    if role == "provider":
        cases = provider_checks.judge_over_run(cases)
    return plan.report(cases, implementation, time.perf_counter() - started)


def _jobs(args: argparse.Namespace) -> int:
    """--jobs N: N implementations at once, each launched (or built in-process) by its own worker. One
    already running (--grpc ADDR) cannot be N: its cases' sessions would interleave."""
    jobs = getattr(args, "jobs", 1) or 1
    if jobs > 1 and getattr(args, "grpc", None):
        raise InputError("--jobs", "needs an implementation the suite starts itself (--python, --stdio, "
                         "--grpc-cmd, --plugin), one per worker; --grpc reaches a single running one")
    return jobs


class _Worker:
    """A worker process's share of a parallel run (commands/pool.py): its own connection, so its own
    implementation, in its own directory, running whole cases one at a time."""

    def __init__(self, args: argparse.Namespace, role: str, workdir: Path, number: int):
        self.role, self.workdir = role, workdir / f"worker-{number}"
        self.workdir.mkdir()
        self.trace_path = self.workdir / "trace.jsonl" if getattr(args, "trace", None) else None
        self.trace = trace.to_file(self.trace_path)
        self.trace.__enter__()
        self.manifest = _manifest(args) if role == "provider" else None
        self.connection = Connection(_opener(args, ROLES[role], self.workdir)[1])
        self.last: tuple[int, CaseResult] | None = None

    def item(self, index: int, vector) -> CaseResult:
        [result] = run_cases(self.role, self.connection, [vector], None, self.workdir, self.manifest)
        self.last = (index, result)
        return result

    def finish(self) -> list[tuple[int, CaseResult]]:
        """Close the connection: what closing finds (a stop ignored, say) is charged to the last case served,
        as in a serial run, so that case is sent again."""
        trace.set_case(None)
        self.connection.close()
        self.trace.__exit__(None, None, None)
        return [self.last] if self.last else []


def _parallel_vectors(args: argparse.Namespace, role: str, vectors: list, workdir: Path, jobs: int,
                      on_result) -> list[CaseResult]:
    """The vectors over `jobs` workers; the results in the vectors' order, as a serial run has them."""
    from conformance.commands import pool

    def lost(index: int, vector, why: str) -> CaseResult:
        return CaseResult(vector.id, vector.title, vector.requirements, vector.rulings, source=str(vector.path),
                          error=f"ctxconf could not finish this case: {why}")

    cases = pool.run(min(jobs, len(vectors)), _Worker, (args, role, workdir), vectors, on_result, lost)
    if getattr(args, "trace", None):  # each worker traced its cases apart: into the run's trace, case by case
        order = {v.id: i for i, v in enumerate(vectors)}
        lines = [line for part in sorted(workdir.glob("worker-*/trace.jsonl")) for line in part.read_text().splitlines()]
        trace.append(sorted(lines, key=lambda line: order.get(json.loads(line).get("case"), len(order))))
    return cases


def check_outputs(args: argparse.Namespace) -> None:
    """Where results go is checked before the run, so a typo does not cost a whole certification."""
    for option, path in (("--badge", args.badge), ("--counterexamples", getattr(args, "counterexamples", None))):
        if path is not None and path.exists() and not path.is_dir():
            raise InputError(option, f"{path} is a file; name a directory")
    for option, path in (("--report", args.report), ("--junit", args.junit), ("--markdown", args.markdown),
                         ("--html", args.html), ("--trace", args.trace)):
        check_output_file(option, path)
    for name in args.env:
        if not name or "=" in name or "\0" in name:
            raise InputError("--env", f"{name!r} is not an environment variable name")


def check_output_file(option: str, path: Path | None) -> None:
    """Before the run, not after it: an output that cannot be written is bad usage (exit 2)."""
    if path is None:
        return
    if path.is_dir():
        raise InputError(option, f"{path} is a directory; name a file")
    if path.parent.exists() and not path.parent.is_dir():
        raise InputError(option, f"{path.parent} is not a directory")
    if path.parent.is_dir():
        existed = path.exists()
        try:
            with open(path, "a", encoding="utf-8"):
                pass
        except OSError as exc:
            raise InputError(option, f"cannot write {path}: {exc.strerror}") from None
        if not existed:
            path.unlink()


def _property_run(args: argparse.Namespace) -> PropertyRun:
    from conformance.properties.runner import PropertyRun
    return PropertyRun(profile=args.profile, seed=args.seed, examples=args.examples,
                       counterexamples=args.counterexamples, shrink_work=args.shrink_work)


def vectors_dir(args: argparse.Namespace) -> Path | None:
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


def _opener(args: argparse.Namespace, role: Role, workdir: Path):
    """The binding's name and a function opening a fresh binding to the target."""
    from conformance.bindings.go_plugin_protocol import DEFAULT_COOKIE, parse_cookie
    cookie = parse_cookie(args.cookie) if args.cookie else DEFAULT_COOKIE
    name, open_binding = _plain_opener(args, role, workdir, cookie)
    if not getattr(args, "launch_plugins", False) or role.name != "kernel":
        return name, open_binding
    from conformance.bindings.launch_plugins import LaunchingKernel
    return f"{name}+plugins", lambda: LaunchingKernel(open_binding(), workdir, args.timeout, cookie)


def _opener_name(args: argparse.Namespace, role: str) -> str:
    name = "go-plugin" if getattr(args, "plugin", None) else "grpc" if getattr(args, "grpc", None) or \
        getattr(args, "grpc_cmd", None) else "stdio" if args.stdio else "python"
    return f"{name}+plugins" if getattr(args, "launch_plugins", False) and role == "kernel" else name


def _plain_opener(args: argparse.Namespace, role: Role, workdir: Path, cookie: tuple[str, str]):
    from conformance.bindings.go_plugin import GoPluginBinding
    from conformance.bindings.grpc_kernel import GrpcKernelBinding
    from conformance.bindings.grpc_provider import GrpcProviderBinding
    if getattr(args, "plugin", None):
        if role.name == "kernel":
            raise InputError("--plugin", "launches provider plugins; a kernel vector needs another target")
        return "go-plugin", lambda: GoPluginBinding(args.plugin, cookie, workdir, args.timeout,
                                                    args.handshake_timeout, tuple(args.env))
    if getattr(args, "grpc", None) or getattr(args, "grpc_cmd", None):
        if role.name == "kernel":
            return "grpc", lambda: GrpcKernelBinding(workdir, args.timeout, args.grpc, args.grpc_cmd, tuple(args.env))
        return "grpc", lambda: GrpcProviderBinding(workdir, args.timeout, args.grpc, args.grpc_cmd,
                                                   getattr(args, "callback", None), tuple(args.env))
    if args.stdio:
        return "stdio", lambda: StdioBinding(args.stdio, role.protocol, role.schema, workdir, args.timeout,
                                             tuple(args.env))
    target = args.python or role.reference
    PythonBinding(target, role.protocol, args.timeout)  # fail fast on a bad MOD:FACTORY
    return "python", lambda: PythonBinding(target, role.protocol, args.timeout)


def _first_start(connection: Connection) -> None:
    """Start once up front so a command that cannot run at all is a usage error (exit 2)."""
    try:
        connection.binding()
    except HarnessError:
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
