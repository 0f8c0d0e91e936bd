"""The plugin-launching mode (ctxconf kernel --launch-plugins): the kernel
launches the fake providers as go-plugin plugins with its own machinery.
The self-test certifies the reference kernel in this mode over stdio and
catches the plugin-machinery mutants (tests/test_selftest.py); these tests
run the command line end to end, and count the processes a run leaves."""

import json
import os
import subprocess
import sys

import pytest

from conformance.bindings import process_tree
from conformance.proofs import kernel_mutants
from tests.conftest import RUNNERS, ROOT

PLUGINS = "kernel/plugins/"
NUL = b"\0"


def _run(tmp_path, *target: str) -> tuple[subprocess.CompletedProcess, dict]:
    report = tmp_path / "report.json"
    # Every socket, report and plugin of the run lives under tmp_path (via TMPDIR), so that what the run
    # left behind can be told from what other tests (other xdist workers) run at the same time.
    run = subprocess.run([sys.executable, "-m", "conformance", "kernel", "--launch-plugins", *target, "-k", PLUGINS,
                          "--no-properties", "--report", str(report)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=180, env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)})
    return run, json.loads(report.read_text())


def _left_running(tmp_path) -> list[str]:
    """Processes still running whose command line or working directory is inside tmp_path."""
    mark = str(tmp_path).encode()
    left = []
    for pid, row in process_tree.process_table().items():
        if row[0] in "ZX" or pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                argv = cmdline.read()
            cwd = os.readlink(f"/proc/{pid}/cwd").encode()
        except OSError:
            continue
        if mark in argv or cwd.startswith(mark):
            left.append(f"{pid}: {argv.replace(NUL, b' ').decode(errors='replace')[:200]}")
    return left


def _status(report: dict, requirement: str) -> str:
    return next(r["status"] for r in report["requirements"] if r["id"] == requirement)


@pytest.mark.parametrize("target", [(), ("--stdio", f"{sys.executable} {RUNNERS / 'stdio_shim.py'} "
                                                   "conformance.reference.kernel:create"),
                                    ("--grpc-cmd", f"{sys.executable} {RUNNERS / 'grpc_kernel_harness.py'} "
                                                   "conformance.reference.kernel:create")],
                         ids=["python", "stdio", "grpc"])
def test_the_reference_kernel_launches_its_plugins_over_every_binding(tmp_path, target):
    run, report = _run(tmp_path, *target)
    assert run.returncode == 0, run.stdout + run.stderr
    assert report["binding"].endswith("+plugins")
    for requirement in ("K-CALLBACK-CHANNEL", "K-PLUGIN-HANDSHAKE", "K-PLUGIN-SHUTDOWN", "K-ERR-SOURCE-UNAVAILABLE"):
        assert _status(report, requirement) == "pass", requirement
    assert _left_running(tmp_path) == []


class LeavesPluginsRunningWithoutReload(kernel_mutants.LeavesPluginsRunning):
    """Told to stop at the end of each case instead of given an empty configuration: its leftovers must be
    seen before the suite tears its process tree down."""
    FEATURES = ["count_tokens"]


@pytest.mark.parametrize("target", [("--python", "conformance.proofs.kernel_mutants:LeavesPluginsRunning"),
                                    ("--stdio", f"{sys.executable} {RUNNERS / 'stdio_shim.py'} "
                                                "tests.test_launch_plugins:LeavesPluginsRunningWithoutReload")],
                         ids=["reloads-in-process", "stopped-over-stdio"])
def test_plugins_left_running_are_charged_then_killed(tmp_path, target):
    run, report = _run(tmp_path, *target)
    assert run.returncode == 0, run.stdout + run.stderr  # a SHOULD: a warning, not a failed certification
    assert "warnings (SHOULD): K-PLUGIN-SHUTDOWN" in run.stdout
    assert _status(report, "K-PLUGIN-SHUTDOWN") == "fail"
    assert _status(report, "K-CALLBACK-CHANNEL") == "pass"
    assert _left_running(tmp_path) == []


def test_without_the_mode_the_plugin_checks_are_skipped_not_passed(tmp_path):
    report = tmp_path / "report.json"
    run = subprocess.run([sys.executable, "-m", "conformance", "kernel", "-k", PLUGINS, "--no-properties",
                          "--report", str(report)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 0, run.stdout + run.stderr
    data = json.loads(report.read_text())
    for requirement in ("K-CALLBACK-CHANNEL", "K-PLUGIN-HANDSHAKE", "K-PLUGIN-SHUTDOWN"):
        assert _status(data, requirement) == "skip"
    assert {c["skipped"] for c in data["cases"]} == {
        "needs the plugin-launching mode (--launch-plugins), which the python binding does not offer"}


def test_a_fake_plugin_refuses_to_run_without_its_host(tmp_path):
    # As a go-plugin plugin does: started by hand, without the cookie, it says what it is and exits 1.
    env = {k: v for k, v in os.environ.items() if k != "PLUGGABLEHARNESS_AGENT_PLUGIN"}
    report = tmp_path / "plugin.jsonl"
    run = subprocess.run([sys.executable, "-m", "conformance.bindings.fake_plugin", "--name", "x", "--relay",
                          "unix:/nowhere", "--report", str(report)], capture_output=True, text=True, timeout=30,
                         env={**env, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 1 and "meant to be launched" in run.stderr
    events = [json.loads(line) for line in report.read_text().splitlines()]
    assert [e["event"] for e in events] == ["started", "refused"] and events[0]["cookie"] == "missing"


class BypassesItsPlugins(kernel_mutants.ReferenceKernel):
    """Launches its plugins, then asks the harness for its providers' answers instead of the plugins."""

    def routed(self, call):
        self.upstream = call
        return call


def test_a_kernel_that_goes_round_its_plugins_is_a_case_error(tmp_path):
    """Found by mutation analysis: the suite used to answer a launched provider's calls on the harness's own
    route too, so a kernel that never talked to its plugins was certified in this mode."""
    run, report = _run(tmp_path, "--python", "tests.test_launch_plugins:BypassesItsPlugins")
    assert run.returncode == 1, run.stderr
    errors = [c["error"] for c in report["cases"] if c.get("error")]
    assert errors and all("through the harness's own callbacks" in e for e in errors), errors
    assert _left_running(tmp_path) == []


@pytest.mark.parametrize("target", [("--python", "tests.test_launch_plugins:LeavesPluginsRunningWithoutReload"),
                                    ("--stdio", f"{sys.executable} {RUNNERS / 'stdio_shim.py'} "
                                                "tests.test_launch_plugins:LeavesPluginsRunningWithoutReload")],
                         ids=["python", "stdio"])
def test_a_kernel_that_does_not_reload_is_told_to_stop_once(tmp_path, target):
    """Without reload, each case's kernel is stopped at the end of the case; closing the binding afterwards must
    not send stop a second time (issue 25)."""
    trace = tmp_path / "trace.jsonl"
    run, _ = _run(tmp_path, *target, "--trace", str(trace))
    assert run.returncode == 0, run.stdout[-2000:]
    rows = [json.loads(line) for line in trace.read_text().splitlines()]
    stops = [r for r in rows if r["message"].get("op") == "stop"]
    hellos = [r for r in rows if r["message"].get("op") == "hello"]
    assert stops and len(stops) == len(hellos), (len(stops), len(hellos))  # one stop per kernel process started


def test_what_a_kernel_stopped_mid_op_never_got_to_do_is_not_judged():
    # A load cut short by a timeout: the suite stopped the kernel, so plugins it never offered the callback
    # channel, and never shut down, show nothing about it. What it did at launch is still judged.
    from conformance.engine.kernel_checks import check_plugins
    from conformance.engine.kernel_driver import Transcript
    from conformance.engine.scenario import KernelScenario
    launch = {"pid": 1, "name": "p", "offers": [], "probe": None, "probe_model": None, "crashed": False,
              "shutdown": False, "exited": False, "cookie": "ok", "protocol_versions": "1"}
    scenario = KernelScenario.__new__(KernelScenario)
    whole = {f.requirement for f in check_plugins(Transcript(plugins=[launch]), scenario)}
    cut = {f.requirement for f in check_plugins(Transcript(plugins=[launch], error="no answer"), scenario)}
    assert whole == {"K-PLUGIN-HANDSHAKE", "K-CALLBACK-CHANNEL", "K-PLUGIN-SHUTDOWN"}
    assert cut == {"K-PLUGIN-HANDSHAKE"}


def test_the_suites_plugins_starting_slowly_are_not_charged_to_the_kernel(kernel_vectors, tmp_path, monkeypatch):
    # Each fake plugin (the suite's) takes 4 s more to start: the load of three takes longer than the 2 s
    # per-call timeout and its allowance, all of it the suite's time, which the kernel's timeout gives back.
    from conformance.bindings.launch_plugins import LaunchingKernel
    from conformance.bindings.python import PythonBinding
    from conformance.engine import kernel_run
    from conformance.engine.connection import Connection
    from conformance.reference.kernel import ReferenceKernel
    launchable = LaunchingKernel._launchable

    def slow(self, config):
        config = launchable(self, config)
        for provider in config["providers"]:
            provider["command"] = [sys.executable, "-c", "import runpy, time; time.sleep(4); "
                                   "runpy.run_module('conformance.bindings.fake_plugin', run_name='__main__')",
                                   *provider["command"][3:]]
        return config

    monkeypatch.setattr(LaunchingKernel, "_launchable", slow)
    vector = next(v for v in kernel_vectors if v.id == "kernel/plugins/callback-channel")
    binding = lambda: LaunchingKernel(PythonBinding("reference", "ctxconf-kernel/1", 2.0, factory=ReferenceKernel),
                                      tmp_path, 2.0)
    with Connection(binding) as connection:
        [result] = kernel_run.run_vectors(connection, [vector])
    assert result.status == "pass", (result.error, [f.message for f in result.failures()])


def test_a_load_the_scenario_lets_fail_is_judged_on_shutdown_not_on_offers():
    # A plugin that never handshakes (plugin: {no_handshake: true}): the kernel may fail the Load, and need not
    # have offered the callback channel to plugins it had not reached, but it must not leave them running.
    from conformance.engine.kernel_checks import check_plugins
    from conformance.engine.kernel_driver import Transcript
    from conformance.engine.scenario import KernelScenario
    launch = {"pid": 1, "name": "p", "offers": [], "probe": None, "probe_model": None, "crashed": False,
              "shutdown": False, "exited": False, "cookie": "ok", "protocol_versions": "1"}
    scenario = KernelScenario.__new__(KernelScenario)
    findings = check_plugins(Transcript(plugins=[launch], load_failed="UNAVAILABLE: no handshake"), scenario)
    assert {f.requirement for f in findings} == {"K-PLUGIN-HANDSHAKE", "K-PLUGIN-SHUTDOWN"}
    assert not next(f for f in findings if f.requirement == "K-PLUGIN-SHUTDOWN").passed


def test_only_a_scenario_with_a_plugin_that_never_handshakes_lets_load_fail_and_only_with_a_grpc_code():
    from conformance.bindings.base import CallFailed
    from conformance.engine.kernel_driver import _allowed_load_failure
    from conformance.engine.scenario import FakeProvider, KernelScenario
    silent = FakeProvider("silent", {}, None, {}, (), {"no_handshake": True})
    lets_fail = KernelScenario((), "m", (), (silent,), ())
    assert _allowed_load_failure(lets_fail, CallFailed("INTERNAL", "no handshake")) == "INTERNAL: no handshake"
    with pytest.raises(CallFailed):
        _allowed_load_failure(lets_fail, CallFailed("UNAVAILABLE_SOMEHOW", "not a gRPC code"))
    with pytest.raises(CallFailed):
        _allowed_load_failure(KernelScenario((), "m", (), (), ()), CallFailed("UNAVAILABLE", "no reason to fail"))
