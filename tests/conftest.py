"""Shared fixtures: the catalog, the bundled vectors, and a way to certify a
kernel in-process or over stdio and get its case results back."""

from __future__ import annotations

import fcntl
import hashlib
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# The suite's own hypothesis tests: a fast derandomized profile for CI, a thorough one on demand
# (HYPOTHESIS_PROFILE=thorough). Certification runs use conformance.properties.runner.PROFILES.
settings.register_profile("ci", max_examples=30, derandomize=True, deadline=None, database=None,
                          suppress_health_check=list(HealthCheck))
settings.register_profile("thorough", max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Scratch in memory. The run makes tens of thousands of files and folders (a case directory per provider case,
# a folder per certification, sockets, reports), and on the development and CI machines' ext4 each file made
# costs 0.1 to 0.7 ms, against 15 us on tmpfs: the provider half of the self-test ran in half the wall clock
# and a third of the system time there (docs/speed.md). Set here, before pytest makes its base directory and
# pytest-xdist its workers, which inherit it; an explicit TMPDIR, or a /dev/shm that is missing, read-only or
# small (a container's 64 MB), is left as it is.
_RAM_DISK = Path("/dev/shm")
if "TMPDIR" not in os.environ and _RAM_DISK.is_dir() and os.access(_RAM_DISK, os.W_OK | os.X_OK):
    _free = os.statvfs(_RAM_DISK)
    if _free.f_bavail * _free.f_frsize >= 4 * 2**30:
        import tempfile
        os.environ["TMPDIR"] = str(_RAM_DISK)
        tempfile.tempdir = None  # found again from TMPDIR at its next use

from conformance.data import vectors as vectors_mod
from conformance.data import catalog as catalog_mod
from conformance.data import paths
from conformance.bindings.base import KERNEL_PROTOCOL
from conformance.bindings.python import PythonBinding
from conformance.bindings.stdio import StdioBinding
from conformance.engine.connection import Connection
from conformance.commands.funnel import run_cases

ROOT = Path(__file__).resolve().parent.parent
SHIMS = Path(__file__).resolve().parent / "shims"
RUNNERS = paths.RUNNERS / "python"
SHIM = f"{sys.executable} {RUNNERS / 'stdio_shim.py'}"
REFERENCE_SHIM = f"{SHIM} conformance.reference.kernel:create"


@pytest.fixture(scope="session")
def catalog():
    return catalog_mod.load()


@pytest.fixture(scope="session")
def kernel_vectors(catalog):
    return vectors_mod.load_dir("kernel", catalog)


@pytest.fixture(scope="session")
def provider_vectors(catalog):
    return vectors_mod.load_dir("provider", catalog)


def certify_python(factory, vectors, timeout: float = 10.0):
    with Connection(lambda: PythonBinding("test", KERNEL_PROTOCOL, timeout, factory=factory)) as connection:
        return run_cases("kernel", connection, vectors, None, ROOT)


def certify_stdio(command: str, vectors, workdir: Path, timeout: float = 10.0):
    with Connection(lambda: StdioBinding(command, KERNEL_PROTOCOL, "kernel-protocol.json", workdir, timeout)) as c:
        return run_cases("kernel", c, vectors, None, workdir)


def failed_requirements(results) -> set[str]:
    return {f.requirement for r in results for f in r.failures()}


def ctxconf(*args: str, cwd: Path = ROOT, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run the installed command line as a user would."""
    return subprocess.run([sys.executable, "-m", "conformance", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT)})


MANIFESTS = ROOT / "examples" / "manifests"


def certify_provider(factory, manifest_name: str, vectors, run_dir: Path, command: str | None = None):
    from conformance.data import manifest as manifest_mod
    from conformance.bindings.base import PROVIDER_PROTOCOL

    manifest = manifest_mod.load(MANIFESTS / f"{manifest_name}.yaml")
    if command:
        opener = lambda: StdioBinding(command, PROVIDER_PROTOCOL, "provider-protocol.json", run_dir, 10.0)
    else:
        opener = lambda: PythonBinding("test", PROVIDER_PROTOCOL, 10.0, factory=factory)
    with Connection(opener) as connection:
        return run_cases("provider", connection, vectors, None, run_dir, manifest)


def processes_under(folder: Path) -> list[int]:
    """Processes whose working directory lies in `folder`: what a test's launches left running. (A
    pattern over command lines would also match other tests' processes under pytest-xdist.)"""
    base, found = folder.resolve(), []
    for entry in Path("/proc").iterdir():
        try:
            cwd = (entry / "cwd").resolve(strict=True) if entry.name.isdigit() else None
        except OSError:
            continue
        if cwd is not None and (cwd == base or base in cwd.parents):
            found.append(int(entry.name))
    return found


def _shared_folder(tmp_path_factory, config) -> Path:
    """The run's base directory, which every pytest-xdist worker of one run shares and the next run does not."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if hasattr(config, "workerinput") else base


@pytest.fixture(scope="session", autouse=True)
def disk_cache(tmp_path_factory, request):
    """Each vector file is parsed, and each passed property search drawn, once per run, by whichever worker or
    command line first needs it (conformance/data/disk_cache.py). The test of the in-process replay unsets it,
    and the benchmark's generation timings ignore it."""
    from conformance.data.disk_cache import ENV
    folder = _shared_folder(tmp_path_factory, request.config) / "cache"
    previous = os.environ.get(ENV)
    os.environ[ENV] = str(folder)
    yield folder
    if previous is None:
        os.environ.pop(ENV, None)
    else:
        os.environ[ENV] = previous


@pytest.fixture(scope="session")
def run_once(tmp_path_factory, request):
    """`run_once(name, compute)`: compute() once per pytest run, under any number of pytest-xdist workers. The
    first test, in any worker, to ask for a name computes it while holding the name's lock, and every other
    test that asks reads the pickled result back (or waits for it). The results live in the run's base
    directory, which every worker of one run shares and the next run does not."""
    folder = _shared_folder(tmp_path_factory, request.config) / "run-once"
    folder.mkdir(exist_ok=True)

    def once(name: str, compute):
        stem = hashlib.sha1(name.encode()).hexdigest()
        done = folder / f"{stem}.pickle"
        with open(folder / f"{stem}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not done.exists():
                (folder / f"{stem}.part").write_bytes(pickle.dumps(compute()))
                (folder / f"{stem}.part").replace(done)
            return pickle.loads(done.read_bytes())

    return once


@pytest.fixture(scope="session")
def selftest_outcome(run_once):
    """The self-test's outcome for a subject (ci profile), certified once per pytest run."""
    from conformance.commands import selftest
    return lambda subject: run_once(f"selftest {subject.key!r}", lambda: selftest.certify(subject, "ci", None))


@pytest.fixture(scope="session")
def selftest_part(run_once):
    """The cases of one of selftest.parts() of a subject (ci profile), certified once per pytest run."""
    from conformance.commands import selftest
    return lambda subject, part: run_once(f"selftest {subject.key!r} part {part}",
                                          lambda: selftest.certify_part(subject, part, "ci", None))


# Files holding single tests of a minute or more on a loaded machine (measured with -n 4): the packaging test,
# the demo matrix (two mutants' counterexamples shrunk), the plugin's mutant under xdist, the merged matrix
# shards, the CI script's fresh install, a search of 300 large scenarios; and the plugin-launching tests, five of
# 35 to 55 s that mostly wait out plugins' shutdown graces: handed out last, they ran one after another on one
# worker for the run's last three minutes while the others sat idle.
LONG = ("test_selftest.py", "test_packaging.py", "test_matrix.py", "test_pytest_plugin.py", "test_shards.py",
        "test_ci_integration.py", "test_scenario_space.py", "test_launch_plugins.py")


def pytest_collection_modifyitems(items):
    """The self-test is most of the run, and the files in LONG hold long single tests: hand them to the workers
    first, so that the short tests fill the gaps at the end instead of one long test running alone. The tests
    that gather what other tests certify (marked `gathers`) come last, when the other workers have certified
    it all."""
    items.sort(key=lambda item: (item.get_closest_marker("gathers") is not None, item.path.name not in LONG))
