"""The compatibility suite's comparison (pure): renaming, diffing, the allow-list and the README."""

from __future__ import annotations

import copy
import io
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_writer

from tests.compat import avro_output
from tests.compat.compare import ALLOWED, Difference, Renames, compare, diff_values, normalize, unexplained
from tests.integration.capture_helpers import Record

pytestmark = pytest.mark.unit

README = Path(__file__).resolve().parents[2] / "README.md"
DBZ = Renames("dbz1", "dbz_signal")
SIG = Renames("sig1", "sig_signal")


def event(prefix: str, op: str = "c", value: int = 1, ts: int = 100, lsn: int = 500) -> dict[str, Any]:
    return {
        "key": {"schema": {"name": f"{prefix}.public.t.Key"}, "payload": {"id": 1}},
        "value": {"schema": {"name": f"{prefix}.public.t.Envelope"}, "payload": {
            "before": None, "after": {"id": 1, "v": value}, "op": op, "ts_ms": ts,
            "source": {"name": prefix, "lsn": lsn, "ts_ms": ts, "table": "t"}}},
    }


def test_identical_outputs_under_different_names_have_no_differences() -> None:
    assert compare({"dbz1.public.t": [event("dbz1")]}, {"sig1.public.t": [event("sig1")]}, DBZ, SIG) == []


def test_a_changed_value_is_reported_with_its_path_and_both_values() -> None:
    diffs = compare({"dbz1.public.t": [event("dbz1", value=1)]}, {"sig1.public.t": [event("sig1", value=2)]}, DBZ, SIG)
    assert diffs == [Difference("data:t", 0, "value.payload.after.v", 1, 2, "c")]
    assert unexplained(diffs) == diffs


def test_timings_are_allowed_but_streamed_positions_are_not() -> None:
    timing = compare({"dbz1.public.t": [event("dbz1", ts=1)]}, {"sig1.public.t": [event("sig1", ts=2)]}, DBZ, SIG)
    assert len(timing) == 2 and unexplained(timing) == []
    position = compare({"dbz1.public.t": [event("dbz1", lsn=1)]}, {"sig1.public.t": [event("sig1", lsn=2)]}, DBZ, SIG)
    assert [d.path for d in unexplained(position)] == ["value.payload.source.lsn"]
    read = compare({"dbz1.public.t": [event("dbz1", "r", lsn=1)]}, {"sig1.public.t": [event("sig1", "r", lsn=2)]},
                   DBZ, SIG)
    assert read and unexplained(read) == []


def test_missing_records_topics_and_fields_are_differences() -> None:
    extra = compare({"dbz1.public.t": [event("dbz1"), event("dbz1")]}, {"sig1.public.t": [event("sig1")]}, DBZ, SIG)
    assert [(d.index, d.path) for d in extra] == [(1, "<record>")]
    topic = compare({"dbz1.public.t": []}, {}, DBZ, SIG)
    assert [(d.topic, d.path) for d in topic] == [("data:t", "<topic>")]
    assert list(diff_values({"a": 1}, {"a": 1, "b": None})) == [("b", "<absent>", None)]
    assert list(diff_values({"a": 1}, {"a": 1.0})) == [("a", 1, 1.0)]  # JSON 1 vs 1.0 is a real difference


def test_watermark_ids_and_data_are_normalized_and_initial_snapshot_ids_replaced() -> None:
    row = {"key": {"payload": {"id": "0e0b6f53-8a7c-4a52-9d51-0c5d1a6b7f01-open"}},
           "value": {"payload": {"after": {"id": "0e0b6f53-8a7c-4a52-9d51-0c5d1a6b7f01-open",
                                           "type": "snapshot-window-open", "data": '{"correlationId": "s1"}'}}}}
    out = normalize(copy.deepcopy(row), "signal", SIG)
    assert out["key"]["payload"]["id"] == "<chunk-id>-open"
    assert out["value"]["payload"]["after"]["data"] == {"correlationId": "s1"}
    note = {"key": {"payload": {"id": "0e0b6f53-8a7c-4a52-9d51-0c5d1a6b7f01"}},
            "value": {"payload": {"id": "0e0b6f53-8a7c-4a52-9d51-0c5d1a6b7f01", "aggregate_type": "Initial Snapshot"}}}
    assert normalize(note, "notifications", SIG)["value"]["payload"]["id"] == "<random-uuid>"


def test_each_sides_own_signal_transactions_are_left_out_of_the_transaction_topic() -> None:
    def tx(status: str, xid: int, tables: list[str]) -> dict[str, Any]:
        collections = [{"data_collection": t, "event_count": 1} for t in tables] if status == "END" else None
        return {"key": {"payload": {"id": f"{xid}:1"}},
                "value": {"payload": {"status": status, "id": f"{xid}:1", "data_collections": collections}}}

    dbz = [tx("BEGIN", 7, []), tx("END", 7, ["public.dbz_signal"]), tx("BEGIN", 9, []), tx("END", 9, ["public.t"])]
    sig = [tx("BEGIN", 8, []), tx("END", 8, ["public.sig_signal"]), tx("BEGIN", 9, []), tx("END", 9, ["public.t"])]
    assert compare({"dbz1.transaction": dbz}, {"sig1.transaction": sig}, DBZ, SIG) == []


def test_the_readme_allow_list_is_the_code_allow_list() -> None:
    text = README.read_text()
    section = text.split("### Differences from Debezium", 1)[1].split("\n## ", 1)[0]
    names = re.findall(r"^\| `([^`]+)` \|", section, re.MULTILINE)
    assert names == [rule.name for rule in ALLOWED]


def test_value_allow_list_entries_accept_exactly_their_documented_values() -> None:
    from tests.compat.compare import era_dropped, julian_calendar

    # 0044-03-15 BC (proleptic year -43) vs Debezium's READ of it as 0044-03-15 AD
    assert era_dropped(-703383, -735160)
    assert not era_dropped(-735160, -735160) and not era_dropped(-703384, -735160)
    assert not era_dropped(19723, 19723)  # an AD date is never allowed to differ
    # 0044-03-15 12:00 BC read in the Julian calendar: two days earlier
    assert julian_calendar(-63517953600000000, -63517780800000000)
    assert not julian_calendar(-63517780800000000 + 1, -63517780800000000)
    assert not julian_calendar(1709300730123456 - 86_400_000_000, 1709300730123456)  # after 1582: never
    rule = next(r for r in ALLOWED if r.name == "date infinity in snapshot READs")
    read = Difference("data:cmp_edge_x", 0, "value.payload.after.c_date", -622191234, 2146033979, "r")
    assert rule.matches(read)
    assert not rule.matches(Difference("data:cmp_edge_x", 0, "value.payload.after.c_date", -622191234, 2146033979, "c"))
    assert not rule.matches(Difference("data:cmp_edge_x", 0, "value.payload.after.c_date", 1, 2, "r"))


def test_name_and_int_vector_entries_accept_only_debeziums_lost_values() -> None:
    name = next(r for r in ALLOWED if r.name == "name columns in streamed events")
    assert name.matches(Difference("data:t", 0, "value.payload.after.c_name", None, "nm", "c"))
    assert not name.matches(Difference("data:t", 0, "value.payload.after.c_name", "nm", "other", "r"))
    vector = next(r for r in ALLOWED if r.name == "int2vector and oidvector values")
    assert vector.matches(Difference("data:t", 0, "value.payload.before.c_int2vector[0]", "<absent>", 1, "u"))
    assert not vector.matches(Difference("data:t", 0, "value.payload.after.c_oidvector[0]", 2, 1, "c"))


def test_all_types_entries_accept_exactly_debeziums_values() -> None:
    from tests.compat.compare import (
        era_dropped_instant,
        java_object_ids,
        julian_calendar_any_unit,
        nulled_array,
        time_in_milliseconds,
    )

    assert era_dropped_instant("0044-03-15T12:00:00.000000Z", "-0043-03-15T12:00:00.000000Z")
    assert not era_dropped_instant("0044-03-15T12:00:00.000000Z", "0044-03-15T12:00:00.000000Z")
    assert not era_dropped_instant("0044-03-15T12:00:01.000000Z", "-0043-03-15T12:00:00.000000Z")
    assert time_in_milliseconds(47655123000, 47655123456) and time_in_milliseconds(0, 86_400_000_000)
    assert time_in_milliseconds(0, 86_400_000)  # time(0): ms
    assert not time_in_milliseconds(47655124000, 47655123456) and not time_in_milliseconds(5, 5)
    assert julian_calendar_any_unit(-63517953600000, -63517780800000)  # ms
    assert java_object_ids(["[Ljava.lang.String;@59a75223", "[Ljava.util.UUID;@9abaade"], None)
    assert java_object_ids([None, None], None)
    assert not java_object_ids(["a", "b"], None) and not java_object_ids([None], [None])
    assert not java_object_ids([], None)
    assert nulled_array(None, [1]) and not nulled_array(None, []) and not nulled_array([1], [1])


AVRO_SCHEMA = {"type": "record", "name": "R", "fields": [
    {"name": "id", "type": "int"}, {"name": "raw", "type": "bytes"}, {"name": "x", "type": "double"},
    {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 1}}]}


def _avro_record(schema_id: int, payload: dict[str, Any]) -> bytes:
    body = io.BytesIO()
    schemaless_writer(body, parse_schema(AVRO_SCHEMA), payload)
    return b"\x00" + schema_id.to_bytes(4, "big") + body.getvalue()


def test_avro_records_decode_to_the_json_converters_spelling_and_ids_become_subject_versions() -> None:
    decoder = avro_output.AvroDecoder("http://registry.invalid")  # the schema is cached: no request
    decoder._parsed[7] = parse_schema(avro_output._without_logical_types(AVRO_SCHEMA))
    value = decoder(_avro_record(7, {"id": 1, "raw": b"\x00\xff", "x": float("nan"), "d": Decimal("1.5")}))
    assert value == {"schema": 7, "payload": {"id": 1, "raw": "AP8=", "x": "NaN", "d": "Dw=="}}
    assert decoder(None) is None
    with pytest.raises(AssertionError, match="Confluent wire format"):
        decoder(b"{}")

    registered = {"p.t-value": [{"id": 3, "schema": {}}, {"id": 7, "schema": {}}]}
    dumped = avro_output.dump({"p.t": [Record(None, value, 0, 0), Record(None, None, 0, 1)]}, registered)
    assert dumped == {"p.t": [{"key": None, "value": {"schema": "v2", "payload": value["payload"]}},
                              {"key": None, "value": None}]}


def test_registered_schemas_are_compared_subject_by_subject_under_renamed_names() -> None:
    def subject(prefix: str, field: str, versions: int = 1) -> dict[str, list[dict[str, Any]]]:
        schema = {"type": "record", "name": "Envelope", "namespace": f"{prefix}.public.t",
                  "fields": [{"name": field, "type": "int"}]}
        return {f"{prefix}.public.t-value": [{"id": n, "schema": schema} for n in range(versions)]}

    assert avro_output.compare_subjects(subject("dbz1", "a"), subject("sig1", "a"), DBZ, SIG) == []
    assert avro_output.compare_subjects(subject("dbz1", "a"), subject("sig1", "b"), DBZ, SIG) == [
        Difference("subject:<prefix>.public.t-value", 0, "schema.fields[0].name", "a", "b")]
    extra = avro_output.compare_subjects(subject("dbz1", "a"), subject("sig1", "a", versions=2), DBZ, SIG)
    assert [(d.index, d.path, d.debezium) for d in extra] == [(1, "schema", "<absent>")]
    missing = avro_output.compare_subjects(subject("dbz1", "a"), {}, DBZ, SIG)
    assert [(d.path, d.signaller) for d in missing] == [("<subject>", None)]


def test_the_readme_mariadb_allow_list_is_the_code_allow_list() -> None:
    from tests.compat.mariadb_compare import MARIADB_ALLOWED

    section = README.read_text().split("## MariaDB compatibility", 1)[1].split("\n## ", 1)[0]
    names = re.findall(r"^\| `([^`]+)` \|", section, re.MULTILINE)
    assert names == [rule.name for rule in MARIADB_ALLOWED]


def test_mariadb_topics_are_classified_by_database_and_ddl_records_by_origin() -> None:
    from tests.compat.compare import _op, topic_kind
    from tests.compat.mariadb_compare import mariadb_renames

    names = mariadb_renames("mdb1dbz", "cmp_dbz_signal", "cmp_1")
    assert topic_kind("mdb1dbz.cmp_1.cmp_types", names) == "data:cmp_types"
    assert topic_kind("mdb1dbz.cmp_1.cmp_dbz_signal", names) == "signal"
    assert topic_kind("mdb1dbz", names) == "schema-changes"
    assert topic_kind("mdb1dbz.schema-history", names) == "schema-history"
    assert topic_kind("mdb1dbz.other_db.t", names) == "other:<prefix>.other_db.t"
    assert topic_kind("sig1.public.t", SIG) == "data:t"  # PostgreSQL: unchanged
    change = {"value": {"payload": {"ddl": "CREATE TABLE t (a int)", "source": {"snapshot": "true"}}}}
    assert _op(change) == "ddl-snapshot"
    change["value"]["payload"]["source"]["snapshot"] = "false"
    assert _op(change) == "ddl"
    assert _op({"key": None, "value": {"ddl": "x", "position": {"file": "f", "snapshot": "INITIAL"}}}) == "ddl-snapshot"
    assert _op({"key": None, "value": {"ddl": "x", "position": {"file": "f", "pos": 4}}}) == "ddl"


def test_mariadb_comparison_drops_empty_transactions_and_allows_only_snapshot_ddl_positions() -> None:
    from tests.compat.mariadb_compare import compare_mariadb, mariadb_renames

    def tx(status: str, gtid: str, tables: list[str]) -> dict[str, Any]:
        end = status == "END"
        return {"key": {"payload": {"id": gtid}}, "value": {"payload": {
            "status": status, "id": gtid, "event_count": len(tables) if end else None,
            "data_collections": [{"data_collection": t, "event_count": 1} for t in tables] if end else None}}}

    dbz, sig = mariadb_renames("mdbd", "dbz_signal", "db"), mariadb_renames("mdbs", "sig_signal", "db")
    left = [tx("BEGIN", "0-1-5", []), tx("END", "0-1-5", []), tx("BEGIN", "0-1-6", []), tx("END", "0-1-6", ["db.t"]),
            tx("BEGIN", "0-1-7", []), tx("END", "0-1-7", ["db.dbz_signal"])]
    right = [tx("BEGIN", "0-1-6", []), tx("END", "0-1-6", ["db.t"]), tx("BEGIN", "0-1-9", [])]
    assert compare_mariadb({"mdbd.transaction": left}, {"mdbs.transaction": right}, dbz, sig) == []
    wrong = [tx("BEGIN", "0-1-6", []), tx("END", "0-1-6", ["db.u"])]
    assert compare_mariadb({"mdbd.transaction": left}, {"mdbs.transaction": wrong}, dbz, sig)

    def ddl(prefix: str, pos: int, snapshot: str) -> dict[str, Any]:
        return {"key": {"payload": {"databaseName": "db"}}, "value": {"payload": {
            "ddl": "ALTER TABLE t ADD COLUMN c int", "source": {"name": prefix, "pos": pos, "snapshot": snapshot}}}}

    assert compare_mariadb({"mdbd": [ddl("mdbd", 1, "true")]}, {"mdbs": [ddl("mdbs", 2, "true")]}, dbz, sig) == []
    streamed = compare_mariadb({"mdbd": [ddl("mdbd", 1, "false")]}, {"mdbs": [ddl("mdbs", 2, "false")]}, dbz, sig)
    assert [d.path for d in streamed] == ["value.payload.source.pos"]
