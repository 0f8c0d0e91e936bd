"""No vector, counterexample or manifest touches a file outside the case directories: a path that
leads out (`..`, absolute, `${workdir}/..`) is refused on load (exit 2, naming file and field), and a
symlink an implementation plants inside its case directory cannot redirect a later write or delete
(the case is an error). Each test keeps a sentinel file outside and checks it is untouched."""

import os
import shutil
from pathlib import Path

import pytest
import yaml

from conformance.data import vectors as vectors_mod
from conformance.data import manifest as manifest_mod
from conformance.data import paths
from conformance.commands import cli
from conformance.bindings.base import PROVIDER_PROTOCOL
from conformance.bindings.python import PythonBinding
from conformance.engine import provider_run
from conformance.engine.connection import Connection
from conformance.reference.filereader import FileReader
from tests.conftest import MANIFESTS, ctxconf

SECRET = "outside the case directory\n"
TO_ROOT = "../" * 40  # more `..` than any temporary directory is deep: from the case directory to /


def _vector(step: dict | None = None, **fields) -> dict:
    """A provider vector that reads CLAUDE.md, contributes once, then takes `step`."""
    doc = {"id": "provider/conf/case", "title": "Confinement", "requirements": ["P-SOURCE-UNAVAILABLE"],
           "applies_to": "file-reader",
           "files": {"CLAUDE.md": "# Conventions\n\nUse tabs.\n", "notes.md": "notes\n", "sub/a.md": "a\n"},
           "steps": [{"configure": {}}, {"contribute": {"token_budget": 1000},
                                         "expect": {"P-SOURCE-UNAVAILABLE": {"own_sections": {"min": 1}}}}]}
    doc["steps"] += [step] if step else []
    doc.update(fields)
    return doc


def _write_vector(folder: Path, doc: dict) -> Path:
    path = folder / "provider" / (doc["id"].split("/", 1)[1] + ".yaml")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, allow_unicode=True))
    return path


def _main(capsys, *args: str) -> tuple[int, str]:
    """The command line in-process: the refusals come before any launch (some tests below run a process)."""
    code = cli.main(list(args))
    return code, capsys.readouterr().err


@pytest.fixture
def sentinel(tmp_path) -> Path:
    path = tmp_path / "outside" / "sentinel.txt"
    path.parent.mkdir()
    path.write_text(SECRET)
    return path


def _untouched(sentinel: Path) -> bool:
    return sentinel.read_text() == SECRET and sorted(p.name for p in sentinel.parent.iterdir()) == ["sentinel.txt"]


@pytest.mark.parametrize("how, field", [
    (lambda s: _vector({"delete": TO_ROOT + str(s).lstrip("/")}), "steps[2].delete"),
    (lambda s: _vector({"delete": str(s)}), "steps[2].delete"),
    (lambda s: _vector({"delete": "sub/../" + TO_ROOT + str(s).lstrip("/")}), "steps[2].delete"),
    (lambda s: _vector({"write": {"ok.md": "x", TO_ROOT + str(s).lstrip("/"): "overwritten"}}),
     "steps[2].write.../"),
    (lambda s: _vector({"write": {str(s): "overwritten"}}), "steps[2].write."),
    (lambda s: _vector({"delete": "."}), "steps[2].delete"),
    (lambda s: _vector(files={"CLAUDE.md": "x", TO_ROOT + str(s).lstrip("/"): "overwritten"}), "files"),
    (lambda s: _vector(source=TO_ROOT + str(s).lstrip("/")), "source"),
], ids=["delete-dotdot", "delete-absolute", "delete-dotdot-after-subdir", "write-dotdot", "write-absolute",
        "delete-case-directory", "files-dotdot", "source-dotdot"])
def test_a_path_leading_out_is_refused_before_anything_runs(how, field, sentinel, tmp_path, capsys):
    vector = _write_vector(tmp_path / "vectors", how(sentinel))
    code, stderr = _main(capsys, "replay", str(vector))
    assert code == 2 and f"{vector}: {field}" in stderr, stderr
    assert _untouched(sentinel)


def test_a_vector_folder_with_a_path_leading_out_is_refused(sentinel, tmp_path):
    _write_vector(tmp_path / "vectors", _vector())
    escape = _vector({"delete": TO_ROOT + str(sentinel).lstrip("/")}, id="provider/conf/bad")
    bad = _write_vector(tmp_path / "vectors", escape)
    run = ctxconf("provider", "--vectors", str(tmp_path / "vectors"), "--no-properties", timeout=60)
    assert run.returncode == 2 and f"{bad}: steps[2].delete: " in run.stderr, run.stdout + run.stderr
    assert _untouched(sentinel)


@pytest.mark.parametrize("config", [
    {"root": "${workdir}/../..", "path": "${source}"},
    {"root": "${workdir}", "path": "../../${source}"},
    {"root": "${workdir}", "path": "/etc/${source}"},
    {"root": "${workdir}", "path": "${source}", "extra": ["${workdir}/" + TO_ROOT]},
])
def test_a_manifest_path_leading_out_of_the_workdir_is_exit_2(config, tmp_path, capsys):
    path = tmp_path / "manifest.yaml"
    path.write_text(yaml.safe_dump({"name": "filereader", "kind": "file-reader", "config": config}))
    code, stderr = _main(capsys, "provider", "--manifest", str(path), "--no-properties")
    assert code == 2 and f"{path}: config." in stderr and "outside the case directory" in stderr, stderr


def test_a_bad_config_leading_out_is_exit_2_and_values_without_placeholders_are_free(tmp_path):
    path = tmp_path / "manifest.yaml"
    doc = {"name": "filereader", "kind": "file-reader", "config": {"root": "${workdir}", "path": "${source}"},
           "bad_config": {"root": "${workdir}", "path": "${workdir}/../elsewhere.md"}}
    path.write_text(yaml.safe_dump(doc))
    run = ctxconf("provider", "--manifest", str(path), "--no-properties", timeout=60)
    assert run.returncode == 2 and "bad_config.path" in run.stderr, run.stderr
    # Not a path the suite fills in: the provider author's own business (an absolute tool path, say).
    doc = {"name": "filereader", "kind": "file-reader",
           "config": {"root": "${workdir}", "path": "${source}", "tool": "/usr/bin/env", "note": "../x"}}
    path.write_text(yaml.safe_dump(doc))
    run = ctxconf("replay", str(paths.VECTORS / "provider/errors/source-deleted-mid-session.yaml"),
                  "--manifest", str(path), timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr


class Symlinker(FileReader):
    """A hostile file reader: while contributing, it replaces notes.md with a symlink to the sentinel,
    sub/ with a symlink to the sentinel's folder, and the next case's directory with one to that folder;
    and it makes pipe.md a FIFO, which a write would block on forever."""

    sentinel: Path

    def contribute(self, request: dict, call) -> dict:
        workdir = Path(request["request"]["working_directory"])
        for name, target in (("notes.md", self.sentinel), ("sub", self.sentinel.parent),
                             ("../provider_conf_z-next", self.sentinel.parent)):
            link = workdir / name
            if link.is_dir() and not link.is_symlink():
                shutil.rmtree(link)
            link.unlink(missing_ok=True)
            link.symlink_to(target)
        if not (workdir / "pipe.md").exists():
            os.mkfifo(workdir / "pipe.md")
        return super().contribute(request, call)


def _run_hostile(catalog, sentinel: Path, tmp_path: Path, docs: list[dict],
                 manifest: Path = MANIFESTS / "filereader.yaml"):
    for doc in docs:
        _write_vector(tmp_path / "vectors", doc)
    loaded = [vectors_mod.load_file(p, catalog) for p in sorted((tmp_path / "vectors").rglob("*.yaml"))]
    provider = type("Hostile", (Symlinker,), {"sentinel": sentinel})
    opener = lambda: PythonBinding("test", PROVIDER_PROTOCOL, 10.0, factory=provider)
    with Connection(opener) as connection:
        return {r.id: r for r in provider_run.run_vectors(connection, loaded, manifest_mod.load(manifest),
                                                          tmp_path / "run" / "cases")}


@pytest.mark.parametrize("step, what", [
    ({"write": {"notes.md": "overwritten"}}, "steps[2].write: 'notes.md' leads through a symlink to"),
    ({"delete": "notes.md"}, None),  # the symlink itself is deleted, never what it points at
    ({"write": {"sub/sentinel.txt": "overwritten", "sub/new.md": "x"}}, "steps[2].write: 'sub/"),
    ({"delete": "sub/sentinel.txt"}, "steps[2].delete: 'sub/sentinel.txt' leads through a symlink to"),
    ({"write": {"pipe.md": "blocks"}}, "steps[2].write: 'pipe.md' is not a regular file"),
], ids=["write-file-link", "delete-file-link", "write-through-dir-link", "delete-through-dir-link", "write-fifo"])
def test_a_symlink_planted_by_the_implementation_redirects_nothing(step, what, catalog, sentinel, tmp_path):
    results = _run_hostile(catalog, sentinel, tmp_path, [_vector(step)])
    error = results["provider/conf/case"].error or ""
    if what is None:
        assert "notes.md" not in error, error
    else:
        assert what in error and (str(sentinel.parent) in error or "pipe" in what), error
    assert _untouched(sentinel)


def test_a_case_directory_replaced_by_a_symlink_is_not_written_through(catalog, sentinel, tmp_path):
    results = _run_hostile(catalog, sentinel, tmp_path, [_vector(), _vector(id="provider/conf/z-next")])
    assert results["provider/conf/case"].error is None
    assert "was replaced" in (results["provider/conf/z-next"].error or "")
    assert _untouched(sentinel)


def test_a_manifest_path_redirected_by_a_symlink_is_a_case_error(catalog, sentinel, tmp_path):
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(yaml.safe_dump({"name": "filereader", "kind": "file-reader",
                                        "config": {"root": "${workdir}/sub", "path": "a.md"}}))
    results = _run_hostile(catalog, sentinel, tmp_path, [_vector({"configure": {}})], manifest)
    error = results["provider/conf/case"].error or ""
    assert "the manifest's config.root" in error and "through a symlink" in error, error
    assert _untouched(sentinel)
