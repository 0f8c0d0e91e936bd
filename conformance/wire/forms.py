"""JSON forms of the wire types, through protobuf's own json_format.

Reading accepts every form the proto3 JSON mapping allows (lowerCamelCase
names, int64 as strings, enums as numbers, omitted defaults), as real
implementations emit them, and ignores fields the protos do not declare, as
a protobuf reader keeps going past fields a newer peer added. Writing produces one canonical form: snake_case
names, enums by name, int64 as numbers, every field present.
"""

from __future__ import annotations

import functools
import json
import marshal
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message as ProtoMessage

from conformance.wire.pb.pluggableharness.common.v1 import common_pb2
from conformance.wire.pb.pluggableharness.content.v1 import content_pb2
from conformance.wire.pb.pluggableharness.context.v1 import context_pb2
from conformance.wire.pb.pluggableharness.kernel.v1 import kernel_pb2
from conformance.wire.pb.pluggableharness.model.v1 import model_pb2

TYPES: dict[str, type[ProtoMessage]] = {
    "ContentBlock": content_pb2.ContentBlock,
    "Message": content_pb2.Message,
    "ContextSection": content_pb2.ContextSection,
    "ModelTarget": model_pb2.ModelTarget,
    "ModelRef": model_pb2.ModelRef,
    "ContextCapabilities": context_pb2.ContextCapabilities,
    "GetCapabilitiesResponse": context_pb2.GetCapabilitiesResponse,
    "ConfigureRequest": context_pb2.ConfigureRequest,
    "ContextRequest": context_pb2.ContextRequest,
    "ContextContribution": context_pb2.ContextContribution,
    "DescribeResponse": context_pb2.DescribeResponse,
    "ContextError": context_pb2.ContextError,
    "ProducerRef": common_pb2.ProducerRef,
    "CountTokensRequest": kernel_pb2.CountTokensRequest,
    "CountTokensResult": kernel_pb2.CountTokensResult,
}


class WireFormError(ValueError):
    """A JSON value is not a valid proto3 JSON form of the expected type."""


def parse(type_name: str, data: Any) -> ProtoMessage:
    message = TYPES[type_name]()
    if not isinstance(data, dict):
        raise WireFormError(f"expected a JSON object for {type_name}, got {type(data).__name__}")
    try:
        json_format.ParseDict(data, message, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise WireFormError(f"not a valid {type_name}: {exc}") from None
    return message


def to_json(message: ProtoMessage) -> dict:
    """The canonical JSON form of any protobuf message, a fresh copy each time."""
    try:
        made = _json_of(type(message), message.SerializeToString(deterministic=True))
    except DecodeError:  # nested deeper than protobuf's reader goes: converted as it is
        return _canonical(message)
    return fresh(made)


@functools.lru_cache(maxsize=8192)
def _json_of(message_type: type[ProtoMessage], wire: bytes) -> bytes:
    """json_format takes 20 to 100 us a message and the same ones recur (a reply to each firing, a prior chain
    sent again and again): each distinct message, known by its bytes, is converted once, and kept. A message
    that has no JSON form raises each time; nothing is kept of it."""
    return keep(_canonical(message_type.FromString(wire)))


def _canonical(message: ProtoMessage) -> dict:
    try:
        data = json_format.MessageToDict(
            message,
            always_print_fields_with_no_presence=True,
            preserving_proto_field_name=True,
            unquote_int64_if_possible=True,
        )
    except json_format.SerializeToJsonError as exc:  # a NaN or infinity in a Struct: read, but it has no JSON form
        raise WireFormError(f"not a valid {message.DESCRIPTOR.name}: {exc}") from None
    return _int64_as_numbers(message.DESCRIPTOR, data)


def zeros_omitted(type_name: str, data: dict) -> dict:
    """data as the proto3 JSON mapping writes it by default: fields at their zero value left out, as
    protojson and most gRPC stacks carry them (names and int64s as in the canonical form)."""
    message = parse(type_name, data)
    try:
        printed = json_format.MessageToDict(message, preserving_proto_field_name=True, unquote_int64_if_possible=True)
    except json_format.SerializeToJsonError as exc:
        raise WireFormError(f"not a valid {message.DESCRIPTOR.name}: {exc}") from None
    return _int64_as_numbers(message.DESCRIPTOR, printed)


def from_json(message_type: type[ProtoMessage], data: Any) -> ProtoMessage:
    """json_format.ParseDict(data, message_type()), errors and all. A value made of JSON's own types is parsed
    once (json_format, 20 to 100 us) and each later message built from its bytes (about 1 us)."""
    try:
        _copied(data, 0)  # only plain JSON is known by its text: another value goes to json_format as it is
        return message_type.FromString(_wire_of(message_type, _KEY(data)))
    except (_NotPlain, DecodeError):  # DecodeError: nested deeper than protobuf's reader goes
        return json_format.ParseDict(data, message_type())


@functools.lru_cache(maxsize=8192)
def _wire_of(message_type: type[ProtoMessage], key: str) -> bytes:
    return json_format.ParseDict(json.loads(key), message_type()).SerializeToString()


_INT64_TYPES = frozenset({FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_SFIXED64,
                          FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64})


def _int64_as_numbers(descriptor, data: dict) -> dict:
    """json_format unquotes an int64 only where a double holds it exactly (up to 2^53): past that it stays a
    string. The canonical form has every int64 a number, whatever its size."""
    if descriptor.full_name.startswith("google.protobuf."):
        return data  # Struct, Any and the like: their JSON forms are their own
    for field in descriptor.fields:
        if field.name not in data:
            continue
        value = data[field.name]
        if field.type in _INT64_TYPES:
            data[field.name] = [int(v) for v in value] if isinstance(value, list) else int(value)
        elif field.message_type is not None and not field.message_type.GetOptions().map_entry:
            items = value if isinstance(value, list) else [value]
            for item in items:
                if isinstance(item, dict):
                    _int64_as_numbers(field.message_type, item)
    return data


def normalize(type_name: str, data: Any) -> dict:
    """The canonical form of `data` read as `type_name`, a fresh copy each time. A value is first looked up by
    marshal's bytes of it, several times quicker to make than the sorted JSON text _normalized is keyed by: a
    value JSON can write is known by its bytes, types and all (only bytes and bytearray share a form, and JSON
    writes neither), so what one gave is what any with the same bytes gives."""
    try:
        known: tuple[str, bytes] | None = (type_name, marshal.dumps(data, 2))
    except ValueError:  # a subclass, an object, nesting past marshal's depth: the text alone tells
        known = None
    kept = _BY_MARSHAL.get(known) if known is not None else None
    if kept is None:
        try:
            key = _KEY(data)
        except (TypeError, ValueError):
            return to_json(parse(type_name, data))  # not JSON at all: parse says why
        kept = _normalized(type_name, key)
        if known is not None:
            if len(_BY_MARSHAL) >= _BY_MARSHAL_SIZE:
                _BY_MARSHAL.clear()  # a bound, not an eviction policy: the next lookups fill it again
            _BY_MARSHAL[known] = kept
    return fresh(kept)


_BY_MARSHAL: dict[tuple[str, bytes], bytes] = {}  # (type name, marshal's bytes of a value) -> _normalized's
_BY_MARSHAL_SIZE = 8192


# A value's text as a cache key: json.dumps(data, sort_keys=True, ensure_ascii=False), without building an
# encoder for every call (half of dumps' time on a small request).
_KEY = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode


@functools.lru_cache(maxsize=8192)
def _normalized(type_name: str, key: str) -> bytes:
    """json_format is slow and the same payloads recur (a prior chain is sent again and again):
    each distinct one is converted once, and kept."""
    return keep(_canonical(parse(type_name, json.loads(key))))


def keep(value: Any) -> bytes:
    """A JSON value (of JSON's own types) kept to be handed out again and again, each time as a fresh copy
    (fresh()): marshal's bytes of it. Version 2 writes a part the value holds twice out twice, as JSON would;
    marshal.loads then copies in C, about twice as fast as json_copy on the canonical forms the suite keeps."""
    return marshal.dumps(value, 2)


def fresh(kept: bytes) -> Any:
    """A fresh copy of what keep() kept."""
    return marshal.loads(kept)


class _NotPlain(Exception):
    """A value json_copy leaves to json itself."""


_BIGGEST_PLAIN_INT = 2**64  # far inside the digits Python's int-to-text conversion allows
_COPY_DEPTH = 64  # levels; messages nest about a dozen, schemas.MAX_DEPTH caps what is read at 64


def json_copy(value: Any) -> Any:
    """What json.loads(json.dumps(value)) gives, several times faster: a value made of JSON's own types (dicts
    with string keys, lists, str, int, float, bool, None) is copied as it is, which is what the round trip makes
    of it. Anything else (a tuple, a key that is not a string, a subclass, a huge int, nesting past _COPY_DEPTH,
    a cycle) takes the round trip itself, so its result, or its error, is json's.

    The same values cross again and again (each firing's replies and requests): a value whose marshal bytes
    are those of one found plain before is plain too (the bytes fix every type all through, and marshal writes
    no subclass), and is copied by marshal in C, about twice as fast as the walk."""
    try:
        wire: bytes | None = marshal.dumps(value, 2)
    except ValueError:  # a subclass, an object, a cycle, nesting past marshal's depth: never plain
        wire = None
    if wire is not None and wire in _PLAIN:
        return marshal.loads(wire)
    try:
        copy = _copied(value, 0)
    except _NotPlain:
        return json.loads(json.dumps(value))
    if wire is not None and len(wire) <= _PLAIN_LARGEST:
        if len(_PLAIN) >= _PLAIN_SIZE:
            _PLAIN.clear()  # a bound, not an eviction policy
        _PLAIN.add(wire)
    return copy


_PLAIN: set[bytes] = set()  # marshal's bytes of values json_copy found plain
_PLAIN_SIZE, _PLAIN_LARGEST = 4096, 16384  # at most 64 MiB kept


def _copied(value: Any, level: int) -> Any:
    kind = type(value)
    if kind is dict:
        if level >= _COPY_DEPTH:
            raise _NotPlain
        copy = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _NotPlain
            kind = type(item)  # an int is checked here, not by a call of its own: a call costs more than the rest
            if kind in _IMMUTABLE or (kind is int and -_BIGGEST_PLAIN_INT <= item <= _BIGGEST_PLAIN_INT):
                copy[key] = item
            else:
                copy[key] = _copied(item, level + 1)
        return copy
    if kind is list:
        if level >= _COPY_DEPTH:
            raise _NotPlain
        return [item if type(item) in _IMMUTABLE else _copied(item, level + 1) for item in value]
    if kind in _IMMUTABLE or (kind is int and -_BIGGEST_PLAIN_INT <= value <= _BIGGEST_PLAIN_INT):
        return value
    raise _NotPlain


_IMMUTABLE = frozenset({str, float, bool, type(None)})  # returned as they are (an int is checked for size)


def normalize_list(type_name: str, items: Any) -> list[dict]:
    if not isinstance(items, list):
        raise WireFormError(f"expected a JSON array of {type_name}, got {type(items).__name__}")
    return [normalize(type_name, item) for item in items]
