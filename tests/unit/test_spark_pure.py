"""The apply job's pure logic (no Spark session): Connect schema → Delta types, decimals, schema
reconciliation, the sequence and the job configuration."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from signaller.model import Column
from signaller.sources.postgres.codecs import TypeModes, codec_for
from signaller.wire.numbers import unscaled_bytes
from spark_jobs import sequence
from spark_jobs.apply_changes import BatchApplier, BatchError, Group, TableState, table_path
from spark_jobs.connect_schema import (
    UnsupportedSchemaError,
    column_spec,
    connect_node_of_spark,
    decode_decimal,
    decode_variable_decimal,
    envelope_row_struct,
    key_fields,
    reconcile,
    widening,
)
from spark_jobs.job_config import JobConfigError, config_from_mapping, load_job_config
from spark_jobs.json_parse import parse_json

pytestmark = pytest.mark.unit


def spec_of(type_name: str, typmod: int = -1, modes: TypeModes | None = None) -> object:
    element = type_name[1:] if type_name.startswith("_") else None
    codec = codec_for(Column("c", 0, type_name, typmod, element_type_name=element), modes or TypeModes())
    return column_spec({**codec.schema, "field": "c"})


@pytest.mark.parametrize(
    ("type_name", "typmod", "modes", "ddl"),
    [
        ("int2", -1, TypeModes(), "SMALLINT"),
        ("int8", -1, TypeModes(), "BIGINT"),
        ("numeric", (10 << 16 | 2) + 4, TypeModes(), "DECIMAL(10,2)"),
        ("numeric", -1, TypeModes(), "STRING"),
        ("numeric", -1, TypeModes(decimal_handling="double"), "DOUBLE"),
        ("bytea", -1, TypeModes(), "BINARY"),
        ("date", -1, TypeModes(), "DATE"),
        ("date", -1, TypeModes(time_precision="connect"), "DATE"),
        ("time", -1, TypeModes(), "STRING"),
        ("timetz", -1, TypeModes(), "STRING"),
        ("timestamp", -1, TypeModes(), "TIMESTAMP_NTZ"),
        ("timestamp", 3, TypeModes(), "TIMESTAMP_NTZ"),
        ("timestamp", -1, TypeModes(time_precision="connect"), "TIMESTAMP_NTZ"),
        ("timestamptz", -1, TypeModes(), "TIMESTAMP"),
        ("interval", -1, TypeModes(), "BIGINT"),
        ("interval", -1, TypeModes(interval_handling="string"), "STRING"),
        ("_int4", -1, TypeModes(), "ARRAY<INT>"),
        ("_date", -1, TypeModes(), "ARRAY<DATE>"),
        ("_numeric", (10 << 16 | 2) + 4, TypeModes(), "ARRAY<DECIMAL(10,2)>"),
        ("hstore", -1, TypeModes(), "STRING"),
        ("hstore", -1, TypeModes(hstore_handling="map"), "MAP<STRING, STRING>"),
    ],
)
def test_delta_type_of_each_encoding(type_name: str, typmod: int, modes: TypeModes, ddl: str) -> None:
    assert spec_of(type_name, typmod, modes).target_ddl == ddl  # type: ignore[attr-defined]


def test_conversions_are_sql_over_the_raw_value_and_arrays_convert_items() -> None:
    date = spec_of("date")
    assert "date_add(DATE'1970-01-01', {col})" in date.target_expr  # type: ignore[attr-defined]
    assert spec_of("_date").target_expr.startswith("transform({col}, x0 -> ")  # type: ignore[attr-defined]
    assert spec_of("numeric", (10 << 16 | 2) + 4).udf == ("decimal", 10, 2)  # type: ignore[attr-defined]
    assert spec_of("numeric").udf == ("vsdecimal", 0, 0)  # type: ignore[attr-defined]
    assert not spec_of("text").converted and spec_of("timestamp").converted  # type: ignore[attr-defined]


def test_toast_placeholder_tests_follow_the_encoding() -> None:
    assert spec_of("text").toast_test == "{col} = '__debezium_unavailable_value'"  # type: ignore[attr-defined]
    assert "AS BINARY" in spec_of("bytea").toast_test  # type: ignore[attr-defined]
    assert "array(95, 95, 100" in spec_of("_int4").toast_test  # type: ignore[attr-defined]
    assert "[0] = '__debezium_unavailable_value'" in spec_of("_text").toast_test  # type: ignore[attr-defined]
    assert spec_of("int4").toast_test is None  # type: ignore[attr-defined]
    assert spec_of("numeric", (10 << 16 | 2) + 4).toast_test is None  # type: ignore[attr-defined]


@pytest.mark.parametrize("text", ["-12.50", "0.00", "99999999.99", "-99999999.99", "0.01"])
def test_decimal_bytes_decode_exactly(text: str) -> None:
    codec = codec_for(Column("c", 0, "numeric", (10 << 16 | 2) + 4), TypeModes())
    import base64

    raw = base64.b64decode(codec.convert(text))
    assert decode_decimal(raw, 2, 10) == Decimal(text)
    assert decode_decimal(None, 2) is None
    assert decode_decimal(unscaled_bytes(10**12), 2, 10) is None  # does not fit DECIMAL(10,2): dead letter


@pytest.mark.parametrize(("text", "expected"), [("3.14159", "3.14159"), ("-12.500", "-12.5"), ("1000", "1000"),
                                                ("0", "0"), ("12345678901234567890.123", "12345678901234567890.123")])
def test_variable_scale_decimal_becomes_exact_text(text: str, expected: str) -> None:
    import base64

    value = codec_for(Column("c", 0, "numeric"), TypeModes()).convert(text)
    assert decode_variable_decimal({"scale": value["scale"], "value": base64.b64decode(value["value"])}) == expected
    assert decode_variable_decimal(None) is None


def test_widening_rules() -> None:
    assert widening("INT", "BIGINT") and widening("TINYINT", "INT") and widening("FLOAT", "DOUBLE")
    assert widening("INT", "DOUBLE") and widening("DATE", "TIMESTAMP_NTZ")
    assert widening("DECIMAL(10,2)", "DECIMAL(12,4)") and widening("INT", "DECIMAL(12,2)")
    assert not widening("BIGINT", "INT") and not widening("INT", "STRING") and not widening("BIGINT", "DOUBLE")
    assert not widening("DECIMAL(10,2)", "DECIMAL(10,4)") and not widening("INT", "DECIMAL(10,2)")
    assert not widening("STRING", "STRING")


def _cols(**types: str) -> list[object]:
    names = {"INT": "int32", "BIGINT": "int64", "STRING": "string", "SMALLINT": "int16"}
    return [column_spec({"type": names[t], "optional": True, "field": n}) for n, t in types.items()]


def test_reconcile_adds_widens_keeps_and_rejects() -> None:
    stored = _cols(id="INT", qty="INT")
    rec = reconcile(stored, [_cols(id="INT", qty="BIGINT", extra="STRING")])  # type: ignore[arg-type]
    assert rec.error is None
    assert [c.name for c in rec.added] == ["extra"] and rec.widened == [("qty", "INT", "BIGINT")]
    assert [c.target_ddl for c in rec.columns] == ["INT", "BIGINT", "STRING"]
    narrower = reconcile(_cols(id="INT", qty="BIGINT"), [_cols(id="INT", qty="SMALLINT")])  # type: ignore[arg-type]
    assert narrower.error is None and narrower.widened == [] and narrower.columns[1].target_ddl == "BIGINT"
    bad = reconcile(stored, [_cols(id="INT", qty="BIGINT"), _cols(id="INT", qty="STRING")])  # type: ignore[arg-type]
    assert bad.error == ("incompatible schema change: column 'qty' changes type from BIGINT to STRING, "
                         "which Delta cannot widen")
    fresh = reconcile(None, [_cols(id="INT")])  # type: ignore[arg-type]
    assert [c.name for c in fresh.added] == ["id"] and fresh.widened == []


def test_inferred_spark_types_become_connect_nodes() -> None:
    inferred = {"type": "struct", "fields": [
        {"name": "a", "type": "long"}, {"name": "b", "type": {"type": "array", "elementType": "double"}},
        {"name": "c", "type": {"type": "struct", "fields": [{"name": "scale", "type": "long"}]}},
    ]}
    nodes = [connect_node_of_spark(f["type"], f["name"]) for f in inferred["fields"]]
    assert [column_spec(n).target_ddl for n in nodes] == ["BIGINT", "ARRAY<DOUBLE>", "STRUCT<`scale`: BIGINT>"]
    with pytest.raises(UnsupportedSchemaError):
        connect_node_of_spark("timestamp", "x")


def test_envelope_and_key_schemas() -> None:
    envelope = json.loads((Path(__file__).parents[2] / "schemas" / "envelope.example.json").read_text())
    row = envelope_row_struct(envelope["value"]["schema"])
    assert [f["field"] for f in row["fields"]] == ["id", "note"]
    assert key_fields(envelope["key"]["schema"]) == ["id"]
    with pytest.raises(UnsupportedSchemaError):
        envelope_row_struct({"fields": [{"field": "op"}]})


def test_sequence_parsing_and_key_names() -> None:
    assert sequence.parse_sequence('["24023128","24023160"]') == (24023128, 24023160)
    assert sequence.parse_sequence('[null,"5"]') == (None, 5)
    assert sequence.parse_sequence("garbage") == (None, None)
    assert sequence.key_names('{"schema":{"fields":[{"field":"a"},{"field":"b"}]},"payload":{"a":1,"b":2}}') == [
        "a", "b"]
    assert sequence.key_names('{"id": 3}') == ["id"]
    assert sequence.key_names(None) == [] and sequence.key_names("not json") == []
    assert sequence.seq_tuple({"commit_lsn": 1, "lsn": 2, "kafka_offset": 3}) == (1, 2, 3)
    assert sequence.seq_tuple("[1, 2, 3]") < sequence.seq_tuple([1, 3, 0])  # type: ignore[operator]


def test_job_config_validation(tmp_path: Path) -> None:
    base = {"kafka.bootstrap.servers": "b:9092", "target_root": "/t", "checkpointLocation": "/c", "subscribe": "x"}
    cfg = config_from_mapping({**base, "partition_by": {"public.orders": ["region"]},
                               "cluster_by": {"public.items": ["id"]}, "target_catalog_prefix": "cdc.",
                               "maxOffsetsPerTrigger": 100, "master": None})
    assert cfg.layout_clause("public.orders") == "PARTITIONED BY (`region`)"
    assert cfg.layout_clause("public.items") == "CLUSTER BY (`id`)" and cfg.layout_clause("public.x") == ""
    assert cfg.catalog_name("public.orders") == "cdc.public_orders" and cfg.master is None
    assert config_from_mapping(base).catalog_name("public.orders") is None
    for bad in ({"partition_by": {"public.a": []}}, {"partition_by": {"t": ["a"]}, "cluster_by": {"t": ["a"]}},
                {"target_catalog_prefix": "cdc"}, {"maxOffsetsPerTrigger": 0}, {"subscribePattern": "x.*"},
                {"tombstone_retention_hours": -1}, {"nope": 1}):
        with pytest.raises(JobConfigError):
            config_from_mapping({**base, **bad})
    path = tmp_path / "job.yaml"
    path.write_text("kafka.bootstrap.servers: b:9092\ntarget_root: /t\ncheckpointLocation: /c\n"
                    "subscribePattern: 'p\\..*'\nmaster: null\nfailOnDataLoss: false\n")
    loaded = load_job_config(path)
    assert loaded.subscribe_pattern == "p\\..*" and loaded.master is None and loaded.fail_on_data_loss is False


def test_key_columns_must_match_the_stored_table() -> None:
    cfg = config_from_mapping({"kafka.bootstrap.servers": "b", "target_root": "/t/", "checkpointLocation": "/c",
                               "subscribePattern": "p\\..*", "topic_prefix": "p"})
    applier = BatchApplier(cfg)
    stored = TableState([], ["id"], None, {}, {})
    assert applier._keys([Group(True, 1, None, ["id"], [])], stored) == ["id"]
    assert applier._keys([Group(True, 1, None, [], [])], stored) == ["id"]  # truncates carry no key
    with pytest.raises(BatchError, match=r"key columns change from \['id'\] to \['id', 'code'\]"):
        applier._keys([Group(True, 1, None, ["id", "code"], [])], stored)
    with pytest.raises(BatchError, match="within the batch"):
        applier._keys([Group(True, 1, None, ["id"], []), Group(True, 2, None, ["code"], [])], None)
    with pytest.raises(BatchError, match="no key"):
        applier._keys([Group(False, None, None, [], [])], None)
    assert table_path(cfg, "p.public.orders") == ("public.orders", "/t/public/orders")


def test_only_the_known_kafka_metrics_failure_restarts_the_query() -> None:
    from spark_jobs.apply_changes import _is_spark_55271

    npe = ('[STREAM_FAILED] Query terminated with exception: Cannot invoke "scala.collection.IterableOps.map('
           'scala.Function1)" because the return value of "scala.Option.get()" is null SQLSTATE: XXKST')
    assert _is_spark_55271(RuntimeError(npe))
    assert not _is_spark_55271(RuntimeError("[STREAM_FAILED] DELTA_CONCURRENT_APPEND"))


def test_key_range_only_grows_and_deletion_vectors_is_a_boolean_option() -> None:
    from spark_jobs.split import KeyRange

    empty = KeyRange({"id": None, "day": None})
    grown = empty.widened({"id": (5, 9), "day": (None, None)})
    assert grown.bounds == {"id": (5, 9), "day": None}
    assert grown.widened({"id": (1, 7)}).bounds["id"] == (1, 9)
    assert grown.widened({"id": (6, 20)}).bounds["id"] == (5, 20)
    base = {"kafka.bootstrap.servers": "b:9092", "target_root": "/t", "checkpointLocation": "/c", "subscribe": "x"}
    assert config_from_mapping(base).deletion_vectors is False
    assert config_from_mapping({**base, "deletionVectors": True}).deletion_vectors is True
    with pytest.raises(JobConfigError):
        config_from_mapping({**base, "deletion_vectors": "yes"})


def test_data_skipping_stats_is_all_or_keys_and_keys_quotes_the_columns() -> None:
    from spark_jobs.tables import stats_columns

    base = {"kafka.bootstrap.servers": "b:9092", "target_root": "/t", "checkpointLocation": "/c", "subscribe": "x"}
    assert config_from_mapping(base).data_skipping_stats == "all"
    assert config_from_mapping({**base, "dataSkippingStats": "keys"}).data_skipping_stats == "keys"
    with pytest.raises(JobConfigError, match=r"'data_skipping_stats' must be one of \['all', 'keys'\], got 'key'"):
        config_from_mapping({**base, "data_skipping_stats": "key"})
    assert stats_columns(["id", "odd`name"]) == "`id`,`odd``name`,`_cdc_seq`"


@pytest.mark.parametrize(
    ("type_name", "ddl"),
    [
        ("line", "STRUCT<`a`: DOUBLE, `b`: DOUBLE, `c`: DOUBLE>"),
        ("box", "STRUCT<`wkb`: BINARY, `srid`: INT, `extensions`: MAP<STRING, STRING>>"),
        ("circle", "STRUCT<`center`: STRUCT<`x`: DOUBLE, `y`: DOUBLE, `wkb`: BINARY, `srid`: INT>, `radius`: DOUBLE>"),
        ("int2vector", "ARRAY<SMALLINT>"),
        ("oidvector", "ARRAY<BIGINT>"),
        ("_line", "ARRAY<STRUCT<`a`: DOUBLE, `b`: DOUBLE, `c`: DOUBLE>>"),
        ("_box", "ARRAY<STRUCT<`wkb`: BINARY, `srid`: INT, `extensions`: MAP<STRING, STRING>>>"),
        ("_int2vector", "ARRAY<ARRAY<SMALLINT>>"),
        ("_oidvector", "ARRAY<ARRAY<BIGINT>>"),
        ("geometry", "STRUCT<`wkb`: BINARY, `srid`: INT, `extensions`: MAP<STRING, STRING>>"),
        ("geography", "STRUCT<`wkb`: BINARY, `srid`: INT>"),
        ("_hstore", "ARRAY<STRING>"),
    ],
)
def test_geometric_and_vector_columns_are_stored_as_their_raw_structs_and_arrays(type_name: str, ddl: str) -> None:
    codec = codec_for(Column(name="c", type_oid=0, type_name=type_name), TypeModes())
    spec = column_spec({**codec.schema, "field": "c"})
    assert (spec.raw_ddl, spec.target_ddl, spec.target_expr) == (ddl, ddl, "{col}")


def test_binlog_sequences_order_by_file_number_then_pos_then_row() -> None:
    ordered = [("mariadb-bin.000003", 1000, 0), ("mariadb-bin.000003", 1000, 1), ("mariadb-bin.000003", 9000, 0),
               ("mariadb-bin.000004", 4, 0), ("mysql-bin.000010", 4, 0)]
    keys = [sequence.binlog_sequence(*p) for p in ordered]
    assert all(k is not None for k in keys)
    assert keys == sorted(keys, key=lambda k: k or (0, 0)) and len(set(keys)) == len(keys)
    assert sequence.binlog_sequence("mariadb-bin.000003", 1234, None) == ((3 << 32) | 1234, 0)
    assert sequence.binlog_sequence("mariadb-bin", 1234, 0) is None
    assert sequence.binlog_sequence("mariadb-bin.000003", None, 0) is None
    assert sequence.binlog_sequence(None, 4, 0) is None


def test_source_fields_are_those_of_the_writer_schema() -> None:
    def envelope(*names: str) -> dict[str, object]:
        return {"fields": [{"field": "before"}, {"field": "source", "fields": [{"field": n} for n in names]}]}

    assert sequence.source_fields(None) == sequence.SOURCE_FIELDS
    assert sequence.source_fields(envelope("version", "lsn", "sequence", "txId")) == ("lsn", "sequence")
    assert sequence.source_fields(envelope("version", "gtid", "file", "pos", "row")) == ("file", "pos", "row")
    assert sequence.source_fields({"fields": [{"field": "op"}]}) == ()


@pytest.mark.parametrize(("appends", "merges", "append_reads", "folded"), [
    (0, 500, 0, False),  # nothing to fold
    (500, 0, 0, False),  # no MERGE to fold into: a plain append
    (100, 900, 0, True),  # the smaller part
    (100, 900, 100, True),  # the smaller part, reads or not
    (750, 750, 0, True),  # a stream's small batch: few new rows, one commit
    (2, 2, 1, False),  # a snapshot's reads of new keys: appended (backfills are appends)
    (10_000, 2_000, 0, True),
    (10_001, 2_000, 0, False),  # many new rows and a small MERGE: the append is cheaper than joining them
    (60_000, 40_000, 0, False),
    (40_000, 60_000, 40_000, True),
])
def test_new_rows_join_the_merge_when_they_are_its_smaller_part_or_few_stream_rows(
        appends: int, merges: int, append_reads: int, folded: bool) -> None:
    from spark_jobs.split import FOLD_APPENDS_UP_TO, fold_appends

    assert FOLD_APPENDS_UP_TO == 10_000
    assert fold_appends(appends, merges, append_reads) is folded


def test_kafka_settings_pass_through_over_the_fetch_defaults() -> None:
    from spark_jobs.kafka_source import FETCH_DEFAULTS, consumer_options

    base = {"kafka.bootstrap.servers": "b:9092", "target_root": "/t", "checkpointLocation": "/c", "subscribe": "x"}
    cfg = config_from_mapping({**base, "kafka.security.protocol": "SASL_SSL", "kafka.max.partition.fetch.bytes": 1024,
                               "kafka.check.crcs": False})
    assert cfg.kafka_options == {"kafka.security.protocol": "SASL_SSL", "kafka.max.partition.fetch.bytes": "1024",
                                 "kafka.check.crcs": "false"}
    assert cfg.bootstrap_servers == "b:9092"
    options = consumer_options(cfg.bootstrap_servers, cfg.kafka_options)
    assert options["kafka.bootstrap.servers"] == "b:9092"
    assert options["kafka.max.partition.fetch.bytes"] == "1024"  # the job's own setting wins
    assert options["kafka.fetch.max.wait.ms"] == FETCH_DEFAULTS["kafka.fetch.max.wait.ms"] == "10"
    assert options["kafka.security.protocol"] == "SASL_SSL"
    assert consumer_options("b:9092", config_from_mapping(base).kafka_options) == {
        "kafka.bootstrap.servers": "b:9092", **FETCH_DEFAULTS}


@pytest.mark.parametrize(("key", "value", "named"), [
    ("kafka.auto.offset.reset", "latest", "set by Spark's Kafka source"),
    ("kafka.enable.auto.commit", True, "set by Spark's Kafka source"),
    ("kafka.sasl.jaas.config", {"a": 1}, "must be a string or a number"),
    ("kafka.client.id", "", "must be a string or a number"),
    ("kafka_options", {"security.protocol": "SSL"}, "'kafka.<setting>' names"),
])
def test_bad_kafka_settings_are_refused_by_name(key: str, value: object, named: str) -> None:
    base = {"kafka.bootstrap.servers": "b:9092", "target_root": "/t", "checkpointLocation": "/c", "subscribe": "x"}
    with pytest.raises(JobConfigError, match=named) as raised:
        config_from_mapping({**base, key: value}, origin="apply.yaml")
    assert "apply.yaml" in str(raised.value)
    assert repr(key) in str(raised.value)


def test_a_parse_that_reports_failed_values_needs_a_struct() -> None:
    with pytest.raises(ValueError, match=r"needs a STRUCT<...> type, got 'MAP<STRING, STRING>'"):
        parse_json("t", "MAP<STRING, STRING>", failed_field="_failed")
