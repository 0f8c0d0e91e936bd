"""The pytest plugin (issue 24): in a directory of its own, `pytest --ctxconf-kernel TARGET` collects one item
per vector plus the property item, fails a mutant on the requirement it breaks, writes JUnit XML carrying the
requirement ids, gives the serial verdict under -n 2 (the reference kernel's and a mutant's), turns baselined
failures into xfails, and is off unless asked for."""

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

from conformance.data import catalog as catalog_mod
from conformance.data import vectors as vectors_mod
from tests.conftest import ROOT

MUTANT = "conformance.proofs.kernel_mutants:PerSectionBudget"  # breaks K-BUDGET-REJECT


def _pytest(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)


def _report(path) -> dict:
    return json.loads(path.read_text())


def _verdict(report: dict) -> tuple:
    """What must not depend on how the cases were spread: the verdict, the failed requirements, each case's status."""
    return report["verdict"], sorted(r["id"] for r in report["requirements"] if r["status"] == "fail"), \
        sorted((c["id"], c["status"]) for c in report["cases"])


def test_the_reference_kernel_passes_one_item_per_vector(tmp_path):
    run = _pytest(tmp_path, "--ctxconf-kernel", "conformance.reference.kernel:create", "--ctxconf-args",
                  "--profile ci", "--collect-only", "-q")
    kernel_vectors = vectors_mod.load_dir("kernel", catalog_mod.load())
    items = [line for line in run.stdout.splitlines() if "::ctxconf-kernel::" in line]
    assert len(items) == len(kernel_vectors) + 1, run.stdout[-2000:]
    assert any(line.endswith("::property/kernel/generated-scenarios") for line in items)
    run = _pytest(tmp_path, "--ctxconf-kernel", "conformance.reference.kernel:create", "--ctxconf-args=--profile ci",
                  "--ctxconf-report", "serial.json")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "verdict: CONFORMANT" in run.stdout
    parallel = _pytest(tmp_path, "-n", "2", "--ctxconf-kernel", "conformance.reference.kernel:create",
                       "--ctxconf-args=--profile ci", "--ctxconf-report", "parallel.json")
    assert parallel.returncode == 0 and "verdict: CONFORMANT" in parallel.stdout, parallel.stdout[-3000:]
    assert _verdict(_report(tmp_path / "serial.json")) == _verdict(_report(tmp_path / "parallel.json"))


def test_a_mutant_fails_its_requirement_in_junit_and_under_xdist(tmp_path):
    serial = _pytest(tmp_path, "--ctxconf-kernel", MUTANT, "--ctxconf-args=--profile ci --shrink-work 0",
                     "--junitxml", "serial.xml", "--ctxconf-report", "serial.json")
    assert serial.returncode == 1 and "verdict: NOT CONFORMANT" in serial.stdout, serial.stdout[-3000:]
    cases = ElementTree.parse(tmp_path / "serial.xml").getroot().iter("testcase")
    failed = [c for c in cases if c.find("failure") is not None]
    # A vector case carries the requirements it cites; every failed case, the ones it failed.
    assert failed and all(any(p.get("name") == "failed" for p in c.iter("property")) for c in failed)
    assert all(any(p.get("name") == "requirement" for p in c.iter("property")) for c in failed if "property/" not in c.get("name"))
    assert any(p.get("name") == "failed" and p.get("value") == "K-BUDGET-REJECT" for c in failed for p in c.iter("property"))
    assert "ctxconf-case" not in (tmp_path / "serial.xml").read_text()  # the worker's transport stays out of it

    parallel = _pytest(tmp_path, "-n", "2", "--ctxconf-kernel", MUTANT, "--ctxconf-args=--profile ci --shrink-work 0",
                       "--ctxconf-report", "parallel.json")
    assert parallel.returncode == 1, parallel.stdout[-3000:]
    assert _verdict(_report(tmp_path / "serial.json")) == _verdict(_report(tmp_path / "parallel.json"))
    assert "K-BUDGET-REJECT" in _verdict(_report(tmp_path / "serial.json"))[1]


def test_a_baselined_failure_is_an_xfail(tmp_path):
    (tmp_path / "baseline.yaml").write_text("- {requirement: K-BUDGET-REJECT, reason: tracked as issue 7}\n")
    run = _pytest(tmp_path, "--ctxconf-kernel", MUTANT, "-rx",
                  "--ctxconf-args=--no-properties --baseline baseline.yaml", "-k", "budget-covers-all-own-sections")
    assert run.returncode == 0, run.stdout[-3000:]
    assert "1 xfailed" in run.stdout and "tracked as issue 7" in run.stdout


def test_the_plugin_is_off_unless_asked_for(tmp_path):
    (tmp_path / "test_nothing.py").write_text("def test_one():\n    pass\n")
    run = _pytest(tmp_path, "-q")
    assert run.returncode == 0 and "1 passed" in run.stdout and "ctxconf" not in run.stdout


@pytest.mark.parametrize("args, says", [(("--ctxconf-kernel", "a:b", "--ctxconf-provider", "c:d"), "one role at a time"),
                                        (("--ctxconf-kernel", "reference", "--ctxconf-args=--frobnicate"),
                                         "are not valid")])
def test_bad_options_are_a_usage_error(tmp_path, args, says):
    run = _pytest(tmp_path, *args)
    assert run.returncode == 4 and says in run.stderr, run.stdout + run.stderr


def test_a_provider_is_certified_with_its_manifest(tmp_path):
    # The manifest beside the run, in its own directory as the tests above run: a path into the checkout would
    # make pytest take the checkout's configuration (its addopts' -n 4) for this run's.
    shutil.copy(ROOT / "examples" / "manifests" / "filereader.yaml", tmp_path)
    run = _pytest(tmp_path, "--ctxconf-provider", "conformance.reference.filereader:create", "--ctxconf-manifest",
                  "filereader.yaml", "--ctxconf-args=--profile ci")
    assert run.returncode == 0 and "verdict: CONFORMANT" in run.stdout, run.stdout[-3000:]
