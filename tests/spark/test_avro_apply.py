"""Avro topics (Confluent wire format, the real schema registry) applied to Delta equal the same
changes applied from JSON.

Each table has two twins under one topic prefix: ``<name>_json`` (the JsonConverter's records) and
``<name>_avro`` (the AvroConverter's, schemas registered in the stack's registry), fed the same
events at the same offsets, so one ``availableNow`` run of the job (format ``auto``: each record
read by its first byte) applies both and every stored value, ``_cdc_seq`` included, must match.
Phase 1 creates the tables (every type of the JSON tests, duplicates, a key change, deletes,
unchanged TOAST, a snapshot read, a truncate) and two bad records per twin: a record the decoder cannot read
(truncated) and, in Avro, an unknown schema id. Phase 2 replays phase 1 under new offsets, brings
late events and a new table schema (a new schema id: a widened and an added column). Then the last
batch of the Avro items topic is replayed with the same batch id: nothing is written.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devtools import StackSettings
from signaller.sinks.registry import SchemaRegistryClient
from signaller.sinks.subjects import RegistrySubjects
from spark_jobs.apply_changes import BatchApplier
from spark_jobs.job_config import ApplyJobConfig
from tests.kafka_helpers import create_topic, produce
from tests.spark.cdc_events import TOAST, Record, SourceTable
from tests.spark.test_apply_changes import ID, INFINITY, ITEMS_FINAL, MODES, TYPES, col, run

pytestmark = pytest.mark.spark

FORMATS = ("json", "avro")
UNKNOWN_ID = 0x7FFFFFF0


@dataclasses.dataclass
class Scenario:
    spark: Any
    cfg: ApplyJobConfig
    root: Path
    topics: dict[str, str]
    dead_letters: list[Any]
    items_version: int
    replay_version: int

    def path(self, table: str) -> str:
        return str(self.root / "delta" / "public" / table)

    def table(self, table: str) -> Any:
        return self.spark.read.format("delta").load(self.path(table))

    def rows(self, table: str) -> dict[Any, dict[str, Any]]:
        return {r.id: r.asDict(recursive=True) for r in self.table(table).collect()}


def _items_phase1(items: SourceTable) -> list[Record]:
    i1 = {"id": "1", "name": "a", "qty": "1", "note": "n1", "codes": "{1,2}"}
    i3 = {"id": "3", "name": "c", "qty": "3"}
    i4 = {"id": "4", "name": "d", "qty": "4", "note": "long note", "codes": "{7,8}"}
    return [
        items.event("c", 100, 110, after=i1),
        items.event("c", 100, 120, after={"id": "2", "name": "b", "qty": "2"}),
        items.event("u", 200, 210, after={**i1, "name": "a2", "qty": "2"}),
        items.event("c", 100, 110, after=i1),  # duplicate, re-sent
        items.event("c", 300, 310, after=i3),
        items.event("d", 400, 410, before=i3), items.tombstone(i3),
        items.event("c", 400, 411, after={"id": "30", "name": "c", "qty": "3"}),  # key change
        items.event("d", 400, 420, before={"id": "2", "name": "b", "qty": "2"}),
        items.event("c", 500, 510, after=i4),
        items.event("u", 600, 610, after={**i4, "qty": "5", "note": TOAST, "codes": TOAST}),
        items.event("r", 700, 700, after={"id": "5", "name": "e", "qty": "5"}),
    ]


def _items_phase2(items: SourceTable) -> list[Record]:
    i1u = {"id": "1", "name": "a2", "qty": "2", "note": "n1", "codes": "{1,2}"}
    i4 = {"id": "4", "name": "d", "qty": "4", "note": "long note", "codes": "{7,8}"}
    return [
        items.event("r", 150, 150, after={**i1u, "name": "a-old"}),  # snapshot read older than the update
        items.event("r", 800, 800, after={**i4, "name": "d-new", "qty": "9", "note": "n2", "codes": "{9}"}),
        items.event("c", 300, 300, after={"id": "2", "name": "b-late", "qty": "2"}),  # older than the delete
        *_items_phase1(items),  # the whole first batch again
        items.event("d", 850, 850, before={"id": "5", "name": "e", "qty": "5"}),
        items.event("u", 900, 910, after={"id": "30", "name": "c30", "qty": "31"}),
        items.event("u", 950, 960, after={**i1u, "qty": "3", "note": TOAST, "codes": TOAST}),
    ]


def _bad(items: SourceTable, fmt: str) -> list[Record]:
    """A truncated record; in Avro also one naming a schema id the registry does not know."""
    key, value = items.event("c", 800, 801, after={"id": "7", "name": "x", "qty": "7"})
    assert value is not None
    truncated = (key, value[: len(value) // 2])
    if fmt == "json":
        return [truncated, (key, b"not json at all")]
    return [truncated, (key, value[:1] + UNKNOWN_ID.to_bytes(4, "big") + value[5:])]


@pytest.fixture(scope="module")
def scenario(spark: Any, stack: StackSettings, schema_registry: str,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    unique = uuid.uuid4().hex[:10]
    prefix, root = f"a{unique}", tmp_path_factory.mktemp("avro")
    cfg = ApplyJobConfig(
        bootstrap_servers=stack.bootstrap_servers, subscribe_pattern=re.escape(prefix) + r"\..*", topic_prefix=prefix,
        target_root=str(root / "delta"), checkpoint_location=str(root / "checkpoint"), available_now=True,
        schema_registry_url=schema_registry,
    )
    ids = RegistrySubjects(SchemaRegistryClient(schema_registry), SchemaRegistryClient(schema_registry))
    type_cols = [ID, *(col(name, t, mod) for name, t, mod, *_ in TYPES)]
    type_modes = {name: MODES[mode] for name, _, _, mode, _, _ in TYPES}
    item_cols = [ID, col("name", "text"), col("qty", "int8"), col("note", "text"), col("codes", "_int4")]
    evol_v1 = [ID, col("name", "text"), col("qty", "int4"), col("small", "int2")]
    evol_v2 = [ID, col("name", "text"), col("qty", "int8"), col("small", "int2"), col("extra", "text")]
    sample = {name: text for name, _, _, _, text, _ in TYPES}
    infinity = {"id": "4", **{name: text for name, (text, _) in INFINITY.items()}}
    topics: dict[str, str] = {}
    phase2: list[tuple[str, list[Record]]] = []
    for fmt in FORMATS:
        avro = ids if fmt == "avro" else None
        items = SourceTable(prefix, f"items_{fmt}", item_cols, avro=avro)
        types = SourceTable(prefix, f"types_{fmt}", type_cols, modes=type_modes, avro=avro)
        evol = SourceTable(prefix, f"evol_{fmt}", evol_v1, avro=avro)
        evol2 = SourceTable(prefix, f"evol_{fmt}", evol_v2, avro=avro)
        trunc = SourceTable(prefix, f"trunc_{fmt}", [ID, col("v", "text")], avro=avro)
        for table in (items, types, evol, trunc):
            create_topic(stack.bootstrap_servers, table.topic)
            topics[table.table.table_id.table] = table.topic
        produce(stack.bootstrap_servers, items.topic, _items_phase1(items) + _bad(items, fmt))
        produce(stack.bootstrap_servers, types.topic, [
            types.event("c", 100, 110, after={"id": "1", **sample}), types.event("c", 100, 120, after={"id": "2"}),
            types.event("c", 100, 130, after=infinity),
        ])
        produce(stack.bootstrap_servers, evol.topic, [
            evol.event("c", 100, 110, after={"id": "1", "name": "a", "qty": "1", "small": "-7"})])
        produce(stack.bootstrap_servers, trunc.topic, [
            trunc.event("c", 100, 110, after={"id": "1", "v": "x"}),
            trunc.event("c", 100, 120, after={"id": "2", "v": "y"}),
            trunc.event("t", 200, 210), trunc.event("c", 300, 310, after={"id": "3", "v": "z"}),
            trunc.event("c", 150, 150, after={"id": "9", "v": "late"}),  # older than the truncate: dropped
        ])
        phase2 += [(trunc.topic, [trunc.event("c", 180, 180, after={"id": "8", "v": "late"}),
                                  trunc.event("c", 400, 410, after={"id": "4", "v": "w"})])]
        phase2 += [(items.topic, _items_phase2(items)), (evol.topic, [
            evol2.event("u", 200, 210, after={"id": "1", "name": "a2", "qty": "5000000000", "small": "32767",
                                              "extra": "x"}),
            evol2.event("c", 200, 220, after={"id": "2", "name": "b", "qty": "2", "extra": "y"}),
        ])]
    run(spark, cfg)
    for topic, records in phase2:
        produce(stack.bootstrap_servers, topic, records)
    run(spark, cfg)
    dead = spark.read.format("delta").load(cfg.effective_dead_letter_path).collect()

    items_path = str(root / "delta" / "public" / "items_avro")
    version = _version(spark, items_path)
    last_batch = max(int(p.name) for p in (root / "checkpoint" / "commits").iterdir() if p.name.isdigit())
    batch = (spark.read.format("kafka").option("kafka.bootstrap.servers", stack.bootstrap_servers)
             .option("subscribe", topics["items_avro"]).option("startingOffsets", "earliest").load())
    BatchApplier(cfg)(batch, last_batch)  # every write of a batch already applied is skipped
    yield Scenario(spark, cfg, root, topics, dead, version, _version(spark, items_path))


def _version(spark: Any, path: str) -> int:
    return int(spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").first().version)


# -- tests ------------------------------------------------------------------------------------
@pytest.mark.parametrize("table", ["items", "types", "evol", "trunc"])
def test_avro_tables_equal_their_json_twins(scenario: Scenario, table: str) -> None:
    json_table, avro_table = scenario.table(f"{table}_json"), scenario.table(f"{table}_avro")
    assert avro_table.schema == json_table.schema
    assert scenario.rows(f"{table}_avro") == scenario.rows(f"{table}_json")


def test_avro_items_converge_like_json(scenario: Scenario) -> None:
    rows = scenario.rows("items_avro")
    assert {i: (r["name"], r["qty"], r["note"], r["codes"]) for i, r in rows.items()} == ITEMS_FINAL


def test_avro_truncates_remove_older_rows(scenario: Scenario) -> None:
    assert {i: r["v"] for i, r in scenario.rows("trunc_avro").items()} == {3: "z", 4: "w"}


def test_every_type_round_trips_through_avro(scenario: Scenario) -> None:
    df = scenario.table("types_avro")
    types = {f.name: f.dataType.simpleString() for f in df.schema}
    select = [f"unix_micros({n}) AS {n}" if types[n] == "timestamp" else n for n, *_ in TYPES]
    rows = {r.id: r for r in df.selectExpr("id", *select).collect()}
    assert sorted(rows) == [1, 2, 4]

    def expected(value: Any) -> Any:
        if isinstance(value, dt.datetime) and value.tzinfo is not None:
            return (value - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)
        return value

    for name, _, _, mode, text, value in TYPES:
        assert rows[1][name] == expected(value), (name, mode, text)
        assert rows[2][name] is None, name
        if name in INFINITY:
            assert rows[4][name] == expected(INFINITY[name][1]), name


def test_a_new_schema_id_widens_and_adds_columns(scenario: Scenario) -> None:
    fields = {f.name: f.dataType.simpleString() for f in scenario.table("evol_avro").schema}
    assert (fields["qty"], fields["small"], fields["extra"]) == ("bigint", "smallint", "string")
    rows = scenario.rows("evol_avro")
    assert {i: (r["name"], r["qty"], r["small"], r["extra"]) for i, r in rows.items()} == {
        1: ("a2", 5000000000, 32767, "x"), 2: ("b", 2, None, "y")}


def test_unknown_schema_ids_and_undecodable_records_are_dead_letters(scenario: Scenario) -> None:
    reasons = {(r.topic, r.offset): r.reason for r in scenario.dead_letters}
    avro, json_topic = scenario.topics["items_avro"], scenario.topics["items_json"]
    assert set(reasons) == {(t, o) for t in (avro, json_topic) for o in (12, 13)}
    assert re.fullmatch(r"undecodable Avro record \(writer schema id \d+\)", reasons[avro, 12])
    assert reasons[avro, 13].startswith(f"cannot read the record schema: schema id {UNKNOWN_ID}: the registry "
                                        "answered HTTP 404")
    assert reasons[json_topic, 12] == reasons[json_topic, 13] == "no op (not a Debezium change event)"


def test_replayed_avro_batches_are_no_ops(scenario: Scenario) -> None:
    assert scenario.replay_version == scenario.items_version
