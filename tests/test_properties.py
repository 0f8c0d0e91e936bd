"""The property layer: generated scenarios are valid vectors, runs are
reproducible, and a shrunk counterexample replays as an ordinary vector."""

import json
import subprocess
import sys

from hypothesis import given

from conformance import catalog as catalog_mod, schemas, vectors as vectors_mod
from conformance.bindings.base import KERNEL_PROTOCOL
from conformance.bindings.python import PythonBinding
from conformance.engine.connection import Connection
from conformance.properties import strategies
from conformance.properties.runner import PropertyRun, kernel_property
from conformance.reference.kernel import create
from conformance.proofs.kernel_mutants import MUTANTS
from tests.conftest import ROOT, ctxconf


@given(strategies.kernel_scenarios())
def test_generated_kernel_scenarios_are_valid_vectors(doc):
    assert schemas.problems("kernel-vector.json", {**doc, "requirements": ["K-PRIOR-SECTIONS"],
                                                   "invariant_requirements": ["K-PRIOR-SECTIONS"]}) == []


@given(strategies.provider_scenarios())
def test_generated_provider_scenarios_are_valid_vectors(doc):
    assert schemas.problems("provider-vector.json", {**doc, "requirements": ["P-FULL-CHAIN"],
                                                     "invariant_requirements": ["P-FULL-CHAIN"]}) == []


def _property(factory, **options):
    with Connection(lambda: PythonBinding("t", KERNEL_PROTOCOL, 10.0, factory=factory)) as connection:
        return kernel_property(connection, PropertyRun(**options))


def test_the_reference_kernel_holds_every_invariant():
    result = _property(create, profile="ci")
    assert result.status == "pass", [f.message for f in result.failures()][:3]
    assert len({f.requirement for f in result.findings}) >= 25, "the scenarios exercise most requirements"


SEEDED_RUN = """
import sys
from pathlib import Path
from conformance.bindings.base import KERNEL_PROTOCOL
from conformance.bindings.python import PythonBinding
from conformance.engine.connection import Connection
from conformance.properties.runner import PropertyRun, kernel_property
from conformance.proofs.kernel_mutants import MUTANTS
run = PropertyRun(profile="default", seed=1234, examples=80, shrink=False, counterexamples=Path(sys.argv[1]))
with Connection(lambda: PythonBinding("t", KERNEL_PROTOCOL, 10.0, factory=MUTANTS["HistoryToEveryone"])) as c:
    print(kernel_property(c, run).status)
"""


def test_a_seed_reproduces_the_same_counterexample(tmp_path):
    # Each certification run is its own process; without shrinking (bounded in seconds) the seed decides all.
    runs = [subprocess.run([sys.executable, "-c", SEEDED_RUN, str(tmp_path / d)], capture_output=True, text=True,
                           cwd=ROOT, timeout=120) for d in ("a", "b")]
    assert [r.stdout.strip() for r in runs] == ["fail", "fail"], runs[0].stderr[-500:]
    files = [sorted(p.name for p in (tmp_path / d).rglob("*.yaml")) for d in ("a", "b")]
    assert files[0] == files[1] and files[0]


def test_a_counterexample_replays_as_a_vector(tmp_path):
    result = _property(MUTANTS["TrustsStatedTokens"], profile="ci", examples=100, shrink_seconds=3,
                       counterexamples=tmp_path)
    assert result.status == "fail"
    [path] = list(tmp_path.rglob("*.yaml"))
    vector = vectors_mod.load_file(path, catalog_mod.load(), tmp_path)  # valid, and its id matches its place
    assert vector.id.startswith("kernel/counterexample/") and vector.doc["origin"]["tool"] == "hypothesis"
    replay = ctxconf("replay", str(path), "--python", "conformance.proofs.kernel_mutants:TrustsStatedTokens",
                     "--report", str(tmp_path / "r.json"))
    assert replay.returncode == 1
    failing = set(json.loads((tmp_path / "r.json").read_text())["summary"]["blocking_failures"])
    assert failing & set(vector.requirements)
    assert ctxconf("replay", str(path)).returncode == 0, "the reference kernel passes the same scenario"
    rerun = ctxconf("kernel", "--vectors", str(tmp_path), "--no-properties",
                    "--python", "conformance.proofs.kernel_mutants:TrustsStatedTokens")
    assert rerun.returncode == 1, "the normal vector runner reproduces it too"


def test_certification_reports_its_seed(tmp_path):
    run = ctxconf("kernel", "--examples", "5", "--seed", "77", "--report", str(tmp_path / "r.json"))
    assert run.returncode == 0 and "seed 77" in run.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["seed"] == 77 and any(c["id"].startswith("property/") for c in report["cases"])


def test_a_failure_is_shrunk_to_the_smallest_scenario_that_shows_it():
    """Hypothesis replays a failing example before it shrinks it; that replay must count as the same failure,
    or hypothesis stops at once and the report carries the first, unshrunk, scenario."""
    from hypothesis import strategies as st

    from conformance.engine.results import Finding
    from conformance.properties.runner import _search

    def attempt(doc):
        return [Finding("K-BUDGET-REJECT", doc["n"] <= 5, "over")], None
    for profile in ("ci", "default"):
        found = _search(PropertyRun(profile=profile), st.fixed_dictionaries({"n": st.integers(0, 100),
                                                                            "m": st.integers(0, 100)}), attempt)
        assert found.doc == {"n": 6, "m": 0}, (profile, found.doc)
