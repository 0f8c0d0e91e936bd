"""Provider manifests: how the suite configures a provider against the fixture
files it writes (docs/provider-protocol.md). Validated on load; a bad manifest is exit 2."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from conformance.data.schemas import InputError, check, read_yaml

DEFAULT_SOURCE = "CONTEXT.md"
MISSING_SOURCE = "missing-by-design.md"
# The source a glob step names: a pattern nothing in the case directory matches, and, read as a literal name,
# a file that does not exist either, so a reader of either kind must refuse it (P-CONFIGURE-REJECT).
MISSING_GLOB = "missing-by-design-*.md"
# The sources of the other probes of a declared path that resolves to nothing (P-CONFIGURE-REJECT): a name under a
# folder (a vector may make the folder exist or not) that is no file, and a symlink the suite makes, just before
# the Configure, pointing at MISSING_SOURCE: there on disk as a link, but leading nowhere.
MISSING_NESTED = "docs/missing-by-design.md"
DANGLING_SOURCE = "dangling-by-design.md"
# Each kind of bad Configure a vector step names (configure.bad) that puts a source of the suite's in ${source}.
STANDING_IN = {"glob": MISSING_GLOB, "nested": MISSING_NESTED, "dangling": DANGLING_SOURCE}
PLACEHOLDERS = ("${workdir}", "${source}")
CASE_STAND_IN = Path("/ctxconf-case")  # the case directory, when a file is checked on load before any exists


@dataclass(frozen=True)
class Manifest:
    name: str
    kind: str
    config: dict
    bad_config: dict | None
    path: str = ""

    @property
    def reads_files(self) -> bool:
        return self.kind == "file-reader"

    @property
    def names_source(self) -> bool:
        """Whether the config puts ${source} anywhere, so that another source can be put in its place."""
        return any("${source}" in value for _, value in _placeholder_strings(self.config, "config"))

    def configured(self, workdir: Path, source: str, bad: bool | str = False) -> dict:
        """The config with ${workdir} and ${source} filled in; the bad one points at a missing file, and the
        "glob", "nested" and "dangling" ones are the config with ${source} a glob that matches nothing, a missing
        file under a folder, or a symlink that leads nowhere (STANDING_IN)."""
        _, template, table = self._template(workdir, source, bad)
        return _substitute(template, table)

    def paths(self, workdir: Path, source: str, bad: bool | str = False) -> list[tuple[str, str]]:
        """(field, value) of each configured value built from a placeholder: a path, which must lead
        inside the case directory."""
        name, template, table = self._template(workdir, source, bad)
        return [(field, _substitute(value, table)) for field, value in _placeholder_strings(template, name)]

    def _template(self, workdir: Path, source: str, bad: bool | str) -> tuple[str, dict, dict[str, str]]:
        name, template = "config", self.config
        if bad in STANDING_IN:
            source = STANDING_IN[bad]
        elif bad and self.bad_config is not None:
            name, template = "bad_config", self.bad_config
        elif bad:
            source = MISSING_SOURCE
        return name, template, {"${workdir}": str(workdir), "${source}": source}


def load(path: Path) -> Manifest:
    doc = read_yaml(path)
    check("manifest.json", doc, str(path))
    manifest = Manifest(doc["name"], doc.get("kind", "generic"), doc["config"], doc.get("bad_config"), str(path))
    # Only values that use a placeholder are taken for paths and confined: a manifest is its author's
    # description of their own provider's config, whose other values (a model name, a threshold, an
    # absolute path to a tool of theirs) the suite cannot tell apart from data and does not act on.
    for bad in (False, True, *STANDING_IN):
        for field, value in manifest.paths(CASE_STAND_IN, DEFAULT_SOURCE, bad):
            problem = path_problem(CASE_STAND_IN, value, follow_symlinks=False)
            if problem:
                raise InputError(str(path), problem, field)
    return manifest


@functools.lru_cache(maxsize=256)
def real_path(base: Path) -> Path:
    """base with its symlinks resolved, as it was first asked for: a case directory replaced by a symlink
    later still counts as where it was, so nothing reached through the new link is inside it."""
    return base.resolve()


def path_problem(base: Path, name: str, follow_symlinks: bool = True) -> str | None:
    """Why base/name does not lead inside base (base itself counts as inside), or None. By its text
    first: `..` and absolute paths (a provider may clean a path lexically, as Go's filepath.Clean does);
    then, with follow_symlinks, as the system resolves it, which symlinks in base can redirect."""
    return confined(base, name, follow_symlinks)[1]


def confined(base: Path, name: str, follow_symlinks: bool = True) -> tuple[Path | None, str | None]:
    """base/name (resolved with follow_symlinks, else cleaned by its text) and path_problem's answer."""
    if "\0" in name:
        return None, "a path cannot hold a NUL character"
    lexical = Path(os.path.normpath(base / name))
    if not lexical.is_relative_to(base):
        return None, f"{name!r} leads outside the case directory"
    if not follow_symlinks:
        return lexical, None
    try:
        resolved = (base / name).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop (RuntimeError before Python 3.13)
        return None, f"{name!r} cannot be resolved: {exc}"
    if not resolved.is_relative_to(real_path(base)):
        return None, f"{name!r} leads outside the case directory through a symlink, to {resolved}"
    return resolved, None


def _placeholder_strings(value, field: str) -> Iterator[tuple[str, str]]:
    """(field path, string) of every string in `value` that uses a placeholder."""
    if isinstance(value, str) and any(p in value for p in PLACEHOLDERS):
        yield field, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _placeholder_strings(item, f"{field}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _placeholder_strings(item, f"{field}[{i}]")


def _substitute(value, table: dict[str, str]):
    if isinstance(value, str):
        for placeholder, text in table.items():
            value = value.replace(placeholder, text)
        return value
    if isinstance(value, dict):
        return {k: _substitute(v, table) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, table) for v in value]
    return value
