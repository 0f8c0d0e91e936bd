"""The reference kernel passes every vector over both bindings, and each
mutant of it is reported failing exactly the requirement it breaks."""

import pytest

from conformance.reference.kernel import create
from conformance.proofs.kernel_mutants import MUTANTS
from tests.conftest import REFERENCE_SHIM, certify_python, certify_stdio, failed_requirements


def _assert_clean(results):
    problems = [(r.id, f.requirement, f.where, f.message) for r in results for f in r.failures()]
    errors = [(r.id, r.error) for r in results if r.error]
    assert not problems and not errors, (problems[:5], errors[:3])


def test_reference_kernel_is_conformant_in_process(kernel_vectors):
    results = certify_python(create, kernel_vectors)
    _assert_clean(results)
    assert sum(r.status == "pass" for r in results) >= len(kernel_vectors) - 2  # only needs-skips may skip


def test_reference_kernel_is_conformant_over_stdio(kernel_vectors, tmp_path):
    _assert_clean(certify_stdio(REFERENCE_SHIM, kernel_vectors, tmp_path))


@pytest.mark.parametrize("name", sorted(n for n, m in MUTANTS.items() if not m.property_only))
def test_mutant_fails_exactly_what_it_breaks(name, kernel_vectors):
    mutant = MUTANTS[name]
    results = certify_python(mutant, kernel_vectors)
    assert not [r.id for r in results if r.error], "a mutant must be reported as failing, not crash the suite"
    failed = failed_requirements(results)
    assert set(mutant.breaks) <= failed, f"{name} survived: {sorted(set(mutant.breaks) - failed)} not reported"
    assert failed <= set(mutant.breaks) | set(mutant.also), f"{name} blamed on {sorted(failed - set(mutant.breaks) - set(mutant.also))}"
