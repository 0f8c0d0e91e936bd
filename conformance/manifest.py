"""Provider manifests: how the suite configures a provider against the fixture
files it writes (DESIGN §6). Validated on load; a bad manifest is exit 2."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from conformance.schemas import check, read_yaml

DEFAULT_SOURCE = "CONTEXT.md"
MISSING_SOURCE = "missing-by-design.md"


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

    def configured(self, workdir: Path, source: str, bad: bool = False) -> dict:
        """The config with ${workdir} and ${source} filled in; the bad one points at a missing file."""
        if bad:
            template = self.bad_config if self.bad_config is not None else self.config
            source = source if self.bad_config is not None else MISSING_SOURCE
        else:
            template = self.config
        return _substitute(template, {"${workdir}": str(workdir), "${source}": source})


def load(path: Path) -> Manifest:
    doc = read_yaml(path)
    check("manifest.json", doc, str(path))
    return Manifest(doc["name"], doc.get("kind", "generic"), doc["config"], doc.get("bad_config"), str(path))


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
