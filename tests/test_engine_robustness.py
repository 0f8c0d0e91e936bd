"""Whatever an implementation sends, the engine answers with findings or a
per-case error, never an exception: a missing field, a wrong type, a call on
a provider nobody declared, a module that fails to import, a shim that dies
at once. A defect of the suite's own judging is a case error too, so the run
still ends with a report (and is never conformant)."""

import json

from hypothesis import given, strategies as st

from conformance.engine import kernel_checks, kernel_run
from conformance.engine.connection import Connection
from conformance.engine.results import CaseResult
from conformance.bindings.base import KERNEL_PROTOCOL
from conformance.bindings.python import PythonBinding
from conformance.reference.kernel import ReferenceKernel
from conformance.engine.scenario import from_vector
from tests.conftest import certify_python, ctxconf

REQUEST_FIELDS = ["session_id", "parent_session_id", "turn_id", "token_budget", "model_target", "files_touched",
                  "working_directory", "prior_sections", "conversation_history", "history_tokens",
                  "assembled_tokens_last_turn"]
RESULT_FIELDS = ["sections", "prompt", "history", "turn_failed", "error", "diagnostics"]
JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                    max_leaves=6)
SAMPLE = ("kernel/budget/over-budget-section-dropped", "kernel/compactor/rewritten-history-applied",
          "kernel/errors/source-unavailable-isolated", "kernel/requests/history-tokens-exact-tokenizer")


def _mangler(drop: set, junk: dict, result_drop: set, provider: str | None):
    class Mangler(ReferenceKernel):
        def assemble(self, fields, call):
            def mangled(name, to, request):
                if name == "Contribute":
                    request = {k: v for k, v in request.items() if k not in drop} | junk
                return call(name, provider or to, request)
            result = super().assemble(fields, mangled)
            return {k: v for k, v in result.items() if k not in result_drop}
    return Mangler


@given(drop=st.sets(st.sampled_from(REQUEST_FIELDS)),
       junk=st.dictionaries(st.sampled_from(REQUEST_FIELDS), JSON, max_size=2),
       result_drop=st.sets(st.sampled_from(RESULT_FIELDS), max_size=1),
       provider=st.sampled_from([None, "nobody-declared-this", ""]))
def test_no_request_or_result_shape_raises_out_of_the_engine(kernel_vectors, drop, junk, result_drop, provider):
    vectors = [v for v in kernel_vectors if v.id in SAMPLE]
    assert len(vectors) == len(SAMPLE)
    results = certify_python(_mangler(drop, junk, result_drop, provider), vectors)
    assert [r.id for r in results] == [v.id for v in vectors]
    for r in results:
        assert r.error is None or "defect of the suite" not in r.error, r.error
        assert not r.error or not r.error.startswith("Traceback")


def test_a_request_without_model_target_fails_k_model_target(kernel_vectors):
    vectors = [v for v in kernel_vectors if v.id == "kernel/budget/over-budget-section-dropped"]
    [result] = certify_python(_mangler({"model_target"}, {}, set(), None), vectors)
    assert any(f.requirement == "K-MODEL-TARGET" and "no model_target" in f.message for f in result.failures())


def test_a_defect_of_the_suites_judging_is_a_case_error_not_a_crash(kernel_vectors, monkeypatch):
    def broken(*args):
        raise KeyError("a field the checks wrongly assumed")
    monkeypatch.setattr(kernel_checks, "check_case", broken)
    vector = kernel_vectors[0]
    with Connection(lambda: PythonBinding("test", KERNEL_PROTOCOL, 10.0, factory=ReferenceKernel)) as connection:
        result = kernel_run.case_result(vector.id, vector.title, from_vector(vector.doc), connection)
    assert isinstance(result, CaseResult) and result.status == "error"
    assert "defect of the suite" in result.error and "KeyError" in result.error


def test_a_module_that_fails_on_import_is_a_usage_error(tmp_path):
    (tmp_path / "broken_kernel.py").write_text("raise RuntimeError('config missing')\n")
    run = ctxconf("kernel", "--python", "broken_kernel:create", cwd=tmp_path)
    assert run.returncode == 2 and "RuntimeError: config missing" in run.stderr and "Traceback" not in run.stderr


def test_a_shim_that_dies_at_once_gets_a_report_with_the_property_tests_on(tmp_path):
    shim = tmp_path / "dies.py"
    shim.write_text("import sys\nprint('no config', file=sys.stderr)\nsys.exit(3)\n")
    run = ctxconf("kernel", "--stdio", f"python3 {shim}", "-k", "property", "--profile", "ci",
                  "--report", str(tmp_path / "r.json"), "--counterexamples", str(tmp_path / "cx"))
    assert run.returncode == 1 and "Traceback" not in run.stderr + run.stdout
    [case] = json.loads((tmp_path / "r.json").read_text())["cases"]
    assert case["status"] == "error" and "could not start the implementation" in case["error"]
    assert "no config" in case["error"] and not (tmp_path / "cx").exists()
