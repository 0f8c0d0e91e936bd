"""The wheel, not the checkout (issue 10): built and installed into a fresh
venv, the suite finds its vectors, schemas and runners inside the installed
package and certifies the references from a directory far from the checkout;
explain, diff and matrix work there too (issue 14)."""

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import yaml

from conformance.data import paths
from tests.conftest import ROOT

PUBLIC = ("schemas", "vectors", "runners", "examples")  # top-level in a checkout, conformance/shipped/ in a wheel


def _run(args: list, cwd: Path) -> subprocess.CompletedProcess:
    # No PYTHONPATH (the tests' own ctxconf() sets it to the checkout) and no active venv.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON") and k != "VIRTUAL_ENV"}
    run = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"{args}\n{run.stdout}\n{run.stderr}"
    return run


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts)


def _build_wheel(tmp_path: Path) -> Path:
    # From a copy: an in-tree build would write build/ and *.egg-info into the checkout.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source)
    for folder in ("conformance", *PUBLIC):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    # This venv's hatchling when it has one (the dev extra): then the build needs no package index.
    isolation = ["--no-build-isolation"] if importlib.util.find_spec("hatchling") else []
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w", tmp_path / "dist", source],
         tmp_path)
    [wheel] = (tmp_path / "dist").glob("ctxconf-*.whl")
    return wheel


def _install(wheel: Path, venv: Path) -> Path:
    """A fresh venv holding the wheel; its dependencies are borrowed from this venv."""
    _run([sys.executable, "-m", "venv", "--without-pip", venv], venv.parent)
    python = venv / "bin" / "python"
    # Install before the dependencies are visible: pip would otherwise see the editable ctxconf.
    _run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index", wheel],
         venv.parent)
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], venv.parent)
                .stdout.strip())
    # A directory named in a .pth is only put on sys.path, not scanned for .pth files itself, so
    # the editable install's finder there never runs and the checkout stays out of reach.
    borrowed = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    (site / "ctxconf-test-dependencies.pth").write_text("\n".join(sorted(borrowed)) + "\n")
    return python


def test_the_built_wheel_certifies_the_references_outside_the_checkout(tmp_path):
    venv = tmp_path / "venv"
    python = _install(_build_wheel(tmp_path), venv)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    installed = Path(_run([python, "-c", "from conformance.data import paths; print(paths.PACKAGE)"], elsewhere)
                     .stdout.strip())
    assert venv in installed.parents and ROOT not in installed.parents, installed
    for folder in PUBLIC:  # the checkout's top-level folders, inside the installed package
        assert _files(installed / "shipped" / folder) == _files(ROOT / folder), f"{folder}/ does not ship whole"
    for folder in ("reports/templates",):
        assert _files(installed / folder) == _files(paths.PACKAGE / folder), f"{folder}/ does not ship whole"
    assert (installed / "requirements.yaml").is_file() and (installed / "rulings.yaml").is_file()

    ctxconf = venv / "bin" / "ctxconf"
    _run([ctxconf, "requirements"], elsewhere)
    # The small hypothesis profile: what is shipped is proven by any whole run, and a default one costs more.
    assert "verdict: CONFORMANT" in _run([ctxconf, "provider", "--profile", "ci"], elsewhere).stdout
    assert "verdict: CONFORMANT" in _run([ctxconf, "kernel", "--profile", "ci"], elsewhere).stdout
    # The self-test launches the installed stdio shim for this variant's stdio run.
    _run([ctxconf, "selftest", "-k", "JoinedBySpace"], elsewhere)
    _the_dispute_commands_work_from_the_wheel(ctxconf, installed, elsewhere)


def _the_dispute_commands_work_from_the_wheel(ctxconf: Path, installed: Path, elsewhere: Path) -> None:
    """explain, diff and matrix (issue 14), with the templates, the demo and the matrix schema the wheel ships."""
    assert "spec: context/data-types.md#budget-mechanics" in _run([ctxconf, "explain", "K-BUDGET-REJECT"],
                                                                 elsewhere).stdout
    mutant = "conformance.proofs.kernel_mutants:PerSectionBudget"
    _run([ctxconf, "kernel", "--no-properties", "--report", "reference.json", "--html", "reference.html"], elsewhere)
    failing = subprocess.run([ctxconf, "kernel", "--no-properties", "--python", mutant, "--report", "mutant.json"],
                             cwd=elsewhere, capture_output=True, text=True, timeout=300)
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "<!DOCTYPE html>" in (elsewhere / "reference.html").read_text()
    diff = subprocess.run([ctxconf, "diff", "reference.json", "mutant.json"], cwd=elsewhere, capture_output=True,
                          text=True, timeout=60)
    assert diff.returncode == 1 and "K-BUDGET-REJECT" in diff.stdout and "pass -> fail" in diff.stdout, diff
    # The shipped demo's conforming entries, beside it so that its relative paths hold: its failing entries
    # would add only their counterexamples' shrinking (tests/test_matrix.py runs the whole demo).
    demo = yaml.safe_load((installed / "shipped" / "examples" / "matrix.yaml").read_text())
    demo["implementations"] = [entry for entry in demo["implementations"] if entry["expect"] == "conformant"]
    conforming = installed / "shipped" / "examples" / "conforming.yaml"
    conforming.write_text(yaml.safe_dump(demo))
    _run([ctxconf, "matrix", conforming], elsewhere)  # exit 0: every entry got the verdict it expects
    for name in ("ctxconf-matrix.html", "ctxconf-matrix.md", "ctxconf-matrix.json"):
        assert (elsewhere / name).stat().st_size > 1000, name
