"""JSON Schema validation against the files in schemas/ (draft 2020-12).

Every data file the suite reads and every message an implementation sends is
checked here; a failure names the file (or message) and the field path.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema_rs
import yaml

from conformance.data import disk_cache
from conformance.data.paths import SCHEMAS

BASE = "https://ctxconf.dev/schemas/"


class InputError(Exception):
    """Bad input the user gave the suite: exit code 2."""

    def __init__(self, source: str, message: str, field: str = ""):
        self.source, self.field = source, field
        where = f"{source}: {field}: " if field else f"{source}: "
        super().__init__(where + message)


# jsonschema, and the referencing library under it, are imported only to word an error: most runs meet none.

@lru_cache(maxsize=None)
def _registry():
    from referencing import Registry, Resource
    resources = []
    for path in sorted(SCHEMAS.glob("*.json")):
        document = json.loads(path.read_text())
        resources.append((BASE + path.name, Resource.from_contents(document)))
    return Registry().with_resources(resources)


@lru_cache(maxsize=None)
def validator(ref: str):
    """A jsonschema validator for `file.json` or `file.json#/$defs/Name`."""
    import jsonschema
    return jsonschema.Draft202012Validator({"$ref": BASE + ref}, registry=_registry(),
                                           format_checker=jsonschema.FormatChecker())


def field_path(error) -> str:
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return path.lstrip(".") or "(top level)"


@lru_cache(maxsize=None)
def _compiled_registry() -> jsonschema_rs.Registry:
    return jsonschema_rs.Registry([(BASE + path.name, json.loads(path.read_text())) for path in
                                   sorted(SCHEMAS.glob("*.json"))], draft=jsonschema_rs.Draft202012)


@lru_cache(maxsize=None)
def is_valid(ref: str):
    """The fast yes/no for `ref`, checked on every message: jsonschema-rs, compiled once. jsonschema, the
    reference implementation, words the errors (problems), and a test holds the two to the same answers."""
    return jsonschema_rs.validator_for({"$ref": BASE + ref}, registry=_compiled_registry()).is_valid


def problems(ref: str, data: Any) -> list[tuple[str, str]]:
    """(field path, message) for every way `data` breaks the schema, most relevant first."""
    if is_valid(ref)(data):  # the common case, checked in a few microseconds; errors are jsonschema's own
        return []
    from jsonschema.exceptions import relevance
    errors = sorted(validator(ref).iter_errors(data), key=relevance)
    return [(field_path(_deepest(e)), _deepest(e).message) for e in errors]


def check(ref: str, data: Any, source: str) -> None:
    """Raise InputError naming `source` and the field if `data` breaks the schema."""
    found = problems(ref, data)  # read_yaml has capped the nesting, so jsonschema's recursion is bounded
    if found:
        field, message = found[0]
        raise InputError(source, message, field)


def _deepest(error):
    # oneOf/anyOf failures hide the useful message in their context.
    from jsonschema.exceptions import best_match
    while error.context:
        error = best_match(error.context)
    return error


MAX_FILE_BYTES = 10 * 2**20  # far above any vector, manifest or baseline; bounds what one file can cost
MAX_DEPTH = 64  # nesting levels of a file or a message; real ones use about a dozen, protobuf's JSON reader stops at 100


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml's, when PyYAML was built with it
    """The safe loader, minus aliases. Vectors, manifests and baselines never need them, and an alias
    bomb (a kilobyte of nested *refs) expands past gigabytes wherever the data is walked. libyaml itself
    stops nesting at 1000 levels; Python's int() stops at 4300 digits (sys.set_int_max_str_digits)."""

    def construct_object(self, node, deep=False):
        if node in self.constructed_objects:  # a node met twice: only an alias (or a << merge) does that
            raise yaml.constructor.ConstructorError(None, None, "this anchored value is reused by an alias "
                                                    "(*name); aliases are not allowed here", node.start_mark)
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as exc:  # a 5,000-digit int, a 13th month: name the place
            problem = str(exc).partition("; use sys.")[0]  # Python's advice to raise its limit is not the user's
            raise yaml.constructor.ConstructorError(None, None, problem, node.start_mark) from None


def _read_text(path: Path) -> str:
    """A file the suite reads, within MAX_FILE_BYTES, as UTF-8 text."""
    try:
        with path.open("rb") as stream:
            data = stream.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise InputError(str(path), f"larger than {MAX_FILE_BYTES // 2**20} MB; not a file the suite reads")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(str(path), f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None


def _capped_parse(path: Path, parse, text: str) -> object:
    """`parse(text)` with Python's cap on integer digits on (PYTHONINTMAXSTRDIGITS=0 switches it off, and
    int() of 10 MB of digits takes minutes), then the nesting capped at MAX_DEPTH."""
    digits = sys.get_int_max_str_digits()
    try:
        if digits == 0:
            sys.set_int_max_str_digits(sys.int_info.default_max_str_digits)
        doc = parse(text)
    except RecursionError:  # the pure-Python YAML loader recurses once per level; json's decoder too
        raise InputError(str(path), "nested too deeply") from None
    finally:
        sys.set_int_max_str_digits(digits)
    if depth(doc) > MAX_DEPTH:
        raise InputError(str(path), f"nested more than {MAX_DEPTH} levels deep")
    return doc


def read_yaml(path: Path) -> object:
    def parse(text: str) -> object:
        try:
            return yaml.load(text, Loader=_Loader)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
            raise InputError(str(path), f"not valid YAML: {where}{getattr(exc, 'problem', exc)}") from None
    text = _read_text(path)
    # Building the objects is Python's work even under libyaml, a third of a command line's start: with
    # CTXCONF_CACHE set, a text parsed once is read back by marshal (which writes every type safe YAML makes
    # but dates: those are parsed each time). Only a document read whole is kept; an error is found again.
    kept = disk_cache.entry("yaml", _loader_identity(), text)
    if (known := disk_cache.read(kept)) is not None:
        try:
            return marshal.loads(known)
        except (ValueError, EOFError, TypeError):  # not one of ours after all: parse it again
            pass
    doc = _capped_parse(path, parse, text)
    try:
        disk_cache.write(kept, marshal.dumps(doc))
    except ValueError:
        pass
    return doc


@lru_cache(maxsize=None)
def _loader_identity() -> str:
    """What a parse follows from beside the text: PyYAML's version and parser, and this module's loader."""
    return f"{yaml.__version__} {yaml.__with_libyaml__} {hashlib.sha256(Path(__file__).read_bytes()).hexdigest()}"


def read_json(path: Path, what: str = "JSON") -> object:
    """A JSON file, within the same caps as read_yaml."""
    def parse(text: str) -> object:
        try:
            return json.loads(text)
        except ValueError as exc:  # not JSON, or an integer longer than the digits cap
            raise InputError(str(path), f"not {what}: {exc}") from None
    return _capped_parse(path, parse, _read_text(path))


def depth(data: object) -> int:
    """How deeply lists and mappings nest (without recursing: the data may be as deep as libyaml allows)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, level = stack.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if children is not None:
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in children)
    return deepest
