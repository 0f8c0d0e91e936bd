"""The ways a provider's source and configuration can fail that the vectors now put to it: a source made
unreadable (as root too), a directory, not text; each required field left out in turn; every field of
Describe's ProducerRef; capabilities asked again after a Contribute."""

import os
import stat

import pytest

from conformance.engine import provider_driver
from conformance.engine.case_dir import CaseDir
from conformance.engine.provider_checks import Checker
from conformance.data.provider_cases import ProviderCase, Step
from conformance.engine.provider_driver import ProviderTranscript, StepRecord, change_files
from conformance.data.manifest import load as load_manifest
from conformance.proofs import provider_mutants
from conformance.reference.filereader import FileReader
from tests.conftest import MANIFESTS, certify_provider


def _spoil(tmp_path, how: str) -> ProviderTranscript:
    (tmp_path / "CLAUDE.md").write_text("# Conventions\n\nUse tabs.\n")
    transcript = ProviderTranscript(tmp_path)
    change_files(Step("spoil", {"CLAUDE.md": how}, {}, 2), transcript)
    return transcript


def _read_fails(path) -> bool:
    try:
        path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return True
    return False


@pytest.mark.parametrize("how", ["unreadable", "directory", "not-text"])
def test_a_spoiled_source_cannot_be_read_as_text_and_a_write_puts_it_right(how, tmp_path):
    transcript = _spoil(tmp_path, how)
    assert _read_fails(tmp_path / "CLAUDE.md") and "CLAUDE.md" in transcript.spoiled
    if how == "not-text":
        data = (tmp_path / "CLAUDE.md").read_bytes()
        assert data.startswith(b"# Conventions\n\nUse tabs.\n") and b"\x00" in data
    change_files(Step("write", {"CLAUDE.md": "# Back\n"}, {}, 3), transcript)
    assert (tmp_path / "CLAUDE.md").read_text() == "# Back\n" and not transcript.spoiled


def test_unreadable_is_a_permission_where_permissions_stop_reads_else_a_symlink_to_itself(tmp_path, monkeypatch):
    (tmp_path / "as-is").mkdir()
    transcript = _spoil(tmp_path / "as-is", "unreadable")
    target = tmp_path / "as-is" / "CLAUDE.md"
    if os.geteuid() == 0:  # root reads a file without permissions: the suite falls back to a symlink loop
        assert target.is_symlink() and os.readlink(target) == "CLAUDE.md" and "symlink" in transcript.spoiled["CLAUDE.md"]
    real = CaseDir.forbid_reading
    monkeypatch.setattr(CaseDir, "forbid_reading", lambda self, name, what: real(self, name, what) or True)  # a user
    (tmp_path / "user").mkdir()
    transcript = _spoil(tmp_path / "user", "unreadable")
    mode = (tmp_path / "user" / "CLAUDE.md").lstat().st_mode
    assert stat.S_ISREG(mode) and stat.S_IMODE(mode) == 0 and "read permission" in transcript.spoiled["CLAUDE.md"]
    change_files(Step("delete", "CLAUDE.md", {}, 3), transcript)
    assert not (tmp_path / "user" / "CLAUDE.md").exists()


@pytest.mark.parametrize("how", ["unreadable", "directory", "not-text"])
def test_the_reference_reader_reports_a_spoiled_source_or_reads_what_is_text(how, tmp_path):
    reader = FileReader()
    (tmp_path / "CLAUDE.md").write_text("# Conventions\n\nUse tabs.\n")
    reader.configure({"config": {"root": str(tmp_path), "path": "CLAUDE.md"}}, None)
    _spoil(tmp_path, how)
    if how == "not-text":
        assert "Use tabs." in reader.read()
        return
    with pytest.raises(Exception) as failure:
        reader.read()
    assert failure.value.code == "UNAVAILABLE" and failure.value.context_error["category"].endswith("SOURCE_UNAVAILABLE")


@pytest.mark.parametrize("mutant, vector", [
    ("OnlyMissingIsUnavailable", "source-unreadable"), ("OnlyMissingIsUnavailable", "source-is-a-directory"),
    ("SilentWhenUnreadable", "source-unreadable"), ("SilentOnDirectory", "source-is-a-directory"),
    ("StrictDecodingIsUnknown", "source-not-text"),
])
def test_each_failure_mode_mutant_is_caught_on_its_vector(mutant, vector, provider_vectors, tmp_path):
    [chosen] = [v for v in provider_vectors if v.id == f"provider/errors/{vector}"]
    [result] = certify_provider(getattr(provider_mutants, mutant), "filereader", [chosen], tmp_path)
    assert {f.requirement for f in result.failures()} == {"P-SOURCE-UNAVAILABLE"}, result.failures()


def test_each_required_field_is_left_out_in_turn(tmp_path):
    manifest = load_manifest(MANIFESTS / "filereader.yaml")
    transcript = ProviderTranscript(tmp_path, FileReader.CAPABILITIES)
    case = ProviderCase("provider/x/y", {"CONTEXT.md": "x"}, "CONTEXT.md", ())
    step = Step("configure", {"missing_required": True}, {}, 0)
    records = provider_driver.step_records(step, transcript, manifest, case)
    assert [r.omitted for r in records] == ["root", "path"]
    assert [r.where for r in records] == ["step 1 (configure without 'root')", "step 1 (configure without 'path')"]
    none = ProviderTranscript(tmp_path, {"config_schema": {"attributes": [{"name": "root", "required": False}]}})
    [unserved] = provider_driver.step_records(step, none, manifest, case)
    assert unserved.unserved and not unserved.omitted


def test_a_reader_that_defaults_its_second_required_field_is_caught(provider_vectors, tmp_path):
    results = certify_provider(provider_mutants.DefaultsSecondRequiredField, "filereader", provider_vectors, tmp_path)
    failures = [f for r in results for f in r.failures()]
    assert {f.requirement for f in failures} == {"P-CONFIGURE-REQUIRED-FIELD"}
    assert all("without 'path'" in f.where for f in failures)


@pytest.mark.parametrize("change, problem", [
    (lambda p: p.update(source=""), "source is empty"), (lambda p: p.pop("protocol_version"), "protocol_version"),
    (lambda p: p.update(version=""), "version is empty"), (lambda p: p.update(category="CATEGORY_TOOL"), "category"),
])
def test_describe_reports_every_field_of_the_producer(change, problem):
    producer = FileReader().describe({}, None)["producer"]
    checker = Checker(ProviderTranscript(None, {}), load_manifest(MANIFESTS / "filereader.yaml"))
    record = StepRecord(Step("describe", {}, {}, 0))
    record.result = {"producer": dict(producer)}
    checker.check_describe(record, "here")
    change(record.result["producer"])
    checker.check_describe(record, "here")
    first, second = checker.findings
    assert first.passed and not second.passed and problem in second.message


@pytest.mark.parametrize("mutant, requirement", [
    ("DescribesWithoutSource", "P-DESCRIBE"), ("DescribesWithoutProtocolVersion", "P-DESCRIBE"),
    ("StabilityFromLastRead", "P-CAP-STATIC-PROPERTIES"),
])
def test_the_identity_and_capability_mutants_are_caught(mutant, requirement, provider_vectors, tmp_path):
    results = certify_provider(getattr(provider_mutants, mutant), "filereader", provider_vectors, tmp_path)
    assert {f.requirement for r in results for f in r.failures()} == {requirement}
    if mutant == "StabilityFromLastRead":  # the case after declares dynamic from the start, kept from its last
        # read, and its sections say static: legal under a dynamic declaration (R-SECTION-STABILITY-DECLARED)
        assert {r.id for r in results if r.failures()} == {"provider/capabilities/stable-after-contribute"}
