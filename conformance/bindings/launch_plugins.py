"""The plugin-launching mode of a kernel binding (`ctxconf kernel
--launch-plugins`): instead of an address, Load hands the kernel, for each
provider, the command that starts a fake provider plugin
(bindings/fake_plugin.py), and the kernel launches it with its own plugin
machinery. The plugins relay every call to the suite's fake providers, so
every kernel vector and property runs unchanged; what they observe of their
host (cookie, protocol version, broker offers, the callback channel, shutdown)
comes back as their reports, which kernel_checks.check_plugins judges.

It wraps any kernel binding: python, stdio or gRPC.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from conformance.bindings import process_tree
from conformance.bindings.base import Binding, OnCallback, no_callbacks
from conformance.bindings.fake_services import FakeServers, Relay, hang_limit
from conformance.bindings.go_plugin_protocol import DEFAULT_COOKIE
from conformance.bindings.grpc_wire import SocketDir

FEATURE = "launch_plugins"
# What starting one fake plugin (a Python process serving gRPC) may cost the suite, on a loaded machine: a Load
# that launches 64 of them is given that much longer than the per-call timeout, since the time is the suite's.
LAUNCH_ALLOWANCE = 0.5
SHUTDOWN_GRACE = 5.0  # after the kernel is done with a configuration, for its plugins to be gone
# Planted in the kernel's own environment: a plugin that is handed it got more than an allowlist (K-PLUGIN-ENV).
PLANTED_SECRET = ("CTXCONF_KERNEL_API_KEY", "planted-by-ctxconf-not-for-plugins")


class LaunchingKernel:
    def __init__(self, inner: Binding, workdir: Path, timeout: float, cookie: tuple[str, str] = DEFAULT_COOKIE):
        self.inner, self.timeout, self.cookie = inner, timeout, cookie
        self.sockets = SocketDir(workdir)
        self.relay = Relay(timeout)
        self.fakes = FakeServers(self.sockets, self.relay)
        self.loads = 0
        self.config: dict | None = None
        self.reports: list[Path] = []     # this configuration's plugin reports
        self.launched: set[int] = set()   # every plugin pid seen, so that none outlives the run
        self.closed = False
        self.stopped = False  # told to stop at the end of a case (R-PLUGIN-LIFETIME)
        self.bypassed: list[str] = []  # provider calls the kernel made round its plugins, this configuration
        self.planted = self._plant()
        inner.suite_seconds = self.suite_seconds  # its per-call timeout is the kernel's time, not our plugins'

    def _plant(self) -> bool:
        """Put the secret in the environment the kernel will run with, where the suite decides it: a launched
        kernel's (before it starts), or the suite's own for one in this process. Not one already running."""
        process = getattr(self.inner, "process", None)
        if process is not None and process.process is None:
            process.env[PLANTED_SECRET[0]] = PLANTED_SECRET[1]
            return True
        if self.inner.name == "python":
            os.environ[PLANTED_SECRET[0]] = PLANTED_SECRET[1]
            return True
        return False

    @property
    def name(self) -> str:
        return f"{self.inner.name}+plugins"

    @property
    def features(self) -> tuple[str, ...]:
        # The providers sit behind real gRPC connections now, whatever the kernel's own binding. Once told to
        # stop, it reloads no more.
        inner = [f for f in self.inner.features if not (self.stopped and f == "reload")]
        return tuple(dict.fromkeys((*inner, "real_transport", "concurrent_callbacks", FEATURE)))

    @property
    def implementation(self) -> dict:
        return self.inner.implementation

    @property
    def broken(self) -> bool:
        return self.inner.broken

    @property
    def closing_note(self) -> str | None:
        return self.inner.closing_note

    def start(self) -> dict:
        return self.inner.start()

    def request(self, op: str, fields: dict, on_callback: OnCallback = no_callbacks) -> dict:
        if op == "load":
            self.config = fields["config"]
            fields = {**fields, "config": self._launchable(fields["config"])}
        self.relay.on_callback = on_callback
        extra = LAUNCH_ALLOWANCE * len(fields["config"]["providers"]) if op == "load" else 0.0
        try:
            with _longer_timeout(self.inner, extra):
                result = self.inner.request(op, fields, self._direct(on_callback))
        finally:
            self.relay.on_callback = no_callbacks
        if op == "assemble":
            self.relay.settle(self.relay.hang_limit)
        return result

    def suite_seconds(self) -> float:
        """The suite's own time while the kernel works: its fake plugins starting up (each one serving says how
        long it took; one still starting has taken its age so far) and its fake providers answering them."""
        served = {launch["pid"]: launch["startup_seconds"] for report in self.reports for launch in _read(report)
                  if "startup_seconds" in launch}
        # This load's plugins only (their reports are named load<N>-<i>): one kept from an earlier load has long
        # served, and its age would give the kernel back time forever.
        this_load = str(self.sockets.path / f"load{self.loads}-")
        starting = {pid: age for pid, age in process_tree.ages_of(this_load).items() if pid not in served}
        return sum(served.values()) + sum(starting.values()) + self.relay.suite_time.seconds()

    def _direct(self, on_callback: OnCallback) -> OnCallback:
        """The harness's own callback route, which a kernel in this mode uses for its model providers'
        CountTokens only: a provider call on it went round the plugin the kernel launched, and is noted."""
        def call(name: str, provider: str | None, request: dict) -> dict:
            if name != "CountTokens":
                self.bypassed.append(f"{name} to {provider}")
            return on_callback(name, provider, request)
        return call

    def _launchable(self, config: dict) -> dict:
        """The config with each provider's command: a fake plugin relaying to a fake provider served now."""
        self.fakes.stop()
        self.bypassed = []
        self.relay.hang_limit = hang_limit(config, self.timeout)
        self.loads += 1
        self.reports, providers = [], []
        for index, declared in enumerate(config["providers"]):
            declared = dict(declared)
            behaviour = declared.pop("plugin", {})  # the suite's, for the fake plugin: never shown to the kernel
            report = self.sockets.path / f"load{self.loads}-{index}.jsonl"
            report.touch()
            self.reports.append(report)
            command = [sys.executable, "-m", "conformance.bindings.fake_plugin", "--name", declared["name"],
                       "--relay", self.fakes.provider(declared["name"]), "--report", str(report),
                       "--cookie", "=".join(self.cookie)]
            counted = next((m for m in config.get("models", []) if m.get("count_tokens")), None)
            if counted:  # a count through the kernel for a model with a tokenizer (K-COUNT-RESOLUTION)
                command += ["--probe-model", f"{counted.get('provider', '')}/{counted['id']}"]
            if behaviour.get("ignores_stop"):
                command.append("--ignore-stop")
            if behaviour.get("no_handshake"):
                command.append("--no-handshake")
            if behaviour.get("counts_at_offer"):
                command.append("--count-at-offer")
            if behaviour.get("handshake_delay_seconds"):
                command += ["--handshake-delay", str(behaviour["handshake_delay_seconds"])]
            providers.append({**declared, "command": command})
        return {**config, "providers": providers}

    def end_case(self, stop: bool = False) -> list[dict]:
        """The kernel is done with this configuration: told so by an empty one (a kernel that reloads, unless the
        case asks for `stop`) or by stop. Then what every plugin of the case observed, `exited` saying whether it
        was gone in time."""
        if self.config is None:
            return []
        config, reports, self.config = self.config, self.reports, None
        reloads = "reload" in self.inner.features
        if not self.inner.broken:
            # Told, not torn down: closing the binding kills the kernel's whole tree, plugins included,
            # which would hide a kernel that leaves them running.
            if reloads and not stop:
                self.inner.request("load", {"config": {**config, "providers": []}})
            else:
                self._stop_inner()
                self.stopped = True  # it is not used again: a fresh one serves the next case
        launches = [launch for report in reports for launch in _read(report)]
        self._wait_for_exit(launches)
        if reloads and not self.stopped and not self.inner.broken and not all(launch["exited"] for launch in launches):
            # R-PLUGIN-LIFETIME: a kernel may keep a configuration's plugins until it stops. Told to stop, it
            # must let them go; it is not used again (a fresh one serves the next case).
            self._stop_inner()
            self.stopped = True
            launches = [launch for report in reports for launch in _read(report)]  # what stopping made them do
            self._wait_for_exit(launches)
        # Plugins left running are charged already (K-PLUGIN-SHUTDOWN): killed before the kernel's binding closes,
        # so that closing does not charge them a second time, as processes the kernel left behind.
        self._kill_leftovers()
        if not reloads or self.stopped:
            self._close_inner()
        return launches

    def _wait_for_exit(self, launches: list[dict]) -> None:
        """Each launch's `exited`: whether it was gone within SHUTDOWN_GRACE."""
        deadline = time.monotonic() + SHUTDOWN_GRACE
        for launch in launches:
            self.launched.add(launch["pid"])
            while _alive(launch["pid"]) and time.monotonic() < deadline:
                time.sleep(0.02)
            launch["exited"] = not _alive(launch["pid"])
            launch["handed_secret"] = PLANTED_SECRET[0] in launch.get("env", ()) if self.planted else None

    def _stop_inner(self) -> None:
        """Stop, once: closing the binding afterwards must not send it again."""
        self.inner.request("stop", {})
        self.inner.stopped = True

    def _close_inner(self) -> None:
        if not self.closed:
            self.closed = True
            self.inner.close()

    def _kill_leftovers(self) -> None:
        """A plugin the kernel left running has been charged already; it must not outlive the run."""
        killed = [p for p in self.launched if _alive(p) and self._ours(p)]
        for pid in killed:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 1.0
        for pid in killed:
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.01)
        for pid in [p for p in self.launched if _zombie(p)]:
            try:
                os.waitpid(pid, os.WNOHANG)  # ours when the kernel runs in-process, or when it was reparented to us
            except ChildProcessError:
                pass

    def _ours(self, pid: int) -> bool:
        """A fake plugin of this binding, not a process that has since been given the same pid."""
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                return str(self.sockets.path).encode() in cmdline.read()
        except OSError:
            return False

    def stderr(self) -> str:
        return self.inner.stderr()

    def close(self) -> None:
        self._close_inner()
        if self.inner.name == "python":
            os.environ.pop(PLANTED_SECRET[0], None)
        for report in self.sockets.path.glob("load*.jsonl"):
            self.launched |= {launch["pid"] for launch in _read(report)}
        self._kill_leftovers()
        self.fakes.stop()
        self.sockets.remove()


@contextmanager
def _longer_timeout(binding: Binding, seconds: float):
    """The binding's per-call timeout, `seconds` longer for one call. Each binding keeps it as `timeout`, on itself
    or on the process it talks through (python, stdio, gRPC)."""
    holders = [h for h in (binding, getattr(binding, "process", None))
               if isinstance(getattr(h, "timeout", None), (int, float))]
    saved = [h.timeout for h in holders]
    for holder in holders:
        holder.timeout += seconds
    try:
        yield
    finally:
        for holder, timeout in zip(holders, saved):
            holder.timeout = timeout


def _alive(pid: int) -> bool:
    row = process_tree.stat(pid)
    return row is not None and row[0] not in "ZX"


def _zombie(pid: int) -> bool:
    row = process_tree.stat(pid)
    return row is not None and row[0] == "Z"


def _read(report: Path) -> list[dict]:
    """One record per launch (a plugin the kernel restarted is a second launch), from the event lines."""
    launches: dict[int, dict] = {}
    for line in report.read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by a kill; the others still tell the story
        launch = launches.setdefault(event["pid"], {"pid": event["pid"], "offers": [], "probe": None,
                                                    "probe_model": None, "probe_offer": None, "crashed": False,
                                                    "shutdown": False})
        kind = event["event"]
        if kind == "started":
            launch.update(name=event["name"], env=event["env"], cookie=event["cookie"],
                          protocol_versions=event["protocol_versions"])
        elif kind == "offer":
            launch["offers"].append(event["service_id"])
        elif kind in ("probe", "probe_model", "probe_offer"):
            launch[kind] = {k: v for k, v in event.items() if k not in ("event", "pid", "t")}
        elif kind == "crash":
            launch["crashed"] = True
        elif kind in ("shutdown", "terminated"):  # asked to stop: the drain of drain-then-kill
            launch["shutdown"] = True
        elif kind == "refused":
            launch["refused"] = event["why"]
        elif kind == "serving":
            launch["startup_seconds"] = event["startup_seconds"]
    return list(launches.values())
