"""The per-message shortcuts of conformance/wire/forms.py give what the slow paths they replace give: json_copy
what a JSON round trip makes of a value (or the round trip's error), to_json what json_format makes of a message,
from_json what json_format.ParseDict parses (or its error), the second time as the first; normalize what the
text-keyed path gives, and tokens.counted what each tokenizer counts; a provider case's request normalized without its
directory what normalizing it whole gives."""

from __future__ import annotations

import json
import math

import pytest
from google.protobuf import json_format
from hypothesis import given, settings, strategies as st

from conformance.wire import forms, tokens
from conformance.wire.pb.ctxconf.harness.v1 import harness_pb2
from conformance.wire.pb.pluggableharness.context.v1 import context_pb2

plain = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                     max_leaves=30)


class Text(str):
    pass


# What a JSON round trip changes or refuses: tuples, keys that are not strings, subclasses, ints past the
# digits Python writes, values json cannot write at all.
unplain = st.one_of(plain, st.tuples(plain, plain), st.dictionaries(st.integers() | st.booleans() | st.none(), plain,
                                                                    max_size=3),
                    st.builds(Text, st.text()), st.just(10 ** 5000), st.just({1, 2}), st.just(b"bytes"),
                    st.lists(st.just(("a", 1)), max_size=2))


def round_trip(value):
    try:
        return "value", json.loads(json.dumps(value))
    except Exception as exc:  # noqa: BLE001 (the error is what is compared)
        return "error", type(exc)


def copied(value):
    try:
        return "value", forms.json_copy(value)
    except Exception as exc:  # noqa: BLE001
        return "error", type(exc)


def same(a, b) -> bool:
    """Equal as JSON values, NaN equal to NaN, and of the same types all through."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def shares_nothing(a, b) -> bool:
    if isinstance(a, (dict, list)):
        children = zip(a.values(), b.values()) if isinstance(a, dict) else zip(a, b)
        return a is not b and all(shares_nothing(x, y) for x, y in children)
    return True


@settings(max_examples=300, deadline=None)
@given(st.one_of(unplain, st.lists(unplain, max_size=3), st.dictionaries(st.text(), unplain, max_size=3)))
def test_json_copy_is_the_round_trip(value):
    expected = round_trip(value)
    for got in (copied(value), copied(value)):  # the second time by marshal, when the first found it plain
        assert expected[0] == got[0] and (same(expected[1], got[1]) if got[0] == "value" else expected[1] == got[1])
    if got[0] == "value":
        assert shares_nothing(got[1], forms.json_copy(got[1]))


@pytest.mark.parametrize("plain_value, near_miss", [
    ({"a": 1}, {"a": True}), ({"a": [1]}, {"a": (1,)}), ({"a": "x"}, {"a": Text("x")}), ({"1": 1}, {1: 1}),
    ([2 ** 64], [2 ** 64 + 1]), ([1.0], [1]), ({"a": None}, {"a": b"x"}),
])
def test_a_value_found_plain_vouches_for_no_other(plain_value, near_miss):
    for value in (plain_value, plain_value, near_miss, near_miss, plain_value):
        expected, got = round_trip(value), copied(value)
        assert expected[0] == got[0] and (same(expected[1], got[1]) if got[0] == "value" else expected[1] == got[1])
        if got[0] == "value":
            assert shares_nothing(got[1], value)


def test_deep_or_circular_values_take_the_round_trip_itself():
    deep: list = []
    for _ in range(200):
        deep = [deep]
    assert forms.json_copy(deep) == json.loads(json.dumps(deep))
    loop: list = []
    loop.append(loop)
    with pytest.raises(ValueError):
        forms.json_copy(loop)


REQUESTS = [
    {"token_budget": 100},
    {"session_id": "s", "token_budget": "9007199254740993", "modelTarget": {"id": "m", "context_window": 7},
     "prior_sections": [{"provider": "p", "label": "L", "content": [{"text": {"text": "é"}}], "tokens": 3,
                         "stability": 2}]},
]


@pytest.mark.parametrize("data", REQUESTS)
def test_to_json_is_json_formats_form_each_time(data):
    message = json_format.ParseDict(data, context_pb2.ContextRequest(), ignore_unknown_fields=True)
    first, second = forms.to_json(message), forms.to_json(message)
    assert first == second == forms._canonical(message) and first is not second
    first["prior_sections"].append("changed")  # a copy: what was kept is untouched
    assert forms.to_json(message) == forms._canonical(message)


@pytest.mark.parametrize("data", REQUESTS + [{"token_budget": "x"}, {"no_such_field": 1}, {"prior_sections": {}}])
def test_from_json_parses_as_json_format_does(data):
    def parsed():
        try:
            return "message", json_format.ParseDict(data, context_pb2.ContextRequest())
        except json_format.ParseError:
            return "error", None

    expected = parsed()
    for _ in range(2):
        if expected[0] == "error":
            with pytest.raises(json_format.ParseError):
                forms.from_json(context_pb2.ContextRequest, data)
        else:
            assert forms.from_json(context_pb2.ContextRequest, data) == expected[1]


def test_from_json_takes_other_values_to_json_format_as_they_are():
    fields = {"turn": {"session_id": "s", "turn_id": "t", "model": "m"}}
    assert forms.from_json(harness_pb2.AssembleRequest, fields) == json_format.ParseDict(fields,
                                                                                          harness_pb2.AssembleRequest())
    with pytest.raises(json_format.ParseError):
        forms.from_json(context_pb2.ContextRequest, {"files_touched": ("a", 1)})


def by_text(type_name, data):
    """normalize as it was before values were looked up by marshal's bytes: by their sorted JSON text."""
    try:
        key = forms._KEY(data)
    except (TypeError, ValueError):
        return forms.to_json(forms.parse(type_name, data))
    return forms.fresh(forms._normalized(type_name, key))


def normalized(how, type_name, data):
    try:
        return "value", how(type_name, data)
    except Exception as exc:  # noqa: BLE001 (the error is what is compared)
        return "error", type(exc), str(exc)


SECTION = {"provider": "p", "label": "L", "content": [{"text": {"text": "é"}}], "tokens": 3, "stability": 2}
# Values marshal writes alike or apart where JSON does the other, and values JSON cannot write at all.
NEAR_MISSES = [
    {"token_budget": 1}, {"token_budget": True}, {"token_budget": 1.0}, {"token_budget": "1"},
    {"prior_sections": [SECTION]}, {"prior_sections": (SECTION,)}, {"prior_sections": [dict(reversed(SECTION.items()))]},
    {"files_touched": ["a"]}, {"files_touched": ("a",)}, {"files_touched": [Text("a")]},
    {"files_touched": [b"a"]}, {"files_touched": [bytearray(b"a")]}, {"files_touched": {"a"}},
    {1: 2}, {"1": 2}, {None: 1}, {("a",): 1}, {"token_budget": 10 ** 5000}, {"token_budget": float("nan")},
    [], "text", None, {"prior_sections": {}},
]


@pytest.mark.parametrize("type_name", ["ContextRequest", "ContextSection", "Message"])
def test_normalize_looked_up_by_marshal_gives_what_the_text_key_gives(type_name):
    values = REQUESTS + NEAR_MISSES + [dict(SECTION, label=label) for label in ("", " ", "L2")]
    forms._BY_MARSHAL.clear()
    for order in (values, list(reversed(values)), values):  # first sight, then every value seen before
        for value in order:
            assert normalized(forms.normalize, type_name, value) == normalized(by_text, type_name, value), value


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["token_budget", "session_id", "history_tokens", "files_touched", "x"]),
                       plain, max_size=4))
def test_normalize_of_generated_requests_is_the_text_keyed_form(value):
    for _ in range(2):
        assert normalized(forms.normalize, "ContextRequest", value) == normalized(by_text, "ContextRequest", value)


def test_normalize_hands_out_a_fresh_copy_from_what_it_keeps():
    data = {"prior_sections": [SECTION]}
    first = forms.normalize("ContextRequest", data)
    first["prior_sections"][0]["label"] = "changed"
    assert forms.normalize("ContextRequest", data) == by_text("ContextRequest", data)


blocks = st.lists(st.one_of(st.builds(lambda t: {"text": {"text": t}}, st.text(max_size=30)),
                            st.just({"text": {}}), st.just({"image": {"mime_type": "image/png", "data": "AA=="}})),
                  max_size=5)


@settings(max_examples=300, deadline=None)
@given(blocks)
def test_counted_is_each_tokenizers_count(content):
    assert tokens.counted(None, content) == tokens.fallback_count(content)
    for name, tokenizer in tokens.KERNEL_TOKENIZERS.items():
        assert tokens.counted(name, content) == tokenizer(content)
        assert tokens.counted(name, content) == tokenizer(content)  # the second time from what was kept



@pytest.mark.parametrize("workdir", ["/tmp/case-a", "/tmp/case b/\u00fc", "", "/tmp/\udcff-not-utf8"])
def test_a_contribute_request_is_what_normalizing_it_whole_with_its_directory_gives(workdir, provider_vectors):
    """provider_cases.contribute_request normalizes a request without its case directory and sets the directory
    after: the same as normalizing it whole, or the same error, for every contribute step of every provider
    vector."""
    from conformance.data import provider_cases

    def outcome(make):
        try:
            return "value", make()
        except forms.WireFormError as exc:
            return "error", str(exc)

    steps = [step for vector in provider_vectors for step in provider_cases.from_vector(vector.doc).steps
             if step.kind == "contribute"]
    assert len(steps) > 100
    for step in steps:
        written = dict(provider_cases.request_without_directory(step, 7, 1, None, "me"), working_directory=workdir)
        fast, whole = outcome(lambda: provider_cases.contribute_request(step, 7, workdir, 1, None, "me")), \
            outcome(lambda: by_text("ContextRequest", written))
        assert json.dumps(fast) == json.dumps(whole), step  # the fields in the same order too: traces show it
