"""The configurations a `configure: {schema_probes: true}` step sends, drawn from the ConfigSchema the provider
declares, so that any provider is probed with its own attribute names (ruling R-CONFIG-OFF-SCHEMA).

For every attribute: a value of each JSON kind other than the one its type maps to (a number for a string, a
string for a number, a list, an object, a bool, null), and values of its own kind a provider may find out of range
(an empty string, a path leaving its directory, a negative or huge number, a list or map of the wrong items);
each sent in the manifest's config in place of the attribute's own value. Then the manifest's config without each
optional attribute it sets, one at a time (a kernel leaves out what agent.hcl does not set), and no config at all. Whatever the
provider makes of one, it either takes it (a value it chooses to coerce) or fails with a categorized error; a crash
or an uncategorized failure is P-ERROR-CATEGORIZED's finding.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import PurePosixPath

NO_CONFIG = None  # a probe's config: null, which the proto3 JSON mapping reads as no config field at all

# The JSON kind each config.v1.AttrType decodes to (configuration/blocks-reference.md#the-schema-to-cty-bridge).
KIND_OF_TYPE = {"ATTR_TYPE_STRING": "string", "ATTR_TYPE_NUMBER": "number", "ATTR_TYPE_BOOL": "bool",
                "ATTR_TYPE_LIST_STRING": "list", "ATTR_TYPE_LIST_NUMBER": "list", "ATTR_TYPE_MAP_STRING": "object",
                "ATTR_TYPE_OBJECT": "object"}
# One value of each JSON kind, for an attribute of another kind.
OF_KIND = {"string": "ctxconf-not-this-type", "number": 7, "bool": True, "list": ["ctxconf"],
           "object": {"ctxconf": "value"}, "null": None}


@dataclass(frozen=True)
class ConfigProbe:
    what: str                 # in words, for a finding's `where`
    config: dict | None       # NO_CONFIG: no config field


def _odd_values(attribute: dict, value) -> list:
    """Values of the attribute's own kind that a provider may well refuse: out of its range."""
    kind = attribute.get("type")
    if kind == "ATTR_TYPE_STRING":
        name = PurePosixPath(value).name if isinstance(value, str) and value else "ctxconf-probe"
        return ["", f"../{name}"]  # empty, and a path leaving the directory it is taken in
    if kind == "ATTR_TYPE_NUMBER":
        return [-1, 0.5, 1e12]
    if kind == "ATTR_TYPE_LIST_STRING":
        return [[7], []]
    if kind == "ATTR_TYPE_LIST_NUMBER":
        return [["ctxconf"], []]
    if kind == "ATTR_TYPE_MAP_STRING":
        return [{"ctxconf": 7}]
    if kind == "ATTR_TYPE_OBJECT":
        return [{}]
    return []


def wrong_values(schema: dict, config: dict) -> list[ConfigProbe]:
    """Each attribute of the schema with each value off its type or out of its range, the rest of the
    manifest's config as it is; then that config without each optional attribute it sets; then no config at all."""
    probes = []
    for attribute in schema.get("attributes") or []:
        name = attribute.get("name")
        if not name:
            continue  # P-CAP-CONFIG-SCHEMA's finding (schema_gaps); nothing to send it under
        own = KIND_OF_TYPE.get(attribute.get("type"))
        values = [v for kind, v in OF_KIND.items() if kind != own] + _odd_values(attribute, config.get(name))
        probes += [ConfigProbe(f"{name} = {json.dumps(v)}", {**config, name: v}) for v in values]
    optional = [a["name"] for a in schema.get("attributes") or [] if a.get("name") in config and not a.get("required")]
    probes += [ConfigProbe(f"no {name}", {k: v for k, v in config.items() if k != name}) for name in optional]
    return probes + [ConfigProbe("no config at all", NO_CONFIG)]

