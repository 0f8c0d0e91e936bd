"""Both reference providers pass every provider vector over both bindings;
manifests and commands that are wrong are clear usage errors. (Each mutant
failing what it declares is the self-test's business.)"""

import pytest
import yaml

from conformance.reference import compactor, filereader
from tests.conftest import MANIFESTS, SHIM, certify_provider, ctxconf

REFERENCES = [("filereader", filereader.create), ("compactor", compactor.create)]


def _assert_clean(results):
    problems = [(r.id, f.requirement, f.where, f.message) for r in results for f in r.failures()]
    errors = [(r.id, r.error) for r in results if r.error]
    assert not problems and not errors, (problems[:5], errors[:3])
    assert any(r.status == "pass" for r in results)


@pytest.mark.parametrize("name, factory", REFERENCES)
def test_reference_provider_is_conformant_in_process(name, factory, provider_vectors, tmp_path):
    _assert_clean(certify_provider(factory, name, provider_vectors, tmp_path))


@pytest.mark.parametrize("name, factory", REFERENCES)
def test_reference_provider_is_conformant_over_stdio(name, factory, provider_vectors, tmp_path):
    command = f"{SHIM} conformance.reference.{name}:create"
    _assert_clean(certify_provider(None, name, provider_vectors, tmp_path, command=command))


def test_provider_command_line(tmp_path):
    run = ctxconf("provider", "--stdio", f"{SHIM} conformance.reference.compactor:create",
                  "--manifest", str(MANIFESTS / "compactor.yaml"), "--profile", "ci", "--report", str(tmp_path / "r.json"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "provider certification of ctxconf-reference-compactor" in run.stdout
    run = ctxconf("provider", "--python", "conformance.proofs.provider_mutants:IgnoresBudget",
                  "--manifest", str(MANIFESTS / "filereader.yaml"), "--no-properties")
    assert run.returncode == 1 and "FAIL  P-WITHIN-BUDGET" in run.stdout


@pytest.mark.parametrize("manifest, field", [
    ({"kind": "file-reader", "config": {}}, "name"),
    ({"name": "x", "config": "root=/"}, "config"),
    ({"name": "x", "kind": "reader", "config": {}}, "kind"),
])
def test_a_bad_manifest_exits_2_naming_the_field(manifest, field, tmp_path):
    path = tmp_path / "manifest.yaml"
    path.write_text(yaml.safe_dump(manifest))
    run = ctxconf("provider", "--python", "conformance.reference.filereader:create", "--manifest", str(path))
    assert run.returncode == 2 and "manifest.yaml" in run.stderr and field in run.stderr, run.stderr
    assert "Traceback" not in run.stderr


def test_provider_usage_errors():
    run = ctxconf("provider", "--stdio", "no-such-provider-binary", "--manifest", str(MANIFESTS / "filereader.yaml"))
    assert run.returncode == 2 and "no such executable" in run.stderr
    run = ctxconf("provider", "--python", "conformance.reference.filereader:create")
    assert run.returncode == 2 and "--manifest" in run.stderr
