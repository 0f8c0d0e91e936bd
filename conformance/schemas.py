"""JSON Schema validation against the files in conformance/data/schemas (draft 2020-12).

Every data file the suite reads and every message an implementation sends is
checked here; a failure names the file (or message) and the field path.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from referencing import Registry, Resource

from conformance.paths import SCHEMAS

BASE = "https://ctxconf.dev/schemas/"


class InputError(Exception):
    """Bad input the user gave the suite: exit code 2."""

    def __init__(self, source: str, message: str, field: str = ""):
        self.source, self.field = source, field
        where = f"{source}: {field}: " if field else f"{source}: "
        super().__init__(where + message)


@lru_cache(maxsize=None)
def _registry() -> Registry:
    resources = []
    for path in sorted(SCHEMAS.glob("*.json")):
        document = json.loads(path.read_text())
        resources.append((BASE + path.name, Resource.from_contents(document)))
    return Registry().with_resources(resources)


@lru_cache(maxsize=None)
def validator(ref: str) -> jsonschema.Draft202012Validator:
    """A validator for `file.json` or `file.json#/$defs/Name`."""
    return jsonschema.Draft202012Validator({"$ref": BASE + ref}, registry=_registry(),
                                           format_checker=jsonschema.FormatChecker())


def field_path(error: jsonschema.ValidationError) -> str:
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return path.lstrip(".") or "(top level)"


def problems(ref: str, data: Any) -> list[tuple[str, str]]:
    """(field path, message) for every way `data` breaks the schema, most relevant first."""
    check_with = validator(ref)
    if check_with.is_valid(data):  # the common case, and much cheaper than collecting errors
        return []
    errors = sorted(check_with.iter_errors(data), key=jsonschema.exceptions.relevance)
    return [(field_path(_deepest(e)), _deepest(e).message) for e in errors]


def check(ref: str, data: Any, source: str) -> None:
    """Raise InputError naming `source` and the field if `data` breaks the schema."""
    found = problems(ref, data)
    if found:
        field, message = found[0]
        raise InputError(source, message, field)


def _deepest(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    # oneOf/anyOf failures hide the useful message in their context.
    while error.context:
        error = jsonschema.exceptions.best_match(error.context)
    return error


_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, when PyYAML was built with it


def read_yaml(path: Path) -> object:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror}") from None
    try:
        return yaml.load(text, Loader=_SAFE_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise InputError(str(path), f"not valid YAML: {where}{getattr(exc, 'problem', exc)}") from None
