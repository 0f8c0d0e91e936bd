"""The other JSON forms a real implementation may emit for the same protobuf
message: what Go's protojson writes (lowerCamelCase, int64 as strings, default
values left out), enums as numbers, and fields the reader has never heard of.
The conforming variants speak them, to prove the suite reads every form the
proto3 JSON mapping allows (docs/kernel-protocol.md, docs/provider-protocol.md)."""

from __future__ import annotations

from conformance.wire import forms

# A field no version of the protos declares; readers must ignore it.
UNKNOWN_FIELD = {"ctxconfFutureField": {"note": "added by a newer peer", "values": [1, "two"]}}


def protojson(type_name: str, data: dict) -> dict:
    """Go protojson's default output: lowerCamelCase names, int64 as strings, defaults omitted."""
    from google.protobuf import json_format  # loaded by the variants that speak it: a stdio shim starts faster
    return json_format.MessageToDict(forms.parse(type_name, data))


def enums_as_numbers(type_name: str, data: dict) -> dict:
    """snake_case and every field present, but enums by number."""
    from google.protobuf import json_format
    return json_format.MessageToDict(forms.parse(type_name, data), preserving_proto_field_name=True,
                                     use_integers_for_enums=True, always_print_fields_with_no_presence=True)


def with_unknown_fields(type_name: str, data: dict) -> dict:
    return {**forms.normalize(type_name, data), **UNKNOWN_FIELD}


def each(form, type_name: str, items: list[dict]) -> list[dict]:
    return [form(type_name, item) for item in items]


def readable(message: str, value: dict) -> bool:
    """Whether a reply reads as that protobuf message at all (the kernel's forms.normalize accepts it)."""
    try:
        forms.normalize(message, value)
    except forms.WireFormError:
        return False
    return True
