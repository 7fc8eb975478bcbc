"""signaller.signals.parsing: channel input -> Signal -> validated action, and the signal JSON Schema."""

from __future__ import annotations

import contextlib
import json
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from signaller.errors import SignalError
from signaller.patterns import ACCEPTED as RE2_ACCEPTED
from signaller.signals.model import (
    AdditionalCondition,
    ExecuteSnapshot,
    LogMessage,
    PauseSnapshot,
    ResumeSnapshot,
    Signal,
    StopSnapshot,
    WindowMarker,
)
from signaller.signals.parsing import (
    USER_SIGNAL_TYPES,
    parse_action,
    signal_from_json,
    signal_from_row,
    signal_schema,
)

pytestmark = pytest.mark.unit


def sig(type_: str, data: Any, id_: str = "s-1", channel: Any = "http") -> Signal:
    return Signal(id=id_, type=type_, data=data, channel=channel)


def reason_of(signal: Signal) -> str:
    with pytest.raises(SignalError) as caught:
        parse_action(signal)
    assert caught.value.signal_id == (signal.id if isinstance(signal.id, str) else None)
    return caught.value.reason


# --- the schema -----------------------------------------------------------------------------------------------


def test_schema_is_valid_draft_2020_12() -> None:
    schema = signal_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)
    assert schema["properties"]["type"]["enum"] == list(USER_SIGNAL_TYPES)


@pytest.mark.parametrize("document", [
    {"id": "a", "type": "execute-snapshot", "data": {"data-collections": ["public.orders"]}},
    {"id": "a", "type": "execute-snapshot", "data": {
        "data-collections": ["public.orders"], "type": "BLOCKING",
        "additional-conditions": [{"data-collection": "public.orders", "filter": "id > 1"}]}},
    {"id": "a", "type": "execute-snapshot", "data": {"data-collections": ["public.orders"], "surrogate-key": "no"}},
    {"id": "a", "type": "stop-snapshot", "data": {}},
    {"id": "a", "type": "stop-snapshot", "data": {"data-collections": [], "type": "Incremental"}},
    {"id": "a", "type": "pause-snapshot", "data": {"anything": [1]}},
    {"id": "a", "type": "resume-snapshot", "data": {}},
    {"id": "a", "type": "log", "data": {"message": "hi {}"}},
])
def test_schema_accepts(document: dict[str, Any]) -> None:
    assert list(Draft202012Validator(signal_schema()).iter_errors(document)) == []


@pytest.mark.parametrize("document", [
    {"type": "log", "data": {"message": "x"}},
    {"id": "", "type": "log", "data": {"message": "x"}},
    {"id": "a", "type": "log"},
    {"id": "a", "type": "Log", "data": {"message": "x"}},
    {"id": "a", "type": "log", "data": "{}"},
    {"id": "a", "type": "execute-snapshot", "data": {}},
    {"id": "a", "type": "execute-snapshot", "data": {"data-collections": []}},
    {"id": "a", "type": "execute-snapshot", "data": {"data-collections": [""]}},
    {"id": "a", "type": "execute-snapshot", "data": {"data-collections": [1]}},
    {"id": "a", "type": "execute-snapshot", "data": {"data-collections": ["t"], "type": "full"}},
    {"id": "a", "type": "execute-snapshot", "data": {"data-collections": ["t"], "additional-condition": "x"}},
    {"id": "a", "type": "execute-snapshot", "data": {
        "data-collections": ["t"], "additional-conditions": [{"data-collection": "t", "filter": "x", "extra": 1}]}},
    {"id": "a", "type": "execute-snapshot", "data": {"data-collections": ["t"], "type": "blocking",
                                                     "surrogate-key": "no"}},
    {"id": "a", "type": "execute-snapshot", "data": {
        "data-collections": ["t"], "type": "blocking",
        "additional-conditions": [{"data-collection": "t", "filter": " "}]}},
    {"id": "a", "type": "stop-snapshot", "data": {"data-collections": "t"}},
    {"id": "a", "type": "log", "data": {"message": 5}},
])
def test_schema_rejects(document: dict[str, Any]) -> None:
    assert list(Draft202012Validator(signal_schema()).iter_errors(document)) != []


# --- parse_action: accepted ------------------------------------------------------------------------------------


def test_execute_snapshot_minimal() -> None:
    action = parse_action(sig("execute-snapshot", {"data-collections": ["public.orders"]}))
    assert action == ExecuteSnapshot(signal_id="s-1", data_collections=("public.orders",))


def test_execute_snapshot_full() -> None:
    data = {
        "data-collections": [" public\\.orders ", "inventory\\..*", "public\\.orders"],
        "type": "INCREMENTAL",
        "additional-conditions": [{"data-collection": "public\\.orders", "filter": "color='blue' AND qty>10"}],
        "surrogate-key": "order_no",
    }
    assert parse_action(sig("execute-snapshot", data)) == ExecuteSnapshot(
        signal_id="s-1",
        data_collections=("public\\.orders", "inventory\\..*"),
        snapshot_type="incremental",
        additional_conditions=(AdditionalCondition("public\\.orders", "color='blue' AND qty>10"),),
        surrogate_key="order_no",
    )


def test_execute_blocking_keeps_ids_and_select_filter() -> None:
    # The data-collection of a blocking snapshot is matched as a regular expression too (as for
    # incremental ones), so a literal "(" must be escaped: an unescaped one is rejected (see below).
    data = {"data-collections": ["public.orders"], "type": "Blocking",
            "additional-conditions": [{"data-collection": "public\\.\"My\\(Table\"",
                                       "filter": "SELECT * FROM \"public\".\"orders\" WHERE region = 'EU'"}]}
    action = parse_action(sig("execute-snapshot", data))
    assert isinstance(action, ExecuteSnapshot)
    assert action.snapshot_type == "blocking"
    assert action.additional_conditions[0].data_collection == "public\\.\"My\\(Table\""


@pytest.mark.parametrize(("data", "expected"), [
    ({}, StopSnapshot(signal_id="s-1")),
    ({"type": "incremental"}, StopSnapshot(signal_id="s-1")),
    ({"data-collections": ["public\\.order_lines"], "type": "incremental"},
     StopSnapshot(signal_id="s-1", data_collections=("public\\.order_lines",))),
    ({"type": "BLOCKING"}, StopSnapshot(signal_id="s-1", snapshot_type="blocking")),
])
def test_stop_snapshot(data: dict[str, Any], expected: StopSnapshot) -> None:
    assert parse_action(sig("stop-snapshot", data)) == expected


def test_pause_resume_log() -> None:
    assert parse_action(sig("pause-snapshot", {"ignored": True})) == PauseSnapshot("s-1")
    assert parse_action(sig("resume-snapshot", {})) == ResumeSnapshot("s-1")
    assert parse_action(sig("log", {"message": "offset = {}"})) == LogMessage("s-1", "offset = {}")
    assert parse_action(sig("log", {"message": ""})) == LogMessage("s-1", "")


def test_data_built_in_code_with_tuples_and_read_only_mappings() -> None:
    data = MappingProxyType({"data-collections": ("public.a",),
                             "additional-conditions": (MappingProxyType({"data-collection": "a", "filter": "x"}),)})
    assert parse_action(sig("execute-snapshot", data)) == ExecuteSnapshot(
        signal_id="s-1", data_collections=("public.a",), additional_conditions=(AdditionalCondition("a", "x"),))


@pytest.mark.parametrize("channel", ["source", "internal"])
def test_window_markers_from_the_signal_table(channel: str) -> None:
    meta = {"openWindowTimestamp": "2026-08-22T10:00:00.123456Z", "correlationId": "req-42"}
    opened = parse_action(sig("snapshot-window-open", meta, id_="3f1c-open", channel=channel))
    assert opened == WindowMarker(signal_id="3f1c-open", is_open=True, data=meta)
    closed = parse_action(sig("snapshot-window-close", {}, id_="3f1c-close", channel=channel))
    assert closed == WindowMarker(signal_id="3f1c-close", is_open=False)


# --- parse_action: rejected, with the exact reason ---------------------------------------------------------------


@pytest.mark.parametrize(("data", "reason"), [
    ({"data-collections": ["public.orders"], "additional-conditions": [{"data-collection": "public.orders"}]},
     "data.additional-conditions[0].filter: missing; accepted: {data-collection: <regex>, "
     "filter: <boolean SQL expression>}"),
    ({}, "data.data-collections: missing; accepted: execute-snapshot data keys: data-collections (required), "
         "type, additional-conditions, surrogate-key"),
    ({"data-collections": []},
     "data.data-collections: empty array; accepted: a non-empty array of non-empty strings "
     "(regular expressions of 'schema.table')"),
    ({"data-collections": "public.orders"},
     "data.data-collections: expected an array, got string 'public.orders'; accepted: a non-empty array of "
     "non-empty strings (regular expressions of 'schema.table')"),
    ({"data-collections": ["a", " "]},
     "data.data-collections[1]: empty string; accepted: a non-empty regular expression full-matched against "
     "'schema.table' (case-sensitive), e.g. \"public\\\\.orders\""),
    ({"data-collections": ["a", 7]},
     "data.data-collections[1]: expected a string, got number 7; accepted: a non-empty regular expression "
     "full-matched against 'schema.table' (case-sensitive), e.g. \"public\\\\.orders\""),
    ({"data-collections": ["a"], "type": "full"},
     "data.type: 'full' is not accepted; accepted: \"incremental\" (the default) or \"blocking\", "
     "in any letter case"),
    ({"data-collections": ["public.orders["]},
     "data.data-collections[0]: 'public.orders[' is not a valid regular expression (missing ]: [); "
     f"accepted: {RE2_ACCEPTED} (case-sensitive), e.g. \"public\\\\.orders\""),
    ({"data-collections": ["a"], "additional-conditions": [{"data-collection": "(", "filter": "x = 1"}]},
     "data.additional-conditions[0].data-collection: '(' is not a valid regular expression (missing ): (); "
     f"accepted: {RE2_ACCEPTED} (case-insensitive), e.g. \"public\\\\.orders\""),
    ({"data-collections": ["a"], "type": "blocking",
      "additional-conditions": [{"data-collection": "(", "filter": "x = 1"}]},
     "data.additional-conditions[0].data-collection: '(' is not a valid regular expression (missing ): (); "
     f"accepted: {RE2_ACCEPTED} (case-insensitive), e.g. \"public\\\\.orders\""),
    ({"data-collections": ["a"], "type": "blocking",
      "additional-conditions": [{"data-collection": "a", "filter": "x = 1"},
                                {"data-collection": "public\\.(?=x)", "filter": "x = 1"}]},
     "data.additional-conditions[1].data-collection: 'public\\\\.(?=x)' is not a valid regular expression "
     f"(invalid perl operator: (?=); accepted: {RE2_ACCEPTED} (case-insensitive), e.g. \"public\\\\.orders\""),
    ({"data-collections": ["public\\.t(\\1)"], "type": "blocking"},
     "data.data-collections[0]: 'public\\\\.t(\\\\1)' is not a valid regular expression (invalid escape "
     f"sequence: \\1); accepted: {RE2_ACCEPTED} (case-sensitive), e.g. \"public\\\\.orders\""),
    ({"data-collections": ["x" * 4097]},
     "data.data-collections[0]: '" + "x" * 56 + "... is not a valid regular expression (4097 characters, more "
     f"than 4096); accepted: {RE2_ACCEPTED} (case-sensitive), e.g. \"public\\\\.orders\""),
    ({"data-collections": ["a"], "additional-condition": "id > 5"},
     "data.additional-condition: unknown key (the singular additional-condition was removed in Debezium 3.0; "
     "use additional-conditions: [{data-collection, filter}]); accepted: execute-snapshot data keys: "
     "data-collections (required), type, additional-conditions, surrogate-key"),
    ({"data-collections": ["a"], "additional-conditions": [{"data-collection": "a", "filter": "x", "x": 1}]},
     "data.additional-conditions[0].x: unknown key; accepted: {data-collection: <regex>, "
     "filter: <boolean SQL expression>}"),
    ({"data-collections": ["a"], "additional-conditions": {"data-collection": "a", "filter": "x"}},
     "data.additional-conditions: expected an array, got object; accepted: an array of "
     "{data-collection: <regex>, filter: <boolean SQL expression>}"),
    ({"data-collections": ["a"], "type": "blocking", "surrogate-key": "no"},
     "data.surrogate-key: only applies to incremental snapshots; accepted: remove it, or use \"type\": "
     "\"incremental\""),
    ({"data-collections": ["a"], "surrogate-key": ""},
     "data.surrogate-key: empty string; accepted: the name of one unique column used instead of the primary key "
     "(incremental snapshots only)"),
])
def test_execute_snapshot_rejections(data: dict[str, Any], reason: str) -> None:
    assert reason_of(sig("execute-snapshot", data)) == reason


def test_every_problem_is_reported() -> None:
    reason = reason_of(sig("execute-snapshot", {"data-collections": [], "type": 3, "bogus": 1}))
    assert reason.split("; accepted: ")[0] == "data.bogus: unknown key"
    assert "data.data-collections: empty array" in reason
    assert "data.type: expected a string, got number 3" in reason


@pytest.mark.parametrize(("signal", "reason"), [
    (sig("Execute-Snapshot", {}),
     "type: 'Execute-Snapshot' is not a signal type (did you mean 'execute-snapshot'? signal types are "
     "case-sensitive); accepted: one of execute-snapshot, stop-snapshot, pause-snapshot, resume-snapshot, log "
     "(case-sensitive)"),
    (sig("schema-changes", {}),
     "type: 'schema-changes' is not a signal type; accepted: one of execute-snapshot, stop-snapshot, "
     "pause-snapshot, resume-snapshot, log (case-sensitive)"),
    (sig("snapshot-window-open", {}, channel="kafka"),
     "type: 'snapshot-window-open' is a watermark that signaller writes to the signal table itself and is not "
     "accepted from the kafka channel; accepted: one of execute-snapshot, stop-snapshot, pause-snapshot, "
     "resume-snapshot, log (case-sensitive)"),
    (sig("log", {}), "data.message: missing; accepted: log data keys: message (required)"),
    (sig("log", {"message": ["x"]}),
     "data.message: expected a string, got array; accepted: a string written to the log at INFO "
     "('{}' is replaced by the current offsets)"),
    (sig("stop-snapshot", {"data-collections": ["a"], "table": "x"}),
     "data.table: unknown key; accepted: stop-snapshot data keys: data-collections, type"),
    (sig("pause-snapshot", {}, id_=""),
     "id: empty string; accepted: a non-empty string, e.g. a UUID (for execute-snapshot it becomes the "
     "notification correlation id)"),
    (sig("pause-snapshot", "{}"),
     "data: expected a JSON object, got string '{}'; accepted: a JSON object ({} if the signal needs no data)"),
])
def test_other_rejections(signal: Signal, reason: str) -> None:
    assert reason_of(signal) == reason


# --- signal_from_json ----------------------------------------------------------------------------------------


def test_from_json_kafka_example_of_the_reference() -> None:
    raw = b'{"id":"req-42","type":"execute-snapshot","data":{"data-collections":["public\\\\.orders"],' \
          b'"type":"INCREMENTAL"}}'
    signal = signal_from_json(raw, "kafka", position=17)
    assert signal == Signal(id="req-42", type="execute-snapshot",
                            data={"data-collections": ["public\\.orders"], "type": "INCREMENTAL"},
                            channel="kafka", position=17)
    assert parse_action(signal) == ExecuteSnapshot(signal_id="req-42", data_collections=("public\\.orders",))


@pytest.mark.parametrize("id_part", ['', '"id": null, '])
def test_from_json_kafka_generates_an_id(id_part: str) -> None:
    first = signal_from_json('{' + id_part + '"type": "pause-snapshot", "data": {}}', "kafka")
    second = signal_from_json('{' + id_part + '"type": "pause-snapshot", "data": {}}', "kafka")
    assert len(first.id) == 36 and first.id != second.id


def test_from_json_file_and_http_need_an_id() -> None:
    for channel in ("file", "http"):
        with pytest.raises(SignalError, match=r"^id: missing; accepted: a non-empty string"):
            signal_from_json('{"type": "pause-snapshot", "data": {}}', channel)


def test_from_json_accepts_bom_and_str() -> None:
    signal = signal_from_json('\ufeff{"id": "f-2", "type": "log", "data": {"message": "hello"}}', "file", (1, 2))
    assert signal.position == (1, 2) and signal.channel == "file"


@pytest.mark.parametrize(("raw", "reason"), [
    (b"", 'value: empty; accepted: a JSON object {"id": <non-empty string>, "type": <signal type>, "data": {...}}'),
    (b"\xff{}", "value: not UTF-8 text (invalid byte at offset 0); accepted: JSON encoded as UTF-8"),
    (b"{", 'value: not valid JSON (unexpected end of data: line 1 column 2 (char 1)); accepted: a JSON object '
           '{"id": <non-empty string>, "type": <signal type>, "data": {...}}'),
    (b"[1]", 'value: expected a JSON object, got array; accepted: {"id": <non-empty string>, "type": '
             '<signal type>, "data": {...}}'),
    (b'{"id": "a", "data": {}}', "type: missing; accepted: one of execute-snapshot, stop-snapshot, "
                                 "pause-snapshot, resume-snapshot, log (case-sensitive)"),
    (b'{"id": "a", "type": 1, "data": {}}', "type: expected a string, got number 1; accepted: one of "
                                            "execute-snapshot, stop-snapshot, pause-snapshot, resume-snapshot, "
                                            "log (case-sensitive)"),
    (b'{"id": 5, "type": "log", "data": {}}', "id: expected a string, got number 5; accepted: a non-empty "
                                              "string, e.g. a UUID"),
    (b'{"id": " ", "type": "log", "data": {}}', "id: empty; accepted: a non-empty string, e.g. a UUID"),
    (b'{"id": "a", "type": "log"}', "data: missing; accepted: a JSON object ({} if the signal needs no data)"),
    (b'{"id": "a", "type": "log", "data": null}',
     "data: missing; accepted: a JSON object ({} if the signal needs no data)"),
    (b'{"id": "a", "type": "log", "data": "{\\"message\\": \\"x\\"}"}',
     "data: expected a JSON object, got a string '{\"message\": \"x\"}'; a JSON-encoded object inside a string is "
     "not accepted (Debezium's Kafka channel refuses it too); accepted: a JSON object ({} if the signal needs no "
     "data)"),
    (b'{"id": "a", "type": "log", "data": [1]}',
     "data: expected a JSON object, got array; accepted: a JSON object ({} if the signal needs no data)"),
])
def test_from_json_rejections(raw: bytes, reason: str) -> None:
    with pytest.raises(SignalError) as caught:
        signal_from_json(raw, "kafka")
    assert caught.value.reason == reason


def test_from_json_error_carries_the_id() -> None:
    with pytest.raises(SignalError) as caught:
        signal_from_json(b'{"id": "abc", "type": "log", "data": 3}', "http")
    assert caught.value.signal_id == "abc"
    assert str(caught.value).startswith("signal 'abc': data: expected a JSON object, got number 3")


# --- signal_from_row -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("data_text", [None, "", "   "])
def test_from_row_null_or_empty_data_is_empty_object(data_text: str | None) -> None:
    signal = signal_from_row("s", "pause-snapshot", data_text, position=0x16B3748)
    assert signal == Signal(id="s", type="pause-snapshot", data={}, channel="source", position=0x16B3748)


def test_from_row_parses_data_and_accepts_decoded_jsonb() -> None:
    text = '{"data-collections":["public.orders","public.order_lines"],"type":"incremental"}'
    signal = signal_from_row("req-2026-08-22-01", "execute-snapshot", text)
    assert parse_action(signal) == ExecuteSnapshot(
        signal_id="req-2026-08-22-01", data_collections=("public.orders", "public.order_lines"))
    assert signal_from_row("x", "log", {"message": "m"}).data == {"message": "m"}


def test_from_row_watermark() -> None:
    meta = '{"openWindowTimestamp": "2026-08-22T10:00:00.123456Z"}'
    signal = signal_from_row("3f1c-open", "snapshot-window-open", meta, position=99)
    assert parse_action(signal) == WindowMarker("3f1c-open", True, json.loads(meta))


@pytest.mark.parametrize(("row", "reason"), [
    ((None, "log", None), "id: NULL; accepted: a non-empty string, e.g. a UUID"),
    (("", "log", None), "id: empty; accepted: a non-empty string, e.g. a UUID"),
    ((5, "log", None), "id: expected text, got number 5; accepted: a non-empty string, e.g. a UUID"),
    (("a", None, None), "type: NULL; accepted: one of execute-snapshot, stop-snapshot, pause-snapshot, "
                        "resume-snapshot, log (case-sensitive)"),
    (("a", "log", "{oops"), "data: not valid JSON (unexpected character, expected a string key: line 1 column 2 "
                            "(char 1)); accepted: a JSON object ({} if the signal needs no data) as JSON text"),
    (("a", "log", '"{}"'), "data: expected a JSON object, got string '{}'; accepted: a JSON object "
                           "({} if the signal needs no data)"),
])
def test_from_row_rejections(row: tuple[Any, Any, Any], reason: str) -> None:
    with pytest.raises(SignalError) as caught:
        signal_from_row(*row)
    assert caught.value.reason == reason


# --- fuzzing: never anything but a Signal/Action or SignalError ------------------------------------------------

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=20,
)
_keys = st.sampled_from(["id", "type", "data", "data-collections", "additional-conditions", "data-collection",
                         "filter", "surrogate-key", "message", "additional-condition", "x"])
_types = st.sampled_from([*USER_SIGNAL_TYPES, "snapshot-window-open", "snapshot-window-close", "LOG", ""])
_data = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10) | st.sampled_from(["incremental", "BLOCKING"]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_keys, children, max_size=4),
    max_leaves=15,
)
_envelopes = st.fixed_dictionaries(
    {}, optional={"id": st.none() | st.text(max_size=8) | st.integers(), "type": _types | _json_values,
                  "data": _data, "additionalData": _json_values})


def _parse_all(raw: bytes | str, channel: Any) -> None:
    try:
        signal = signal_from_json(raw, channel)
    except SignalError:
        return
    with contextlib.suppress(SignalError):
        parse_action(signal)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200), st.sampled_from(["kafka", "file", "http"]))
def test_fuzz_arbitrary_bytes(raw: bytes, channel: str) -> None:
    _parse_all(raw, channel)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(_json_values, st.sampled_from(["kafka", "file", "http"]))
def test_fuzz_arbitrary_json(value: Any, channel: str) -> None:
    _parse_all(json.dumps(value), channel)


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(_envelopes, st.sampled_from(["kafka", "file", "http", "source"]))
def test_fuzz_signal_shaped_json(envelope: dict[str, Any], channel: str) -> None:
    _parse_all(json.dumps(envelope).encode(), channel)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.none() | st.text(max_size=5) | st.integers(), st.none() | _types | st.integers(),
       st.none() | st.text(max_size=30) | _data.map(json.dumps) | st.binary(max_size=20))
def test_fuzz_rows(id_: Any, type_: Any, data_text: Any) -> None:
    try:
        signal = signal_from_row(id_, type_, data_text)
    except SignalError:
        return
    with contextlib.suppress(SignalError):
        parse_action(signal)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=5), st.none(), st.integers()), st.one_of(_types, st.none(), st.integers()),
       st.one_of(_data, st.dictionaries(_keys, _data, max_size=4)),
       st.sampled_from(["kafka", "file", "http", "source", "internal"]))
def test_fuzz_signals_built_in_code(id_: Any, type_: Any, data: Any, channel: Any) -> None:
    with contextlib.suppress(SignalError):
        parse_action(Signal(id=id_, type=type_, data=data, channel=channel))


def test_deeply_nested_data_is_a_signal_error_or_accepted() -> None:
    deep = "[" * 1000 + "]" * 1000
    _parse_all('{"id": "a", "type": "execute-snapshot", "data": {"data-collections": ' + deep + "}}", "http")
    _parse_all('{"id": "a", "type": "pause-snapshot", "data": {"x": ' + deep + "}}", "http")
    with pytest.raises(SignalError, match="depth limit exceeded"):
        signal_from_json('{"id": "a", "type": "log", "data": {"x": ' + "[" * 2000 + "]" * 2000 + "}}", "http")
