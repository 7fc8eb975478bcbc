"""The apply job against the real Kafka broker, Spark and Delta: one scenario, two job runs.

Six source tables share one topic prefix, so each ``availableNow`` run of the job applies all
of them (Spark runs are slow on a small machine: the scenario is built once per module and the
tests below assert on its results). Events are rendered by the sidecar's own serializer and
type codecs (``cdc_events.SourceTable``), with and without embedded schemas.

Phase 1 creates the tables; phase 2 brings late, duplicated, replayed and out-of-order events,
a schemaless batch for a table created from schema-carrying records, an added column, a widened
column and an incompatible type change (changed key columns: tests/unit/test_spark_pure.py).
Then the last batch is replayed through the applier with the same batch id (Delta's
idempotent-write id skips every write).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from devtools import StackSettings
from signaller.model import Column
from signaller.sources.postgres.codecs import TypeModes
from spark_jobs import density
from spark_jobs.apply_changes import BatchApplier, start_query
from spark_jobs.job_config import ApplyJobConfig
from tests.kafka_helpers import create_topic, produce
from tests.spark.cdc_events import TOAST, Record, SourceTable

pytestmark = pytest.mark.spark


def col(name: str, type_name: str, typmod: int = -1, *, key: bool = False) -> Column:
    element = type_name[1:] if type_name.startswith("_") else None
    return Column(name, 0, type_name, typmod, optional=not key, is_key=key, element_type_name=element)


ID = col("id", "int4", key=True)

# -- every type of schemas/type-mapping.md (plus a few precisions) and its Delta value --------
UTC = dt.UTC
TYPES: list[tuple[str, str, int, str, str, Any]] = [
    # column, PostgreSQL type, typmod, mode, sample text, expected Delta value
    ("c_int2", "int2", -1, "default", "32767", 32767),
    ("c_int4", "int4", -1, "default", "42", 42),
    ("c_int8", "int8", -1, "default", "9007199254740993", 9007199254740993),
    ("c_num_p", "numeric", (10 << 16 | 2) + 4, "default", "-12.50", Decimal("-12.50")),
    ("c_num_p_str", "numeric", (10 << 16 | 2) + 4, "string", "-12.50", "-12.50"),
    ("c_num_p_dbl", "numeric", (10 << 16 | 2) + 4, "double", "-12.50", -12.5),
    ("c_num_v", "numeric", -1, "default", "3.14159", "3.14159"),
    ("c_num_v_str", "numeric", -1, "string", "3.14159", "3.14159"),
    ("c_num_v_dbl", "numeric", -1, "double", "3.14159", 3.14159),
    ("c_float4", "float4", -1, "default", "1.5", 1.5),
    ("c_float8", "float8", -1, "default", "2.25", 2.25),
    ("c_bool", "bool", -1, "default", "t", True),
    ("c_text", "text", -1, "default", "hello", "hello"),
    ("c_varchar", "varchar", 24, "default", "hi", "hi"),
    ("c_bpchar", "bpchar", 7, "default", "ab ", "ab "),
    ("c_bytea", "bytea", -1, "default", "\\x0102ff", b"\x01\x02\xff"),
    ("c_bytea_b64", "bytea", -1, "base64", "\\x0102ff", "AQL/"),
    ("c_date", "date", -1, "default", "2024-03-01", dt.date(2024, 3, 1)),
    ("c_date_connect", "date", -1, "connect", "2024-03-01", dt.date(2024, 3, 1)),
    ("c_time", "time", -1, "default", "13:45:30.25", "13:45:30.250000"),
    ("c_time_connect", "time", -1, "connect", "13:45:30.25", "13:45:30.250000"),
    ("c_time3", "time", 3, "default", "13:45:30.25", "13:45:30.250000"),
    ("c_timetz", "timetz", -1, "default", "13:45:30+02", "11:45:30Z"),
    ("c_ts", "timestamp", -1, "default", "2024-03-01 13:45:30.123456", dt.datetime(2024, 3, 1, 13, 45, 30, 123456)),
    ("c_ts_connect", "timestamp", -1, "connect", "2024-03-01 13:45:30.123456",
     dt.datetime(2024, 3, 1, 13, 45, 30, 123000)),
    ("c_ts3", "timestamp", 3, "default", "2024-03-01 13:45:30.123", dt.datetime(2024, 3, 1, 13, 45, 30, 123000)),
    ("c_tstz", "timestamptz", -1, "default", "2024-03-01 13:45:30.5+02",
     dt.datetime(2024, 3, 1, 11, 45, 30, 500000, tzinfo=UTC)),
    ("c_interval", "interval", -1, "default", "1 day 02:00:00", 93600000000),
    ("c_interval_str", "interval", -1, "interval-string", "1 day 02:00:00", "P0Y0M1DT2H0M0S"),
    ("c_uuid", "uuid", -1, "default", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
    ("c_json", "json", -1, "default", '{"a": 1}', '{"a": 1}'),
    ("c_jsonb", "jsonb", -1, "default", '{"a": 1}', '{"a": 1}'),
    ("c_int4_arr", "_int4", -1, "default", "{1,2,NULL}", [1, 2, None]),
    ("c_text_arr", "_text", -1, "default", '{a,"b c"}', ["a", "b c"]),
]
MODES = {
    "default": TypeModes(), "string": TypeModes(decimal_handling="string"),
    "double": TypeModes(decimal_handling="double"), "connect": TypeModes(time_precision="connect"),
    "base64": TypeModes(binary_handling="base64"), "interval-string": TypeModes(interval_handling="string"),
}
INFINITY = {  # PostgreSQL 'infinity' → the largest value Spark stores
    "c_date": ("infinity", dt.date(9999, 12, 31)),
    "c_ts": ("infinity", dt.datetime(9999, 12, 31, 23, 59, 59, 999999)),
    "c_tstz": ("infinity", dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
    "c_date_connect": ("-infinity", dt.date(1, 1, 1)),
}
ITEMS_FINAL = {
    1: ("a2", 3, "n1", [1, 2]),
    4: ("d-new", 9, "n2", [9]),
    30: ("c30", 31, None, None),
}


@dataclasses.dataclass
class Scenario:
    spark: Any
    cfg: ApplyJobConfig
    root: Path
    prefix: str
    items: SourceTable
    produced: dict[str, list[Record]]
    dead_letters: list[Any]
    items_version: int
    replay_version: int
    replay_rows: dict[int, tuple[Any, ...]]
    left_cached: list[str] = dataclasses.field(default_factory=list)  # RDDs the replayed batch left cached

    def path(self, table: str) -> str:
        return str(self.root / "delta" / "public" / table)

    def rows(self, table: str, *columns: str) -> dict[Any, tuple[Any, ...]]:
        df = self.spark.read.format("delta").load(self.path(table))
        return {r.id: tuple(r[c] for c in columns) for r in df.collect()}


def run(spark: Any, cfg: ApplyJobConfig) -> None:
    query = start_query(spark, cfg)
    query.awaitTermination(600)
    assert query.exception() is None, query.exception()


def _send(stack: StackSettings, produced: dict[str, list[Record]], topic: str, records: list[Record]) -> None:
    produce(stack.bootstrap_servers, topic, records)
    produced.setdefault(topic, []).extend(records)


def _no_position(record: Record) -> Record:
    value = json.loads(record[1] or b"{}")
    value["payload"]["source"]["sequence"] = None
    value["payload"]["source"]["lsn"] = None
    return record[0], json.dumps(value).encode()


def _bad_qty(record: Record) -> Record:
    value = json.loads(record[1] or b"{}")
    value["payload"]["after"]["qty"] = "abc"
    return record[0], json.dumps(value).encode()


EVERY_BATCH_DENSE = "copy-on-write-dense"


@pytest.fixture(scope="module", params=["copy-on-write", "deletion-vectors", EVERY_BATCH_DENSE])
def scenario(spark: Any, stack: StackSettings, tmp_path_factory: pytest.TempPathFactory,
             request: pytest.FixtureRequest) -> Iterator[Scenario]:
    """The scenario with copy-on-write MERGEs, with deletion vectors (``spark_jobs.dv_merge``) and
    statistics on the key columns only (``data_skipping_stats``), and with copy-on-write MERGEs
    that take every batch as dense over its files (``spark_jobs.density``: every file in the key
    range rewritten without first finding the touched ones): every test below holds for all three."""
    import uuid

    deletion_vectors = request.param == "deletion-vectors"
    patch = pytest.MonkeyPatch()
    request.addfinalizer(patch.undo)
    if request.param == EVERY_BATCH_DENSE:
        patch.setattr(density, "MAX_WASTE", 1.0)
    unique = uuid.uuid4().hex[:10]
    prefix, root = f"t{unique}", tmp_path_factory.mktemp("apply")
    cfg = ApplyJobConfig(
        bootstrap_servers=stack.bootstrap_servers, subscribe_pattern=re.escape(prefix) + r"\..*", topic_prefix=prefix,
        target_root=str(root / "delta"), checkpoint_location=str(root / "checkpoint"), available_now=True,
        target_catalog_prefix=f"cdc{unique}.", cluster_by={"public.items": ["id"]}, deletion_vectors=deletion_vectors,
        data_skipping_stats="keys" if deletion_vectors else "all",
    )
    items = SourceTable(prefix, "items", [ID, col("name", "text"), col("qty", "int8"), col("note", "text"),
                                          col("codes", "_int4")])
    trunc = SourceTable(prefix, "trunc", [ID, col("v", "text")])
    plain_cols = [ID, col("name", "text"), col("price", "numeric", (10 << 16 | 2) + 4), col("born", "date")]
    plain = SourceTable(prefix, "plain", plain_cols, schemas_enable=False)
    plain2 = SourceTable(prefix, "plain", [*plain_cols, col("color", "text")], schemas_enable=False)
    type_cols = [ID, *(col(name, t, mod) for name, t, mod, *_ in TYPES)]
    type_modes = {name: MODES[mode] for name, _, _, mode, _, _ in TYPES}
    types = SourceTable(prefix, "types", type_cols, modes=type_modes)
    types_schemaless = SourceTable(prefix, "types", type_cols, modes=type_modes, schemas_enable=False)
    evol = SourceTable(prefix, "evol", [ID, col("name", "text"), col("qty", "int4")])
    evol2 = SourceTable(prefix, "evol", [ID, col("name", "text"), col("qty", "int8"), col("extra", "text")])
    clash = SourceTable(prefix, "clash", [ID, col("qty", "int4")])
    clash2 = SourceTable(prefix, "clash", [ID, col("qty", "text")])
    tables = [items, trunc, plain, types, evol, clash]
    for table in tables:
        create_topic(stack.bootstrap_servers, table.topic)
    produced: dict[str, list[Record]] = {}
    sample = {name: text for name, _, _, _, text, _ in TYPES}

    # -- phase 1 --------------------------------------------------------------------------
    i1 = {"id": "1", "name": "a", "qty": "1", "note": "n1", "codes": "{1,2}"}
    i1u = {**i1, "name": "a2", "qty": "2"}
    i2 = {"id": "2", "name": "b", "qty": "2"}
    i3 = {"id": "3", "name": "c", "qty": "3"}
    i30 = {"id": "30", "name": "c", "qty": "3"}
    i4 = {"id": "4", "name": "d", "qty": "4", "note": "long note", "codes": "{7,8}"}
    i5 = {"id": "5", "name": "e", "qty": "5"}
    items_phase1 = [
        items.event("c", 100, 110, after=i1),
        items.event("c", 100, 120, after=i2),
        items.event("u", 200, 210, after=i1u),
        items.event("c", 100, 110, after=i1),  # duplicate, re-sent
        items.event("c", 300, 310, after=i3),
        items.event("d", 400, 410, before=i3), items.tombstone(i3), items.event("c", 400, 411, after=i30),  # key change
        items.event("d", 400, 420, before=i2),
        items.event("c", 500, 510, after=i4),
        items.event("u", 600, 610, after={**i4, "qty": "5", "note": TOAST, "codes": TOAST}),
        items.event("r", 700, 700, after=i5),
    ]
    bad = [
        (items.serializer.serialize_key({"id": 6}), b"not json at all"),
        (items.serializer.serialize_key({"id": 6}), b'{"before":null,"after":{"id":6}}'),
        _no_position(items.event("c", 800, 801, after={"id": "7", "name": "x"})),
        (None, items.event("c", 800, 802, after={"id": "8", "name": "x"})[1]),
        _bad_qty(items.event("c", 800, 803, after={"id": "9", "name": "x", "qty": "1"})),
    ]
    _send(stack, produced, items.topic, items_phase1 + bad)
    _send(stack, produced, trunc.topic, [
        trunc.event("c", 100, 110, after={"id": "1", "v": "x"}),
        trunc.event("c", 100, 120, after={"id": "2", "v": "y"}),
        trunc.event("t", 200, 210), trunc.event("c", 300, 310, after={"id": "3", "v": "z"}),
        trunc.event("c", 150, 150, after={"id": "9", "v": "late"}),  # older than the truncate: dropped
    ])
    p1 = {"id": "1", "name": "x", "price": "1.50", "born": "2024-03-01"}
    _send(stack, produced, plain.topic, [
        plain.event("c", 100, 110, after=p1),
        plain.event("c", 100, 120, after={"id": "2", "name": "y", "price": "2.00"}),
        plain.event("u", 200, 210, after={**p1, "name": "x2", "price": "3.25"}),
        plain.event("d", 300, 310, before={"id": "2"}),
    ])
    infinity = {"id": "4", **{name: text for name, (text, _) in INFINITY.items()}}
    _send(stack, produced, types.topic, [
        types.event("c", 100, 110, after={"id": "1", **sample}), types.event("c", 100, 120, after={"id": "2"}),
        types.event("c", 100, 130, after=infinity),
    ])
    _send(stack, produced, evol.topic, [evol.event("c", 100, 110, after={"id": "1", "name": "a", "qty": "1"})])
    _send(stack, produced, clash.topic, [clash.event("c", 100, 110, after={"id": "1", "qty": "10"})])
    run(spark, cfg)

    # -- phase 2 --------------------------------------------------------------------------
    _send(stack, produced, items.topic, [
        items.event("r", 150, 150, after={**i1, "name": "a-old"}),  # snapshot read older than the update
        items.event("r", 800, 800, after={**i4, "name": "d-new", "qty": "9", "note": "n2", "codes": "{9}"}),
        items.event("c", 300, 300, after={**i2, "name": "b-late"}),  # older than the delete
        *items_phase1,  # the whole first batch again
        items.event("d", 850, 850, before=i5),
        items.event("u", 900, 910, after={**i30, "name": "c30", "qty": "31"}),
        items.event("u", 950, 960, after={**i1u, "qty": "3", "note": TOAST, "codes": TOAST}),  # stored values kept
    ])
    _send(stack, produced, trunc.topic, [
        trunc.event("c", 180, 180, after={"id": "8", "v": "late"}),
        trunc.event("c", 400, 410, after={"id": "4", "v": "w"}),
    ])
    _send(stack, produced, plain.topic, [
        plain2.event("c", 400, 410, after={"id": "3", "name": "z", "price": "4.00", "color": "red"}),
    ])
    _send(stack, produced, types.topic, [types_schemaless.event("c", 200, 210, after={"id": "3", **sample})])
    _send(stack, produced, evol.topic, [
        evol2.event("u", 200, 210, after={"id": "1", "name": "a2", "qty": "5000000000", "extra": "x"}),
        evol2.event("c", 200, 220, after={"id": "2", "name": "b", "qty": "2", "extra": "y"}),
    ])
    _send(stack, produced, clash.topic, [clash2.event("u", 200, 210, after={"id": "1", "qty": "ten"})])
    run(spark, cfg)
    dead = spark.read.format("delta").load(cfg.effective_dead_letter_path).collect()

    # -- replay of the last batch of the items topic with the same Delta app id ---------------
    items_path = str(root / "delta" / "public" / "items")
    version = _version(spark, items_path)
    last_batch = max(int(p.name) for p in (root / "checkpoint" / "commits").iterdir() if p.name.isdigit())
    batch = (spark.read.format("kafka").option("kafka.bootstrap.servers", stack.bootstrap_servers)
             .option("subscribe", items.topic).option("startingOffsets", "earliest").load())
    cached_before = {i.id() for i in spark.sparkContext._jsc.sc().getRDDStorageInfo()}
    BatchApplier(cfg)(batch, last_batch)  # every write of a batch already applied is skipped
    left_cached = [i.name() for i in spark.sparkContext._jsc.sc().getRDDStorageInfo()
                   if i.id() not in cached_before and not i.name().startswith("Delta Table State")]
    replayed = _version(spark, items_path)
    scenario = Scenario(spark, cfg, root, prefix, items, produced, dead, version, replayed, {}, left_cached)
    scenario.replay_rows = scenario.rows("items", "name", "qty", "note", "codes")
    yield scenario


def _version(spark: Any, path: str) -> int:
    return int(spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").first().version)


def _delta_rs_rows(scenario: Scenario, table: str) -> list[dict[str, Any]]:
    """The table's rows as delta-rs (``deltalake``, a reader without Spark) reads them. With
    deletion vectors, delta-rs 1.x's PyArrow reader (``to_pyarrow_table``, ``to_pandas``) refuses
    the table, naming the feature, and its DataFusion reader (``QueryBuilder``) reads it, the
    marked rows left out (the README says so): the rows then come from that reader."""
    import pyarrow as pa
    from deltalake import DeltaTable, QueryBuilder

    delta = DeltaTable(scenario.path(table))
    if not scenario.cfg.deletion_vectors:
        return list(delta.to_pyarrow_table().to_pylist())
    with pytest.raises(Exception, match="deletionVectors"):
        delta.to_pyarrow_table()
    return list(pa.table(QueryBuilder().register("t", delta).execute("SELECT * FROM t").read_all()).to_pylist())


# -- tests ------------------------------------------------------------------------------------
def test_items_converge_despite_duplicates_late_reads_key_changes_and_toast(scenario: Scenario) -> None:
    assert scenario.rows("items", "name", "qty", "note", "codes") == ITEMS_FINAL
    schema = scenario.spark.read.format("delta").load(scenario.path("items")).schema
    assert {f.name: f.dataType.simpleString() for f in schema if not f.name.startswith("_cdc")} == {
        "id": "int", "name": "string", "qty": "bigint", "note": "string", "codes": "array<int>"}


def test_truncate_removes_older_rows_in_the_same_and_later_batches(scenario: Scenario) -> None:
    assert scenario.rows("trunc", "v") == {3: ("z",), 4: ("w",)}


def test_schemaless_records_create_a_table_with_inferred_types_and_add_columns(scenario: Scenario) -> None:
    spark = scenario.spark
    fields = {f.name: f.dataType.simpleString() for f in spark.read.format("delta").load(scenario.path("plain")).schema}
    assert {k: v for k, v in fields.items() if not k.startswith("_cdc")} == {
        "id": "bigint", "name": "string", "price": "string", "born": "bigint", "color": "string",
    }
    # price is Connect Decimal bytes (base64 text without the schema), born is epoch days.
    assert scenario.rows("plain", "name", "price", "born", "color") == {
        1: ("x2", "AUU=", 19783, None), 3: ("z", "AZA=", None, "red"),
    }


def test_every_type_round_trips_with_and_without_embedded_schema(scenario: Scenario) -> None:
    df = scenario.spark.read.format("delta").load(scenario.path("types"))
    types = {f.name: f.dataType.simpleString() for f in df.schema}
    assert types["c_num_p"] == "decimal(10,2)" and types["c_ts"] == "timestamp_ntz" and types["c_tstz"] == "timestamp"
    assert types["c_date"] == "date" and types["c_time"] == "string" and types["c_interval"] == "bigint"
    names = [name for name, *_ in TYPES]
    # TIMESTAMP columns are compared as instants (µs since the epoch), whatever the local zone.
    select = [f"unix_micros({n}) AS {n}" if types[n] == "timestamp" else n for n in names]
    rows = {r.id: r for r in df.selectExpr("id", *select).collect()}
    assert sorted(rows) == [1, 2, 3, 4]

    def expected(value: Any) -> Any:
        if isinstance(value, dt.datetime) and value.tzinfo is not None:
            return (value - dt.datetime(1970, 1, 1, tzinfo=UTC)) // dt.timedelta(microseconds=1)
        return value

    for name, _, _, mode, text, value in TYPES:
        for row_id in (1, 3):  # 1: schema embedded; 3: schemaless, decoded with the stored schema
            assert rows[row_id][name] == expected(value), (name, mode, text, row_id)
        assert rows[2][name] is None, name
        if name in INFINITY:
            assert rows[4][name] == expected(INFINITY[name][1]), name
    # A downstream reader without Spark: delta-rs sees the same values.
    read = _delta_rs_rows(scenario, "types")
    arrow = {r["id"]: r for r in read}
    assert len(read) == len(arrow) == len(rows), "a replaced row is still read"
    for name, *_, value in TYPES:
        assert arrow[1][name] == value, name


def test_schema_changes_add_widen_or_dead_letter_without_stopping_the_job(scenario: Scenario) -> None:
    spark = scenario.spark
    evol = spark.read.format("delta").load(scenario.path("evol"))
    assert {f.name: f.dataType.simpleString() for f in evol.schema}["qty"] == "bigint"
    assert scenario.rows("evol", "name", "qty", "extra") == {1: ("a2", 5000000000, "x"), 2: ("b", 2, "y")}
    assert scenario.rows("clash", "qty") == {1: (10,)}
    reasons = {r.topic.rsplit(".", 1)[1]: r.reason for r in scenario.dead_letters}
    assert reasons["clash"] == ("incompatible schema change: column 'qty' changes type from INT to STRING, "
                                "which Delta cannot widen")


def test_dead_letters_keep_the_raw_record_and_the_reason(scenario: Scenario) -> None:
    topic = scenario.items.topic
    produced = scenario.produced[topic]
    dead = {r.offset: r for r in scenario.dead_letters if r.topic == topic}
    first_bad = 12  # offsets 0..11: the first batch's good events and the Kafka tombstone
    expected = {
        first_bad: "no op (not a Debezium change event)",
        first_bad + 1: "no op (not a Debezium change event)",
        first_bad + 2: "no log position (source.sequence and source.lsn)",
        first_bad + 3: "no key",
        first_bad + 4: "undecodable value of column 'qty' (BIGINT → BIGINT): abc",
    }
    assert {o: dead[o].reason for o in dead} == expected
    for offset, row in dead.items():
        assert (row.key, row.value) == (produced[offset][0], produced[offset][1]) and row.partition == 0


def test_replayed_batches_are_no_ops(scenario: Scenario) -> None:
    """Same batch id, same app id: nothing is written (Delta's txnAppId/txnVersion). The second
    phase also re-sent the whole first batch under new offsets: the sequence guard ignored it
    (see the change data feed test)."""
    assert scenario.replay_version == scenario.items_version, "a batch replayed with the same app id wrote again"
    assert scenario.replay_rows == ITEMS_FINAL


def test_a_batch_releases_what_it_cached(scenario: Scenario) -> None:
    """The replayed batch framed, decoded and tagged its records (cached and checkpointed); none of
    that is held once it returns (``spark_jobs.batch_cache``); Delta's own state caches aside."""
    assert scenario.left_cached == []


def test_change_data_feed_and_catalog_names(scenario: Scenario) -> None:
    spark = scenario.spark
    cdf = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0)
           .load(scenario.path("items")).collect())
    changes = {(r._change_type, r.id, r.name) for r in cdf}
    # the unchanged-TOAST update of id 4 took note and codes from the create earlier in its batch
    assert {(r.note, tuple(r.codes)) for r in cdf if r._change_type == "insert" and r.id == 4} == {
        ("long note", (7, 8))}
    assert {("insert", 1, "a2"), ("insert", 4, "d"), ("insert", 5, "e"), ("insert", 30, "c"),
            ("update_preimage", 4, "d"), ("update_postimage", 4, "d-new"), ("delete", 5, "e"),
            ("update_postimage", 30, "c30")} <= changes
    assert not {name for _, _, name in changes} & {"a-old", "b-late", "a"}
    assert not any(i in (2, 3) for _, i, _ in changes), "a deleted key came back"
    arrow = _delta_rs_rows(scenario, "items")
    assert len(arrow) == len(ITEMS_FINAL), "a replaced row is still read"
    assert {r["id"]: (r["name"], r["qty"], r["note"], r["codes"]) for r in arrow} == ITEMS_FINAL
    catalog = scenario.cfg.catalog_name("public.items")
    assert catalog is not None
    assert {r.id for r in spark.table(catalog).collect()} == set(ITEMS_FINAL)
    detail = spark.sql(f"DESCRIBE DETAIL {catalog}").first()
    assert list(detail.clusteringColumns) == ["id"]


def test_merges_mark_replaced_rows_with_deletion_vectors_instead_of_rewriting_files(scenario: Scenario) -> None:
    """With deletion vectors every MERGE of the scenario's tables marks the rows it replaces as
    deleted and copies no stored row (``spark_jobs.dv_merge``), and history keeps Delta's MERGE
    metrics; copy-on-write adds no deletion vector. A file whose every row a MERGE replaces (the
    items table's one file in its second batch) is removed instead: Delta knows its row count."""
    histories = {table: scenario.spark.sql(f"DESCRIBE HISTORY delta.`{scenario.path(table)}`").collect()
                 for table in ("items", "plain", "types", "evol")}
    merges = [r.operationMetrics for history in histories.values() for r in history if r.operation == "MERGE"]
    assert merges
    added = sum(int(m["numTargetDeletionVectorsAdded"]) + int(m["numTargetDeletionVectorsUpdated"]) for m in merges)
    optimized = [table for table, history in histories.items() if any(r.operation == "OPTIMIZE" for r in history)]
    if scenario.cfg.deletion_vectors:
        assert added > 0
        assert all(int(m["numTargetRowsCopied"]) == 0 for m in merges)
        assert sum(int(m["numTargetRowsUpdated"]) + int(m["numTargetRowsDeleted"]) for m in merges) > 0
        assert all(int(m["numSourceRows"]) > 0 for m in merges)
        items_merges = [r for r in histories["items"] if r.operation == "MERGE"]
        replaced = max(items_merges, key=lambda r: r.version).operationMetrics
        assert (int(replaced["numTargetRowsUpdated"]) + int(replaced["numTargetRowsDeleted"]),
                int(replaced["numTargetFilesRemoved"]), int(replaced["numTargetDeletionVectorsAdded"])) == (4, 1, 0)
        # a MERGE left compact_deleted_share (0.3) of its rows marked deleted: the job compacted it
        assert optimized
    else:
        assert added == 0
        assert not optimized


def test_data_skipping_stats_keys_limits_file_statistics_to_the_key_and_cdc_seq(scenario: Scenario) -> None:
    """With ``data_skipping_stats: keys`` every table the job writes says so in its properties and
    the files it adds carry min/max statistics of the key columns and ``_cdc_seq`` only; by default
    the property is not set and the files carry statistics of the row's columns too."""
    for table in ("items", "plain"):
        path = scenario.path(table)
        props = {r.key: r.value for r in scenario.spark.sql(f"SHOW TBLPROPERTIES delta.`{path}`").collect()}
        added = [json.loads(json.loads(line)["add"]["stats"])
                 for log in sorted((Path(path) / "_delta_log").glob("*.json"))
                 for line in log.read_text().splitlines() if '"add"' in line and '"stats"' in line]
        assert added
        if scenario.cfg.data_skipping_stats == "keys":
            assert props.get("delta.dataSkippingStatsColumns") == "`id`,`_cdc_seq`"
            assert {name for stats in added for name in stats["minValues"]} == {"id", "_cdc_seq"}
        else:
            assert "delta.dataSkippingStatsColumns" not in props
            assert {"id", "name", "_cdc_seq", "_cdc_op"} <= {name for stats in added for name in stats["minValues"]}


def test_the_tables_turn_parquet_dictionaries_off_for_their_columns_unique_per_row(scenario: Scenario) -> None:
    """Every table the job created says so (``spark_jobs.parquet_encoding``; that the properties
    reach the Parquet writer, one column at a time, is ``tests/spark/test_parquet_encoding.py``):
    the single-column key ``id``, ``_cdc_seq.lsn`` and ``_cdc_seq.kafka_offset``, nothing else."""
    for table in ("items", "plain"):
        props = {r.key: r.value for r in scenario.spark.sql(
            f"SHOW TBLPROPERTIES delta.`{scenario.path(table)}`").collect()}
        assert {k: v for k, v in props.items() if k.startswith("parquet.")} == {
            "parquet.enable.dictionary#id": "false", "parquet.enable.dictionary#_cdc_seq.lsn": "false",
            "parquet.enable.dictionary#_cdc_seq.kafka_offset": "false"}
