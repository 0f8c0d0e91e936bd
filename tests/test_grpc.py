"""The real wire: the same vectors and properties over gRPC and through a
go-plugin launch; a provider written from WIRE.md alone interoperates; bad
plugins get clear errors; nothing is left behind."""

import subprocess
import sys
import threading
import time

import pytest

from conformance.bindings.go_plugin import GoPluginBinding
from conformance.bindings.go_plugin_protocol import DEFAULT_COOKIE
from conformance.bindings.grpc_kernel import GrpcKernelBinding
from conformance.bindings.grpc_provider import GrpcProviderBinding
from conformance.engine import kernel_run, provider_run
from conformance.engine.connection import Connection
from tests.conftest import MANIFESTS, ROOT, RUNNERS, processes_under

HARNESS = f"{sys.executable} {RUNNERS / 'grpc_kernel_harness.py'} conformance.reference.kernel:create"
SERVER = f"{sys.executable} {RUNNERS / 'grpc_provider_server.py'}"
PLUGIN = f"{sys.executable} {RUNNERS / 'go_plugin_provider.py'}"
INDEPENDENT = ROOT / "tests" / "independent"


def _clean(results):
    problems = [(r.id, f.requirement, f.message) for r in results for f in r.failures()]
    errors = [(r.id, r.error) for r in results if r.error]
    assert not problems and not errors, (problems[:3], errors[:2])


def _no_leftovers(workdir):
    time.sleep(0.2)
    assert not list(workdir.rglob("*.sock")), "socket files left behind"
    assert processes_under(workdir) == [], "processes left behind"


def test_reference_kernel_over_grpc_with_real_deadlines(kernel_vectors, tmp_path):
    # The generated scenarios over gRPC, and a harness without deadlines, are the self-test's business.
    with Connection(lambda: GrpcKernelBinding(tmp_path, 10.0, command=HARNESS)) as connection:
        results = kernel_run.run_vectors(connection, kernel_vectors)
    _clean(results)
    timeout_case = next(r for r in results if r.id == "kernel/errors/deadline-enforced")
    assert timeout_case.status == "pass", "over gRPC the kernel's own deadline is exercised, not skipped"
    _no_leftovers(tmp_path)


def test_dialing_a_running_kernel_harness(kernel_vectors, tmp_path):
    address = f"unix:{tmp_path / 'harness.sock'}"
    process = subprocess.Popen([*HARNESS.split(), "--listen", address])
    try:
        with Connection(lambda: GrpcKernelBinding(tmp_path / "run", 10.0, address=address)) as connection:
            _clean(kernel_run.run_vectors(connection, kernel_vectors[:10]))
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.parametrize("name", ["filereader", "compactor"])
def test_reference_providers_over_grpc(name, provider_vectors, tmp_path):
    from conformance.data import manifest as manifest_mod
    manifest = manifest_mod.load(MANIFESTS / f"{name}.yaml")
    command = f"{SERVER} conformance.reference.{name}:create"
    with Connection(lambda: GrpcProviderBinding(tmp_path, 10.0, command=command)) as connection:
        _clean(provider_run.run_vectors(connection, provider_vectors, manifest, tmp_path / "cases"))
    _no_leftovers(tmp_path)


@pytest.mark.parametrize("name", ["filereader", "compactor"])
def test_reference_providers_launched_as_go_plugins(name, provider_vectors, tmp_path):
    from conformance.data import manifest as manifest_mod
    manifest = manifest_mod.load(MANIFESTS / f"{name}.yaml")
    command = f"{PLUGIN} conformance.reference.{name}:create"
    with Connection(lambda: GoPluginBinding(command, DEFAULT_COOKIE, tmp_path, 10.0)) as connection:
        results = provider_run.run_vectors(connection, provider_vectors, manifest, tmp_path / "cases")
        assert connection.current.name == "go-plugin"
    _clean(results)
    _no_leftovers(tmp_path)


def test_a_provider_built_only_from_wire_md_interoperates(provider_vectors, tmp_path):
    from conformance.data import manifest as manifest_mod
    manifest = manifest_mod.load(INDEPENDENT / "manifest.yaml")
    command = f"{sys.executable} {INDEPENDENT / 'server.py'}"
    with Connection(lambda: GrpcProviderBinding(tmp_path, 20.0, command=command)) as connection:
        results = provider_run.run_vectors(connection, provider_vectors, manifest, tmp_path / "cases")
    _clean(results)
    assert sum(r.status == "pass" for r in results) >= 8, "the generic cases ran against it"
    _no_leftovers(tmp_path)


@pytest.mark.parametrize("mode, message", [
    ("silent", "no handshake line within 1s"),
    ("malformed", "malformed handshake line"),
    ("exit", "ended before its handshake"),
    ("netrpc", "protocol 'netrpc'"),
    ("mtls", "AutoMTLS"),
    ("wrong-version", "app protocol version '7'"),
])
def test_a_broken_plugin_gets_a_clear_error_in_time(mode, message, provider_vectors, tmp_path):
    from conformance.data import manifest as manifest_mod
    manifest = manifest_mod.load(MANIFESTS / "filereader.yaml")
    command = f"{sys.executable} {ROOT / 'tests' / 'shims' / 'bad_plugin.py'} {mode}"
    started = time.monotonic()
    with Connection(lambda: GoPluginBinding(command, DEFAULT_COOKIE, tmp_path, 5.0, handshake_timeout=1.0)) as c:
        results = provider_run.run_vectors(c, provider_vectors[:2], manifest, tmp_path / "cases")
    assert all(r.status == "error" and message in r.error for r in results), results[0].error
    assert time.monotonic() - started < 15
    _no_leftovers(tmp_path)


def test_a_plugin_refuses_to_run_without_its_cookie(provider_vectors, tmp_path):
    from conformance.data import manifest as manifest_mod
    manifest = manifest_mod.load(MANIFESTS / "filereader.yaml")
    command = f"{PLUGIN} conformance.reference.filereader:create"
    with Connection(lambda: GoPluginBinding(command, ("PLUGGABLEHARNESS_AGENT_PLUGIN", "wrong"), tmp_path, 5.0,
                                            handshake_timeout=5.0)) as connection:
        [result] = provider_run.run_vectors(connection, provider_vectors[:1], manifest, tmp_path / "cases")
    assert result.status == "error" and "This binary is a plugin" in result.error


def test_a_fake_server_of_the_suite_that_cannot_listen_is_named_as_the_suites(kernel_vectors, tmp_path, monkeypatch):
    from conformance.bindings import grpc_wire
    real = grpc_wire.SocketDir.address
    monkeypatch.setattr(grpc_wire.SocketDir, "address", lambda self, name: "unix:/proc/ctxconf-none/x.sock"
                        if name.startswith("provider") else real(self, name))
    with Connection(lambda: GrpcKernelBinding(tmp_path, 10.0, command=HARNESS)) as connection:
        [result] = kernel_run.run_vectors(connection, kernel_vectors[:1])
    assert result.status == "error" and not result.failures(), result
    assert "the suite's fake provider" in result.error and "not a fault of the implementation" in result.error
    _no_leftovers(tmp_path)


def test_the_suites_own_time_answering_a_kernel_over_grpc_is_not_charged_to_it(kernel_vectors, tmp_path, monkeypatch):
    # Each fake provider takes 1.5 s to answer Contribute: a turn of four takes longer than the 5 s timeout,
    # all of it the suite's time; the kernel's own stays far below it.
    from conformance.bindings import fake_services
    answer = fake_services.Relay._answer

    def slow(self, call, *rest):
        time.sleep(1.5 if call == "Contribute" else 0)
        return answer(self, call, *rest)

    monkeypatch.setattr(fake_services.Relay, "_answer", slow)
    vector = next(v for v in kernel_vectors if v.id == "kernel/config/static-before-dynamic-quiet")
    started = time.monotonic()
    with Connection(lambda: GrpcKernelBinding(tmp_path, 5.0, command=HARNESS)) as connection:
        results = kernel_run.run_vectors(connection, [vector])
    assert time.monotonic() - started > 6.0, "the suite's answers were not slow enough to show anything"
    _clean(results)


def test_a_kernel_that_never_answers_over_grpc_is_stopped_by_its_own_timeout(kernel_vectors, tmp_path):
    (tmp_path / "mod").mkdir()
    (tmp_path / "mod" / "hanging_kernel.py").write_text(
        "import time\nfrom conformance.reference.kernel import ReferenceKernel\n\n"
        "class Hanging(ReferenceKernel):\n    def assemble(self, request, call):\n        time.sleep(600)\n")
    command = f"env PYTHONPATH={tmp_path / 'mod'} {HARNESS.replace('conformance.reference.kernel:create', 'hanging_kernel:Hanging')}"
    vector = next(v for v in kernel_vectors if v.id == "kernel/config/static-before-dynamic-quiet")
    started = time.monotonic()
    with Connection(lambda: GrpcKernelBinding(tmp_path, 2.0, command=command)) as connection:
        [result] = kernel_run.run_vectors(connection, [vector])
    assert "no answer within 2s of its own time" in (result.error or ""), result
    assert time.monotonic() - started < 20
    _no_leftovers(tmp_path)


LATE_VECTOR = """
id: kernel/errors/answer-at-the-deadline
title: an answer the suite was slow to give reaches the kernel after its deadline
requirements: [K-PRIOR-SECTIONS]
setup:
  models: [{id: m, context_window: 100000, reserved_output: 4000, system_overhead: 6000}]
  primary_model: m
  hook_timeout_ms: 500
  providers:
    - name: late
      capabilities: {default_token_budget: 100, stability: STABILITY_STATIC}
      script: [{append: [{label: Late, text: "context that came too late"}]}]
    - name: after
      capabilities: {default_token_budget: 100, stability: STABILITY_DYNAMIC}
      script: [{append: [{label: After, text: "context from after"}]}]
turns:
  - assemble: {session_id: 01JD9C0000SESSIONERRORS0099, turn_id: 01JD9C0000TURNERRORS000099, model: m}
    expect:
      K-PRIOR-SECTIONS: {turn_failed: false}
"""


def test_an_answer_the_suite_gave_past_the_kernels_deadline_may_be_timed_out(catalog, tmp_path, monkeypatch):
    # On a loaded machine the suite's own answer can come after the kernel's deadline: the kernel then rightly
    # treats the provider as timed out (K-TIMEOUT), and the judge must accept that as well as the answer.
    from conformance.bindings import fake_services
    from conformance.data import vectors as vectors_mod
    path = tmp_path / "kernel" / "errors" / "answer-at-the-deadline.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(LATE_VECTOR)
    vector = vectors_mod.load_file(path, catalog, tmp_path)
    note = fake_services.Relay._note_if_late

    def slow(on_callback, call, provider, context):  # the answer is made, then held up on its way back
        time.sleep(0.8 if (call, provider) == ("Contribute", "late") else 0)
        return note(on_callback, call, provider, context)

    monkeypatch.setattr(fake_services.Relay, "_note_if_late", staticmethod(slow))
    with Connection(lambda: GrpcKernelBinding(tmp_path, 10.0, command=HARNESS)) as connection:
        results = kernel_run.run_vectors(connection, [vector])
    _clean(results)


SLOW_TOKENIZER_VECTOR = """
id: kernel/counting/tokenizer-answer-at-the-deadline
title: the suite's tokenizer answers after the kernel stopped waiting for it
requirements: [K-PRIOR-SECTIONS]
invariant_requirements: [K-COUNT-RESOLUTION, K-HISTORY-TOKENS, K-ASSEMBLED-LAST-TURN]
setup:
  models: [{id: m, provider: acme, context_window: 100000, reserved_output: 4000, system_overhead: 6000,
            count_tokens: true}]
  primary_model: m
  providers:
    - name: notes
      capabilities: {default_token_budget: 100, stability: STABILITY_STATIC}
      script: [{append: [{label: Notes, text: "a note of some eight words, or so"}]}]
turns:
  - assemble: {session_id: 01JD9C0000SESSIONCOUNTS0099, turn_id: 01JD9C0000TURNCOUNTS000098, model: m,
               new_messages: [{role: user, text: "a question in a good few words, counted twice"}]}
    expect: {K-PRIOR-SECTIONS: {turn_failed: false}}
  - assemble: {session_id: 01JD9C0000SESSIONCOUNTS0099, turn_id: 01JD9C0000TURNCOUNTS000099, model: m,
               new_messages: [{role: user, text: "and another"}]}
    expect: {K-PRIOR-SECTIONS: {turn_failed: false}}
"""

SHORT_TOKENIZER_DEADLINE = """
import time
from conformance.reference.kernel import ReferenceKernel


class ShortTokenizerDeadline(ReferenceKernel):
    \"\"\"Gives up on a CountTokens answer slower than 0.3 s and counts by the fallback formula.\"\"\"

    def tokenizer_count(self, content, model, call):
        started = time.monotonic()
        count = super().tokenizer_count(content, model, call)
        return None if time.monotonic() - started > 0.3 else count
"""


def _with_a_slow_tokenizer(vector, tmp_path, monkeypatch, noted: bool):
    """Run `vector` on a kernel that gives up on the tokenizer after 0.3 s, the suite answering CountTokens
    after 0.5 s, and noting the answer late or not."""
    from conformance.bindings import fake_services
    (tmp_path / "mod").mkdir()
    (tmp_path / "mod" / "short_deadline.py").write_text(SHORT_TOKENIZER_DEADLINE)
    note = fake_services.Relay._note_if_late

    def slow(on_callback, call, provider, context):
        if call != "CountTokens":
            return note(on_callback, call, provider, context)
        time.sleep(0.5)
        if noted:
            on_callback.mark_late(call, provider)

    monkeypatch.setattr(fake_services.Relay, "_note_if_late", staticmethod(slow))
    command = f"env PYTHONPATH={tmp_path / 'mod'} " + HARNESS.replace("conformance.reference.kernel:create",
                                                                       "short_deadline:ShortTokenizerDeadline")
    with Connection(lambda: GrpcKernelBinding(tmp_path, 10.0, command=command)) as connection:
        return kernel_run.run_vectors(connection, [vector])


@pytest.mark.parametrize("noted", [True, False], ids=["noted-late", "answered-in-time"])
def test_a_tokenizer_answer_past_the_kernels_deadline_may_be_counted_by_the_formula(catalog, tmp_path, monkeypatch,
                                                                                    noted):
    # R-TOKENIZER-DOWN: a kernel that gave up on the tokenizer counts by the formula. When the suite's answer
    # came at the kernel's deadline that is accepted; when the suite answered in time it is K-COUNT-RESOLUTION.
    from conformance.data import vectors as vectors_mod
    path = tmp_path / "kernel" / "counting" / "tokenizer-answer-at-the-deadline.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(SLOW_TOKENIZER_VECTOR)
    results = _with_a_slow_tokenizer(vectors_mod.load_file(path, catalog, tmp_path), tmp_path, monkeypatch, noted)
    if noted:
        _clean(results)
    else:
        assert {f.requirement for r in results for f in r.failures()} == {"K-COUNT-RESOLUTION"}, results


def test_expected_figures_after_a_late_tokenizer_answer_are_the_cases_error(kernel_vectors, tmp_path, monkeypatch):
    # A vector's expected figures assume the tokenizer's count: after a late answer they cannot fail the kernel.
    vector = next(v for v in kernel_vectors if v.id == "kernel/requests/history-tokens-exact-tokenizer")
    [result] = _with_a_slow_tokenizer(vector, tmp_path, monkeypatch, noted=True)
    assert not result.failures(), result.failures()
    assert "the suite's tokenizer answered CountTokens at the kernel's deadline" in result.error
    assert "K-HISTORY-TOKENS" in result.error and "rerun on a less loaded machine" in result.error


COUNTING_PROVIDER = """
import time


class Counting:
    \"\"\"Counts six texts through the kernel in each Contribute, and sleeps SLEEP seconds of its own.\"\"\"

    SLEEP = 0.0

    def get_capabilities(self, fields, call):
        return {"default_token_budget": 100, "stability": "STABILITY_STATIC"}

    def configure(self, fields, call):
        return {}

    def describe(self, fields, call):
        return {"producer": {"name": "counting", "version": "0"}}

    def contribute(self, fields, call):
        time.sleep(self.SLEEP)
        counts = [call("CountTokens", None, {"content": [{"text": {"text": f"text {i}"}}]})["count"]
                  for i in range(6)]
        return {"sections": [{"label": "Counted", "content": [{"text": {"text": str(sum(counts))}}],
                              "tokens": 1}]}


class Sleeping(Counting):
    SLEEP = 600.0
"""


def _counting_provider(tmp_path, factory: str, timeout: float) -> GrpcProviderBinding:
    (tmp_path / "mod").mkdir(exist_ok=True)
    (tmp_path / "mod" / "counting_provider.py").write_text(COUNTING_PROVIDER)
    return GrpcProviderBinding(tmp_path, timeout, command=f"env PYTHONPATH={tmp_path / 'mod'} {SERVER} "
                                                          f"counting_provider:{factory}")


def _slow_count(call, provider, request):
    time.sleep(0.5)  # the suite's answer, held up (a loaded machine): six of them are 3 s, past the 2 s timeout
    return {"count": 3, "exact": False}


def test_the_suites_own_time_answering_a_providers_counts_over_grpc_is_not_charged_to_it(tmp_path):
    binding = _counting_provider(tmp_path, "Counting", 2.0)
    try:
        binding.start()
        started = time.monotonic()
        reply = binding.request("contribute", {"request": {"token_budget": 100}}, _slow_count)
        assert time.monotonic() - started > 3.0, "the suite's answers were not slow enough to show anything"
        assert reply["sections"][0]["content"][0]["text"]["text"] == "18"
        assert not binding.broken
    finally:
        binding.close()
    _no_leftovers(tmp_path)


def test_a_provider_that_sleeps_past_its_own_time_over_grpc_still_times_out(tmp_path):
    from conformance.bindings.base import HarnessError
    binding = _counting_provider(tmp_path, "Sleeping", 2.0)
    try:
        binding.start()
        started = time.monotonic()
        with pytest.raises(HarnessError, match="within 2s of its own time"):
            binding.request("contribute", {"request": {"token_budget": 100}}, _slow_count)
        assert time.monotonic() - started < 4.0, "the limit came late"
        assert binding.broken
    finally:
        binding.close()
    _no_leftovers(tmp_path)


def test_the_own_time_limit_sleeps_to_each_calls_deadline_and_gives_the_suites_time_back():
    from conformance.bindings.base import OwnTimeLimit
    cancelled = threading.Event()
    limit = OwnTimeLimit(cancelled.set)
    try:
        with limit.watching(30.0):  # a long call first (a Load with its allowance): the thread sleeps to its end
            time.sleep(0.05)
        given_back = [0.0]
        with limit.watching(1.0, lambda: given_back[0]):  # a shorter one after it is still timed
            time.sleep(0.3)
            given_back[0] = 1.0  # the suite spent 1 s of that: the call has 1.7 s of its own left
            assert not cancelled.wait(1.0), "the suite's time was charged to the call"
            assert cancelled.wait(3.0), "the call's own time ran out unnoticed"
        assert limit.fired
    finally:
        limit.stop()
