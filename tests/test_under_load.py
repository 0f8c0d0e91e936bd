"""Verdicts that do not depend on the machine's load (issue 25): with both cores kept busy by CPU hogs the
test starts and stops, the self-test finds the reference kernel clean over every binding and with
--launch-plugins, and a mutant run twice with one seed, once quiet and once under load, gives reports
`ctxconf diff` finds equal, with the same counterexample."""

import os
import signal
import subprocess
import sys

import pytest

from tests.conftest import ctxconf

pytestmark = pytest.mark.load

HOG = "import time\nend = time.monotonic() + 300\nwhile time.monotonic() < end:\n    pass\n"


@pytest.fixture
def cpu_hogs():
    """One busy process per core, for this test only (and never past five minutes)."""
    hogs = [subprocess.Popen([sys.executable, "-c", HOG], start_new_session=True) for _ in range(os.cpu_count() or 2)]
    yield
    for hog in hogs:
        os.killpg(hog.pid, signal.SIGKILL)
        hog.wait()


def test_the_self_test_of_the_reference_kernel_is_clean_on_a_busy_machine(cpu_hogs):
    """The self-test certifies the reference kernel over python, stdio, gRPC and stdio with --launch-plugins:
    starting plugins, fakes and the suite's own servers on a busy machine is never charged to it."""
    run = ctxconf("selftest", "-k", "ReferenceKernel", timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-1000:]
    assert "4/4 conforming runs clean" in run.stdout, run.stdout[-3000:]


def test_one_seed_gives_one_report_quiet_or_loaded(tmp_path, request):
    mutant = ("--python", "conformance.proofs.kernel_mutants:TrustsStatedTokens")

    def certify(name: str):
        run = ctxconf("kernel", *mutant, "--profile", "default", "--seed", "7", "--report", str(tmp_path / f"{name}.json"),
                      "--counterexamples", str(tmp_path / name), timeout=600)
        assert run.returncode == 1, run.stdout[-2000:]
        return sorted(p.read_text() for p in (tmp_path / name).rglob("*.yaml"))

    quiet = certify("quiet")
    request.getfixturevalue("cpu_hogs")
    loaded = certify("loaded")
    assert quiet and quiet == loaded  # the same counterexample, shrunk as far
    diff = ctxconf("diff", str(tmp_path / "quiet.json"), str(tmp_path / "loaded.json"))
    assert diff.returncode == 0, diff.stdout
