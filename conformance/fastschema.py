"""A fast yes/no for JSON Schema (draft 2020-12), compiled once per schema.

jsonschema walks a schema anew on every call and resolves each $ref through
its registry: 50-300 us for a two-field message, paid on every message an
implementation sends. The suite's schemas use a small set of keywords, so
each is compiled here into nested closures that answer only "valid or not".
When the answer is "not valid", schemas.problems asks jsonschema, so every
error message is still jsonschema's own. A keyword this module does not know
makes compile() raise Unsupported, and the caller keeps using jsonschema for
that schema: a missing keyword can cost speed, never a check.
"""

from __future__ import annotations

import math
import re
import threading
from typing import Any, Callable

Check = Callable[[Any], bool]

# Keywords that never change whether an instance is valid (draft 2020-12 annotations; contentEncoding too:
# 2020-12 makes it an annotation, and jsonschema does not assert it).
ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$defs", "title", "description", "examples", "default",
                         "deprecated", "readOnly", "writeOnly", "contentEncoding", "contentMediaType"})


class Unsupported(Exception):
    """The schema uses a keyword compile() does not implement."""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": _is_number,
    # 2020-12: a number with a zero fractional part is an integer (1.0 is, as jsonschema says)
    "integer": lambda v: _is_number(v) and (isinstance(v, int) or (math.isfinite(v) and v.is_integer())),
}


def equal(a: Any, b: Any) -> bool:
    """JSON equality as JSON Schema means it: true is not 1, 1 is 1.0, containers compare member by member."""
    if a is b:
        return True
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    if _is_number(a) and _is_number(b):
        return a == b
    return type(a) is type(b) and a == b


class Compiler:
    """Compiles schemas of one registry; resolve(uri) returns the schema a $ref's absolute URI names."""

    def __init__(self, resolve: Callable[[str], Any]):
        self.resolve = resolve
        self._refs: dict[str, list] = {}  # uri: [its check], compiled once, so recursive schemas terminate
        self._lock = threading.Lock()

    def compile_ref(self, ref: str, base: str) -> Check:
        """The check for the schema `ref` names. Raises Unsupported, having forgotten whatever this attempt
        compiled: a half-compiled $ref must not be reused by a later one."""
        with self._lock:
            before = set(self._refs)
            try:
                return self._ref(ref, base)
            except Unsupported:
                for uri in set(self._refs) - before:
                    del self._refs[uri]
                raise

    def compile(self, schema: Any, base: str) -> Check:
        """`base` is the URI of the document `schema` sits in, against which its $refs resolve."""
        if schema is True or schema == {}:
            return lambda v: True
        if schema is False:
            return lambda v: False
        if not isinstance(schema, dict):
            raise Unsupported(f"a schema that is a {type(schema).__name__}")
        checks = [self._keyword(name, value, schema, base) for name, value in schema.items()
                  if name not in ANNOTATIONS and name not in ("then", "else")]
        checks = [c for c in checks if c is not None]
        if len(checks) == 1:
            return checks[0]
        return lambda v: all(check(v) for check in checks)

    def _ref(self, ref: str, base: str) -> Check:
        uri = ref if "://" in ref else (base + ref if ref.startswith("#") else base.rpartition("/")[0] + "/" + ref)
        cell = self._refs.get(uri)
        if cell is None:  # filled after compiling: a recursive schema meets its own cell, read only when called
            cell = self._refs[uri] = [None]
            cell[0] = self.compile(self.resolve(uri), uri.partition("#")[0])
        return lambda v: cell[0](v)

    def _keyword(self, name: str, value: Any, schema: dict, base: str) -> Check | None:
        compile_ = self.compile
        if name == "$ref":
            return self._ref(value, base)
        if name == "type":
            kinds = [TYPES[t] for t in ([value] if isinstance(value, str) else value)]
            return kinds[0] if len(kinds) == 1 else lambda v: any(k(v) for k in kinds)
        if name == "enum":
            return lambda v: any(equal(v, option) for option in value)
        if name == "const":
            return lambda v: equal(v, value)
        if name == "required":
            keys = tuple(value)
            return lambda v: not isinstance(v, dict) or all(k in v for k in keys)
        if name == "properties":
            props = {key: compile_(sub, base) for key, sub in value.items()}
            return lambda v: not isinstance(v, dict) or all(c(v[k]) for k, c in props.items() if k in v)
        if name == "additionalProperties":
            known = set(schema.get("properties", ()))
            if "patternProperties" in schema:
                raise Unsupported("additionalProperties beside patternProperties")
            extra = compile_(value, base)
            return lambda v: not isinstance(v, dict) or all(extra(x) for k, x in v.items() if k not in known)
        if name == "propertyNames":
            names = compile_(value, base)
            return lambda v: not isinstance(v, dict) or all(names(k) for k in v)
        if name in ("minProperties", "maxProperties"):
            fits = (lambda n: n >= value) if name == "minProperties" else (lambda n: n <= value)
            return lambda v: not isinstance(v, dict) or fits(len(v))
        if name == "items":
            each = compile_(value, base)
            return lambda v: not isinstance(v, list) or all(each(x) for x in v)
        if name in ("minItems", "maxItems"):
            fits = (lambda n: n >= value) if name == "minItems" else (lambda n: n <= value)
            return lambda v: not isinstance(v, list) or fits(len(v))
        if name in ("minLength", "maxLength"):  # in code points, as len() counts them
            fits = (lambda n: n >= value) if name == "minLength" else (lambda n: n <= value)
            return lambda v: not isinstance(v, str) or fits(len(v))
        if name == "pattern":
            search = re.compile(value).search  # jsonschema's own dialect: Python's re, searched
            return lambda v: not isinstance(v, str) or search(v) is not None
        if name in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            # phrased as jsonschema phrases the failure, so that NaN (which json.loads reads) passes alike
            fits = {"minimum": lambda n: not n < value, "maximum": lambda n: not n > value,
                    "exclusiveMinimum": lambda n: not n <= value, "exclusiveMaximum": lambda n: not n >= value}[name]
            return lambda v: not _is_number(v) or fits(v)
        if name in ("allOf", "anyOf", "oneOf"):
            subs = [compile_(sub, base) for sub in value]
            if name == "allOf":
                return lambda v: all(s(v) for s in subs)
            if name == "anyOf":
                return lambda v: any(s(v) for s in subs)
            return lambda v: sum(1 for s in subs if s(v)) == 1
        if name == "not":
            negated = compile_(value, base)
            return lambda v: not negated(v)
        if name == "if":
            condition = compile_(value, base)
            then = compile_(schema.get("then", True), base)
            otherwise = compile_(schema.get("else", True), base)
            return lambda v: then(v) if condition(v) else otherwise(v)
        raise Unsupported(name)  # uniqueItems, format, dependentSchemas, ...: jsonschema decides
