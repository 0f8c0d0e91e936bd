"""Sweeps: a vector run again at every value of an integer input, for both roles; bad sweeps are exit 2
naming the file and the field; a failure names its value, and `replay --at` reruns that value alone."""

import copy

import pytest
import yaml

from conformance.data import vectors as vectors_mod
from conformance.bindings.base import KERNEL_PROTOCOL
from conformance.bindings.python import PythonBinding
from conformance.data import sweep
from conformance.engine.connection import Connection
from conformance.commands.funnel import run_cases
from conformance.proofs import kernel_mutants, provider_mutants, provider_variants
from conformance.reference import kernel
from conformance.data.schemas import InputError
from tests.conftest import MANIFESTS, ROOT, certify_provider, ctxconf

VECTORS = ROOT / "vectors"
ONE_OVER = VECTORS / "provider" / "compactor" / "one-token-over-budget.yaml"
KERNEL_DOC = {
    "id": "kernel/budget/swept", "title": "A swept budget", "requirements": ["K-BUDGET-REJECT"],
    "setup": {"models": [{"id": "m", "context_window": 100000, "reserved_output": 4000, "system_overhead": 6000}],
              "primary_model": "m",
              "providers": [{"name": "exact", "capabilities": {"default_token_budget": 3, "stability": "STABILITY_STATIC"},
                             "token_budget_override": 8, "sweep": {"token_budget_override": {"from": 3, "to": 8}},
                             "script": [{"append": [{"label": "Exact", "text": "abcdefghijkl"}]}]}]},
    "turns": [{"assemble": {"session_id": "01JD9A0000SESSIONSWEEP0001", "turn_id": "01JD9A0000TURNSWEEP000001",
                            "model": "m"},
               "expect": {"K-BUDGET-REJECT": {"chain": [{"provider": "exact", "label": "Exact"}]}}}],
}


def _write(tmp_path, doc, area="provider/compactor"):
    folder = tmp_path / area
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (doc["id"].split("/")[-1] + ".yaml")
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    return path


def test_sub_runs_are_the_vector_then_each_other_value_and_leave_the_document_alone():
    doc = {"id": "provider/x/y", "steps": [{"configure": {}}, {"contribute": {"token_budget": 3},
                                                                "sweep": {"token_budget": [1, 3, 5],
                                                                          "model_target.effective_ceiling": [7]}}]}
    before = copy.deepcopy(doc)
    runs = sweep.sub_runs(doc)
    assert [r.label for r in runs] == ["", "steps[1].contribute.token_budget=1", "steps[1].contribute.token_budget=5",
                                       "steps[1].contribute.model_target.effective_ceiling=7"]
    assert runs[1].doc["steps"][1]["contribute"] == {"token_budget": 1}
    assert runs[3].doc["steps"][1]["contribute"] == {"token_budget": 3, "model_target": {"effective_ceiling": 7}}
    assert [r.last_step for r in runs] == [None, 1, 1, 1] and doc == before
    assert sweep.sub_runs(doc, "steps[1].contribute.token_budget=40")[0].doc["steps"][1]["contribute"] == {
        "token_budget": 40}
    with pytest.raises(ValueError, match="sweeps steps"):
        sweep.sub_run(doc, "steps[0].contribute.token_budget=4")


def test_a_kernel_sweep_is_a_new_load_with_the_value_in_place():
    runs = sweep.sub_runs(KERNEL_DOC)
    assert [r.label for r in runs][:2] == ["", "setup.providers[0].token_budget_override=3"]
    assert len(runs) == 6 and runs[1].doc["setup"]["providers"][0]["token_budget_override"] == 3
    assert runs[1].last_step is None and KERNEL_DOC["setup"]["providers"][0]["token_budget_override"] == 8


@pytest.mark.parametrize("change, field", [
    (lambda d: d["steps"][1].update(sweep={"token_budget": {"from": 60, "to": 20}}), "steps[1].sweep.token_budget"),
    (lambda d: d["steps"][1].update(sweep={"token_budget": {"from": 0, "to": 1000}}), "steps[1].sweep.token_budget"),
    (lambda d: d["steps"][1].update(sweep={"token_budget": {"from": -3, "to": 4}}), "steps[1].sweep.token_budget"),
    (lambda d: d["steps"][1].update(sweep={"turn_id": [1, 2]}), "steps[1].sweep.turn_id"),
    (lambda d: d["steps"][1].update(sweep={"model_target.id": [1, 2]}), "steps[1].sweep.model_target.id"),
    (lambda d: d["steps"][0].update(sweep={"token_budget": [1, 2]}), "steps[0].sweep.token_budget"),
    (lambda d: d["steps"][1].update(sweep={"token_budget": "1..5"}), "steps[1].sweep"),
])
def test_a_bad_provider_sweep_names_the_file_and_field(change, field, tmp_path, catalog):
    doc = yaml.safe_load(ONE_OVER.read_text())
    change(doc)
    path = _write(tmp_path, doc)
    with pytest.raises(InputError) as caught:
        vectors_mod.load_file(path, catalog, tmp_path)
    assert str(path) in str(caught.value) and field in str(caught.value), str(caught.value)


@pytest.mark.parametrize("entry, sweep_field, ok", [
    ("models", "context_window", True), ("models", "system_overhead", True), ("models", "id", False),
    ("providers", "capabilities.default_token_budget", True), ("providers", "name", False),
    ("providers", "capabilities.stability", False),
])
def test_kernel_sweeps_take_integer_inputs_only(entry, sweep_field, ok, tmp_path, catalog):
    doc = copy.deepcopy(KERNEL_DOC)
    doc["setup"]["providers"][0].pop("sweep")
    doc["setup"][entry][0]["sweep"] = {sweep_field: [2, 300]}
    path = _write(tmp_path, doc, "kernel/budget")
    if ok:
        assert len(vectors_mod.load_file(path, catalog, tmp_path).sub_runs()) == 3
        return
    with pytest.raises(InputError, match=f"setup.{entry}\\[0\\].sweep.{sweep_field}"):
        vectors_mod.load_file(path, catalog, tmp_path)


def test_a_bad_sweep_on_the_command_line_is_exit_2(tmp_path):
    doc = yaml.safe_load(ONE_OVER.read_text())
    doc["steps"][1]["sweep"] = {"token_budget": {"from": 9, "to": 1}}
    run = ctxconf("replay", str(_write(tmp_path, doc)))
    assert run.returncode == 2 and "steps[1].sweep.token_budget" in run.stderr and "Traceback" not in run.stderr
    for at in ("steps[1].contribute.token_budget=x", "steps[0].contribute.token_budget=3",
               "steps[1].contribute.token_budget=-4"):
        run = ctxconf("replay", str(ONE_OVER), "--at", at)
        assert run.returncode == 2 and "--at" in run.stderr + run.stdout and "Traceback" not in run.stderr, at


def test_a_failure_at_one_value_names_it_and_replay_at_reruns_that_value_alone(catalog, tmp_path):
    vector = vectors_mod.load_file(ONE_OVER, catalog)
    [result] = certify_provider(provider_mutants.CompactorOneTokenOverWithStatus, "compactor", [vector], tmp_path)
    failing = sorted({f.where for f in result.failures("C-CHAIN-FITS")})
    assert failing and all(w.startswith("at steps[1].contribute.token_budget=") for w in failing), failing
    label = failing[0].removeprefix("at ").split(":")[0]
    run = ctxconf("replay", str(ONE_OVER), "--at", label, "--python",
                  "conformance.proofs.provider_mutants:CompactorOneTokenOverWithStatus",
                  "--manifest", str(MANIFESTS / "compactor.yaml"), "-v")
    assert run.returncode == 1 and f"at {label}: step 2" in run.stdout and "token_budget=48" not in run.stdout, \
        run.stdout[-3000:]
    clean = ctxconf("replay", str(ONE_OVER), "--at", "steps[1].contribute.token_budget=49", "--python",
                    "conformance.proofs.provider_mutants:CompactorOneTokenOverWithStatus",
                    "--manifest", str(MANIFESTS / "compactor.yaml"))
    assert "C-CHAIN-FITS" not in {line.split()[1] for line in clean.stdout.splitlines() if line.startswith("  FAIL")}


def test_the_status_section_compactors_pass_the_fixed_budget_and_fail_only_swept_ones(catalog, tmp_path):
    """What the sweeps are for: at the budget as written, a compactor with a section of its own is judged
    clean; only the other values catch it. A conforming one with the same section is clean at all of them."""
    for name in ("one-token-over-budget", "stated-figures-are-not-counts"):
        vector = vectors_mod.load_file(VECTORS / "provider" / "compactor" / f"{name}.yaml", catalog)
        for mutant in (provider_mutants.CompactorOneTokenOverWithStatus,
                       provider_mutants.CompactorTrustsStatedTokensWithStatus):
            [result] = certify_provider(mutant, "compactor", [vector], tmp_path / mutant.__name__ / name)
            assert all(f.where.startswith("at ") for f in result.failures()), (name, mutant.__name__)
        [clean] = certify_provider(provider_variants.CompactorAppendsStatus, "compactor", [vector], tmp_path / name)
        assert not clean.failures() and not clean.error


def test_a_kernel_sweep_fails_only_at_the_value_that_breaks(tmp_path, catalog):
    path = _write(tmp_path, KERNEL_DOC, "kernel/budget")
    vector = vectors_mod.load_file(path, catalog, tmp_path)
    with Connection(lambda: PythonBinding("t", KERNEL_PROTOCOL, 10.0, factory=kernel_mutants.RejectsAtBudget)) as c:
        [result] = run_cases("kernel", c, [vector], None, tmp_path)
    assert {f.where.split(":")[0] for f in result.failures()} == {"at setup.providers[0].token_budget_override=3"}
    with Connection(lambda: PythonBinding("t", KERNEL_PROTOCOL, 10.0, factory=kernel.ReferenceKernel)) as c:
        [clean] = run_cases("kernel", c, [vector], None, tmp_path)
    assert not clean.failures() and not clean.error and len({f.where for f in clean.findings}) >= 6


def test_a_kernel_without_reload_gets_a_fresh_process_per_sub_run(tmp_path, catalog):
    starts = []

    class NoReload(kernel.ReferenceKernel):
        FEATURES = []

        def __init__(self):
            super().__init__()
            starts.append(self)

    vector = vectors_mod.load_file(_write(tmp_path, KERNEL_DOC, "kernel/budget"), catalog, tmp_path)
    with Connection(lambda: PythonBinding("t", KERNEL_PROTOCOL, 10.0, factory=NoReload)) as connection:
        [result] = run_cases("kernel", connection, [vector], None, tmp_path)
    assert not result.failures() and not result.error and len(starts) == 6
