"""ctxconf inside pytest: each golden vector a test item named by its vector id, the property tests one more.

    pytest --ctxconf-kernel mypkg.kernel:create
    pytest --ctxconf-provider "stdio:./my-provider" --ctxconf-manifest ctxconf.yaml --junitxml=out.xml -n 2

Registered through the `pytest11` entry point and off unless one of the two target options is given. A TARGET
is what the CLI's target options take, prefixed by the option's name: `mypkg.mod:factory` (or `python:...`),
`stdio:CMD`, `grpc:ADDR`, `grpc-cmd:CMD`, `plugin:CMD` (providers), or `reference` for the bundled one.
The options after `--ctxconf-args` are any others of `ctxconf kernel`/`provider` (profile, seed, timeout,
baseline, vectors, env...), parsed by the CLI's own parser: one certification path, not two.

Selection (`-k`), JUnit XML (`--junitxml`) and parallel workers (`-n`, pytest-xdist) are pytest's; each
worker opens its own connection to the target, as `ctxconf --jobs` does. A case whose failures the baseline
lists is an xfail with the baseline's reason. At the end the plugin prints the CLI's verdict block, from every
worker's results, and `--ctxconf-report FILE` writes the same JSON report as `ctxconf --report`.
"""

from __future__ import annotations

import argparse
import base64
import json
import pickle
import shlex
import tempfile
from pathlib import Path

import pytest

_CASE = "ctxconf-case"  # the user property that carries a CaseResult from a worker to the controller
_PREFIXES = {"python": "--python", "stdio": "--stdio", "grpc": "--grpc", "grpc-cmd": "--grpc-cmd",
             "plugin": "--plugin"}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ctxconf", "ctxconf conformance certification")
    group.addoption("--ctxconf-kernel", metavar="TARGET", help="certify this kernel (e.g. mypkg.kernel:create, "
                    "stdio:CMD, grpc:ADDR, grpc-cmd:CMD, reference)")
    group.addoption("--ctxconf-provider", metavar="TARGET", help="certify this provider (the same forms, and "
                    "plugin:CMD)")
    group.addoption("--ctxconf-manifest", metavar="FILE", help="the provider's manifest")
    group.addoption("--ctxconf-report", metavar="FILE", help="write ctxconf's JSON report here")
    group.addoption("--ctxconf-args", metavar="ARGS", default="",
                    help="further options of ctxconf kernel/provider, as one string (e.g. '--profile ci')")


def ctxconf_args(config: pytest.Config) -> tuple[str, argparse.Namespace] | None:
    """The role and the CLI's own parse of the options given to pytest; None when the plugin is off."""
    kernel, provider = config.getoption("ctxconf_kernel"), config.getoption("ctxconf_provider")
    if not kernel and not provider:
        return None
    if kernel and provider:
        raise pytest.UsageError("--ctxconf-kernel and --ctxconf-provider certify one role at a time; give one")
    role, target = ("kernel", kernel) if kernel else ("provider", provider)
    argv = [role, *_target_argv(target), *shlex.split(config.getoption("ctxconf_args"))]
    if config.getoption("ctxconf_manifest"):
        argv += ["--manifest", config.getoption("ctxconf_manifest")]
    from conformance.commands.cli import parse
    try:
        return role, parse(argv)
    except SystemExit as exc:  # argparse said what was wrong on stderr
        raise pytest.UsageError(f"ctxconf options {shlex.join(argv)!r} are not valid") from exc


def _target_argv(target: str) -> list[str]:
    if target == "reference":
        return []
    prefix, _, rest = target.partition(":")
    if prefix in _PREFIXES and rest:
        return [_PREFIXES[prefix], rest]
    return ["--python", target]  # MOD:FACTORY


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "ctxconf(requirements): a ctxconf case and the requirement ids it cites")
    parsed = ctxconf_args(config)
    if parsed is not None:
        config.pluginmanager.register(CtxconfSession(config, *parsed), "ctxconf-session")


class CtxconfSession:
    """One certification spread over pytest's items: the cases to collect, the connection a process runs them
    over (opened on first use), and, on the process that reports, every case's result."""

    def __init__(self, config: pytest.Config, role: str, args: argparse.Namespace):
        from conformance.commands import certify
        self.config, self.role, self.args = config, role, args
        self.plan = certify.plan(args, role)
        self.workdir = Path(tempfile.mkdtemp(prefix="ctxconf-pytest-"))
        self.connection = None
        self.results: list = []

    # -- collection --

    @pytest.hookimpl(tryfirst=True)  # before -k and -m deselect
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list) -> None:
        collector = CtxconfCollector.from_parent(session, name=f"ctxconf-{self.role}")
        items.extend(collector.collect())

    # -- running --

    def run(self, vector) -> tuple:
        """One case through the funnel the CLI uses: its result, and the implementation that served it."""
        from conformance.commands.funnel import run_cases
        if self.connection is None:
            self.connection = self.plan.connect(self.workdir)
        vectors, run = ([], self.plan.properties) if vector is None else ([vector], None)
        [result] = run_cases(self.role, self.connection, vectors, run, self.workdir, self.plan.manifest)
        return result, self.connection.implementation

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.connection is not None:
            self.connection.close()

    # -- reporting (the controller under xdist, else this process) --

    @pytest.hookimpl(tryfirst=True)  # before junitxml writes the user properties
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if hasattr(self.config, "workerinput"):
            return  # an xdist worker: the controller gets the report, the case with it, and keeps both
        carried = [value for name, value in report.user_properties if name == _CASE]
        report.user_properties = [(n, v) for n, v in report.user_properties if n != _CASE]  # not for the JUnit XML
        if carried and report.when == "call":
            self.results.append(pickle.loads(base64.b64decode(carried[0])))

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.results or hasattr(self.config, "workerinput"):
            return
        from conformance.reports import console, json_report
        cases = sorted((case for case, _ in self.results), key=self.plan.order)
        planned = len(self.plan.vectors) + (self.plan.properties is not None)
        if len(cases) < planned:  # pytest's -k, -m or --lf left cases out: a partial run gives no verdict
            self.plan.partial = "; ".join(filter(None, [self.plan.partial, f"pytest ran {len(cases)} of {planned} cases"]))
        report = self.plan.report(cases, self.results[0][1], sum(case.seconds for case in cases))
        written = []
        if self.config.getoption("ctxconf_report"):
            path = Path(self.config.getoption("ctxconf_report"))
            path.write_text(json.dumps(json_report.to_json(report), indent=2, ensure_ascii=False) + "\n")
            written.append(str(path))
        terminalreporter.section("ctxconf")
        console.print_report(report, stream=terminalreporter._tw, written=written)


class CtxconfCollector(pytest.Collector):
    def collect(self):
        plan = self.config.pluginmanager.get_plugin("ctxconf-session").plan
        for vector in plan.vectors:
            yield CaseItem.from_parent(self, name=vector.id, vector=vector)
        if plan.properties is not None:
            yield CaseItem.from_parent(self, name=plan.property_case, vector=None)


class CaseFailed(Exception):
    pass


def _problem(result, rerun: str | None) -> str:
    """What the CLI's report says of a failed case: each failed finding, an error, and how to rerun it."""
    from conformance.data.catalog import load
    catalog = load()
    lines = [f"{f.requirement} ({catalog.requirements[f.requirement].anchor})"
             f"{' [' + f.where + ']' if f.where else ''}: {f.message}" for f in result.failures()]
    lines += [f"error: {result.error}"] if result.error else []
    lines += [f"rerun: {rerun}"] if rerun else []
    return "\n".join(lines)


class CaseItem(pytest.Item):
    def __init__(self, *, vector, **kwargs):
        super().__init__(**kwargs)
        self.vector = vector
        requirements = vector.requirements if vector is not None else ()
        self.add_marker(pytest.mark.ctxconf(requirements=list(requirements)))
        for requirement in requirements:
            self.user_properties.append(("requirement", requirement))

    def runtest(self) -> None:
        ctx = self.config.pluginmanager.get_plugin("ctxconf-session")
        result, implementation = ctx.run(self.vector)
        self.user_properties.append((_CASE, base64.b64encode(pickle.dumps((result, implementation))).decode()))
        for requirement in sorted({f.requirement for f in result.failures()}):
            self.user_properties.append(("failed", requirement))
        if result.skipped:
            pytest.skip(result.skipped)
        if not result.failures() and not result.error:
            return
        expected = ctx.plan.expected_failure(result, implementation)
        if expected and not result.error:
            pytest.xfail(expected)
        raise CaseFailed(_problem(result, ctx.plan.report([result], implementation, 0.0).rerun(result)))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, CaseFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        source = self.vector.path if self.vector is not None else "ctxconf properties"
        return source, None, self.name
