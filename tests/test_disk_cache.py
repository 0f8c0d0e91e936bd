"""What one process leaves for the next (conformance/data/disk_cache.py) is found again only for the same
input: a parsed YAML file for the same text, read back whole and as a fresh copy; an error, a file edited
since, a broken entry or a value marshal cannot keep are read from the file again."""

from __future__ import annotations

import datetime

import pytest

from conformance.data import disk_cache, schemas
from conformance.data.schemas import InputError

DOC = "id: kernel/x/y\nitems: [1, 2.5, true, null, {nested: text}]\n"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(disk_cache.ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def parsed_without_yaml(monkeypatch, path):
    """read_yaml with the YAML parser unusable: only the cache can answer."""
    with monkeypatch.context() as patch:
        patch.setattr(schemas.yaml, "load", lambda *a, **k: pytest.fail("parsed again"))
        return schemas.read_yaml(path)


def test_a_file_parsed_once_is_read_back_as_a_fresh_copy(cache, tmp_path, monkeypatch):
    path = tmp_path / "v.yaml"
    path.write_text(DOC)
    first = schemas.read_yaml(path)
    assert len(list((cache / "yaml").iterdir())) == 1
    first["items"][4]["nested"] = "changed by a caller"
    again = parsed_without_yaml(monkeypatch, path)
    assert again == {"id": "kernel/x/y", "items": [1, 2.5, True, None, {"nested": "text"}]}
    assert [type(v) for v in again["items"]] == [int, float, bool, type(None), dict]


def test_an_edited_file_is_parsed_again(cache, tmp_path):
    path = tmp_path / "v.yaml"
    path.write_text(DOC)
    schemas.read_yaml(path)
    path.write_text(DOC.replace("text", "other"))
    assert schemas.read_yaml(path)["items"][4] == {"nested": "other"}


def test_an_error_is_found_each_time_and_never_kept(cache, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("a: [1, 2\n")
    for _ in range(2):
        with pytest.raises(InputError, match="not valid YAML"):
            schemas.read_yaml(path)
    deep = tmp_path / "deep.yaml"
    deep.write_text("a: " + "[" * 70 + "]" * 70 + "\n")
    for _ in range(2):
        with pytest.raises(InputError, match="nested more than"):
            schemas.read_yaml(deep)
    assert not (cache / "yaml").exists()


def test_what_marshal_cannot_keep_and_a_broken_entry_are_parsed_from_the_file(cache, tmp_path):
    dated = tmp_path / "dated.yaml"
    dated.write_text("when: 2026-12-07\n")
    assert schemas.read_yaml(dated) == schemas.read_yaml(dated) == {"when": datetime.date(2026, 12, 7)}
    path = tmp_path / "v.yaml"
    path.write_text(DOC)
    expected = schemas.read_yaml(path)
    [entry] = (cache / "yaml").iterdir()
    entry.write_bytes(entry.read_bytes()[:7])
    assert schemas.read_yaml(path) == expected


def test_off_unless_a_folder_is_named(tmp_path, monkeypatch):
    monkeypatch.delenv(disk_cache.ENV, raising=False)
    path = tmp_path / "v.yaml"
    path.write_text(DOC)
    schemas.read_yaml(path)
    assert disk_cache.entry("yaml", "x") is None and [p.name for p in tmp_path.iterdir()] == ["v.yaml"]


def test_an_entry_is_named_by_all_its_parts_and_where_they_divide():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(disk_cache.ENV, "/nowhere")
        assert disk_cache.entry("yaml", "ab", "c") != disk_cache.entry("yaml", "a", "bc")
        assert disk_cache.entry("yaml", "ab") != disk_cache.entry("scenarios", "ab")
        assert disk_cache.entry("yaml", "ab") == disk_cache.entry("yaml", b"ab")
