"""A verdict says no more than was checked. Each test here is a way a run
once said CONFORMANT, or exited 0, when it should not have."""

import json
import sys

import pytest
import yaml
from hypothesis import given, strategies as st

from conformance.data import catalog as catalog_mod
from conformance.engine.results import CaseResult, Finding
from conformance.reference.provider_base import ReferenceProvider
from conformance.reports import badge
from conformance.reports.verdict import CONFORMANT, INCOMPLETE, NO_VERDICT, NOT_CONFORMANT, build
from conformance.proofs import kernel_mutants
from conformance.bindings.grpc_kernel import GrpcKernelBinding
from conformance.engine import kernel_run
from conformance.engine.connection import Connection
from tests.conftest import (MANIFESTS, REFERENCE_SHIM, RUNNERS, SHIM, certify_python, certify_stdio, ctxconf,
                            failed_requirements)

HARNESS = f"{sys.executable} {RUNNERS / 'grpc_kernel_harness.py'}"


def _report(cases, **options):
    return build(catalog_mod.load(), catalog_mod.KERNEL_ROLES, "kernel", cases, "stdio", {}, 0.0, **options)


def _all_exercised() -> list[CaseResult]:
    """One case that passes every testable kernel MUST."""
    ids = [r.id for r in catalog_mod.load().for_roles(catalog_mod.KERNEL_ROLES) if r.testable]
    return [CaseResult("kernel/all", "all", findings=[Finding(i, True) for i in ids])]


def test_everything_exercised_and_held_is_conformant():
    report = _report(_all_exercised())
    assert report.verdict == CONFORMANT and report.exit_code == 0 and report.details() == ["over stdio"]


def test_an_errored_case_is_never_conformant_even_with_a_should_failure_in_it():
    errored = CaseResult("kernel/x", "x", findings=[Finding("KC-STABILITY-ORDER-WARN", False, "no warning")],
                         error="the shim crashed")
    report = _report(_all_exercised() + [errored])
    assert errored.status == "fail"  # a failing finding outranks the error in the case's own status...
    assert report.verdict == NOT_CONFORMANT and report.exit_code == 1  # ...but the error still counts
    assert "1 case errored" in report.verdict_line()


def test_a_must_never_exercised_makes_the_run_incomplete():
    cases = _all_exercised()
    cases[0].findings = [f for f in cases[0].findings if f.requirement != "K-BUDGET-REJECT"]
    report = _report(cases)
    assert report.verdict == INCOMPLETE and report.exit_code == 1
    assert "K-BUDGET-REJECT" in report.verdict_line()
    assert badge.endpoint(report)["message"].startswith("incomplete")


def test_a_must_the_binding_cannot_exercise_is_named_not_hidden():
    cases = _all_exercised()
    cases[0].findings = [f for f in cases[0].findings if f.requirement != "K-TIMEOUT"]
    cases.append(CaseResult("kernel/errors/deadline-enforced", "t", requirements=("K-TIMEOUT",),
                            skipped="needs a real transport", needs="a real transport (gRPC)"))
    report = _report(cases)
    assert report.verdict == CONFORMANT
    assert "not exercised: K-TIMEOUT (needs a real transport (gRPC))" in report.details()
    assert badge.endpoint(report)["message"].endswith("1 MUST not exercised")


def test_a_partial_run_gives_no_verdict():
    report = _report(_all_exercised(), filtered="only the cases matching -k 'kernel/budget/'")
    assert report.verdict == NO_VERDICT and report.exit_code == 0
    assert badge.endpoint(report)["message"] == "no verdict (partial run: only the cases matching -k 'kernel/budget/')"
    failing = CaseResult("kernel/budget/x", "x", findings=[Finding("K-BUDGET-REJECT", False, "kept")])
    assert _report([failing], filtered="-k budget").exit_code == 1


def test_baselined_must_failures_keep_the_verdict_and_badge_honest():
    cases = _all_exercised() + [CaseResult("kernel/budget/x", "x",
                                           findings=[Finding("K-BUDGET-REJECT", False, "kept")])]
    report = _report(cases, baseline=[{"requirement": "K-BUDGET-REJECT", "reason": "known"}])
    assert report.verdict == NOT_CONFORMANT and report.exit_code == 0  # gated, not certified
    message, color = badge.endpoint(report)["message"], badge.endpoint(report)["color"]
    assert message == "not conformant (1 known failures)" and color == "red"


def test_a_filtered_run_on_the_command_line_certifies_nothing(tmp_path):
    run = ctxconf("kernel", "-k", "kernel/budget/", "--badge", str(tmp_path), "--report", str(tmp_path / "r.json"))
    assert run.returncode == 0 and "verdict: NO VERDICT" in run.stdout
    assert json.loads((tmp_path / "badge.json").read_text())["message"] == "no verdict (partial run: -k 'kernel/budget/')"
    assert json.loads((tmp_path / "r.json").read_text())["verdict"] == "no verdict"


@pytest.mark.parametrize("option", ["--stdio", "--python", "--grpc-cmd"])
def test_an_empty_target_is_a_usage_error_not_the_reference(option):
    run = ctxconf("kernel", option, " ")
    assert run.returncode == 2 and option in run.stderr and "empty" in run.stderr
    run = ctxconf("provider", option, "", "--manifest", str(MANIFESTS / "filereader.yaml"))
    assert run.returncode == 2 and option in run.stderr


class SilentProvider(ReferenceProvider):
    """Answers every call correctly and never contributes a section: nothing about sections was shown."""
    NAME = "silent"
    CAPABILITIES = {"default_token_budget": 100, "stability": "STABILITY_STATIC", "config_schema": {}}

    def configure(self, request, call):
        return {}

    def contribute(self, request, call):
        return {"sections": request["request"]["prior_sections"]}


def test_a_provider_that_never_contributes_is_not_certified(tmp_path):
    manifest = tmp_path / "silent.yaml"
    manifest.write_text(yaml.safe_dump({"name": "silent", "config": {}}))
    run = ctxconf("provider", "--python", "tests.test_verdicts:SilentProvider", "--manifest", str(manifest))
    assert run.returncode == 1 and "verdict: INCOMPLETE" in run.stdout, run.stdout
    never = run.stdout.split("verdict:")[1]
    assert all(r in never for r in ("P-SECTION-LABEL", "P-SECTION-PROVIDER", "P-TEXT-ONLY")), never


class ExactLiarWithoutTheOp(kernel_mutants.AlwaysExact):
    """Says exact for fallback counts, but offers no count_tokens op that would show it."""
    FEATURES: list[str] = ["reload"]


def test_what_an_implementation_does_not_offer_is_named_in_the_verdict(kernel_vectors, tmp_path):
    report = _report(certify_python(ExactLiarWithoutTheOp, kernel_vectors))
    assert report.verdict == CONFORMANT, report.verdict_line()
    assert any("K-COUNT-EXACT-FLAG (needs the count_tokens op)" in d for d in report.details())
    stdio = _report(certify_stdio(REFERENCE_SHIM, kernel_vectors, tmp_path))
    sequential = next(r for r in stdio.requirements if r.id == "K-SEQUENTIAL")
    assert sequential.status == "skip", "over stdio no two calls can overlap: nothing was seen, nothing passed"
    assert any(d.startswith("not exercised: K-SEQUENTIAL") for d in stdio.details())


@pytest.mark.parametrize("binding", ["python", "stdio", "grpc"])
def test_a_kernel_that_leaves_the_provider_out_of_model_ref_fails_resolution(binding, kernel_vectors, tmp_path):
    mutant = kernel_mutants.MUTANTS["ModelRefWithoutProvider"]
    target = f"{mutant.__module__}:{mutant.__name__}"
    cases = [v for v in kernel_vectors if v.id.startswith("kernel/counting/")]
    if binding == "python":
        results = certify_python(mutant, cases)
    elif binding == "stdio":
        results = certify_stdio(f"{SHIM} {target}", cases, tmp_path)
    else:
        with Connection(lambda: GrpcKernelBinding(tmp_path, 10.0, command=f"{HARNESS} {target}")) as connection:
            results = kernel_run.run_vectors(connection, cases)
    assert "K-COUNT-RESOLUTION" in failed_requirements(results)


def _status_one_by_one(case: CaseResult, requirement: str):
    """A case's verdict on one requirement, read off its findings as the rule is written: skipped, it cites
    the requirement or says nothing; a failed finding fails it; an error errs what it found or cites; a
    finding passes it."""
    mine = [f for f in case.findings if f.requirement == requirement]
    if case.skipped:
        return "skip" if requirement in case.requirements else None
    if any(not f.passed for f in mine):
        return "fail"
    if case.error and (mine or requirement in case.requirements):
        return "error"
    return "pass" if mine else None


@given(st.lists(st.tuples(st.sampled_from(["K-BUDGET-REJECT", "K-DECLARATION-ORDER", "K-PRIOR-SECTIONS"]),
                          st.booleans()), max_size=6),
       st.lists(st.sampled_from(["K-BUDGET-REJECT", "K-DECLARATION-ORDER", "K-TIMEOUT"]), max_size=3),
       st.booleans(), st.booleans())
def test_a_cases_verdicts_taken_in_one_pass_are_its_verdicts_one_by_one(findings, cited, error, skipped):
    case = CaseResult("c", "t", tuple(cited), findings=[Finding(r, passed, "m") for r, passed in findings],
                      error="broke" if error else None, skipped="why" if skipped else None)
    for requirement in ("K-BUDGET-REJECT", "K-DECLARATION-ORDER", "K-PRIOR-SECTIONS", "K-TIMEOUT"):
        assert case.statuses().get(requirement) == _status_one_by_one(case, requirement)
