"""The reference kernel passes every vector over both bindings. (Each mutant
failing what it declares, and nothing else, is the self-test's business:
tests/test_selftest.py and tests/test_verdict_trust.py.)"""

from conformance.reference.kernel import create
from tests.conftest import REFERENCE_SHIM, certify_python, certify_stdio


def _assert_clean(results):
    problems = [(r.id, f.requirement, f.where, f.message) for r in results for f in r.failures()]
    errors = [(r.id, r.error) for r in results if r.error]
    assert not problems and not errors, (problems[:5], errors[:3])


def test_reference_kernel_is_conformant_in_process(kernel_vectors):
    results = certify_python(create, kernel_vectors)
    _assert_clean(results)
    # only needs-skips may skip: a feature the python binding lacks (a real transport, the plugin mode)
    assert [r.id for r in results if r.status != "pass" and not (r.status == "skip" and r.needs)] == []


def test_reference_kernel_is_conformant_over_stdio(kernel_vectors, tmp_path):
    _assert_clean(certify_stdio(REFERENCE_SHIM, kernel_vectors, tmp_path))
