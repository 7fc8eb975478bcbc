"""A batch like the last one is decoded in one pass (``spark_jobs.steady``); anything else in it sends
it down the general road. Both roads must leave the same tables, dead letters included: one
long-lived ``BatchApplier`` (which takes the steady road from its second batch on) is compared with
a fresh applier per batch (a new applier knows no schema, so it always takes the general road).
Which road a batch took is visible in its phases: only the general road has ``read``. The same for
Avro records (the stack's schema registry)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from signaller.model import Column
from signaller.sinks.registry import Compatibility, SchemaRegistryClient
from signaller.sinks.subjects import RegistrySubjects
from spark_jobs.apply_changes import BatchApplier
from spark_jobs.job_config import ApplyJobConfig
from tests.spark.cdc_events import TOAST, Record, SourceTable

pytestmark = pytest.mark.spark

COLUMNS = [
    Column("id", 0, "int8", optional=False, is_key=True),
    Column("note", 0, "text", optional=False),
    Column("price", 0, "numeric", (10 << 16 | 2) + 4),
    Column("seen", 0, "timestamptz"),
    Column("tags", 0, "_int4", element_type_name="int4"),
]


def batch(spark: Any, records: list[tuple[str, Record]], first_offset: int) -> Any:
    rows = [(topic, 0, first_offset + i, key, value) for i, (topic, (key, value)) in enumerate(records)]
    return spark.createDataFrame(rows, "topic STRING, partition INT, offset BIGINT, key BINARY, value BINARY")


def row(i: int, note: Any = None, price: str = "1.50") -> dict[str, Any]:
    return {"id": str(i), "note": f"n{i}" if note is None else note, "price": price,
            "seen": f"2024-03-0{1 + i % 8} 10:00:00+00", "tags": "{1,2}" if i % 2 else "{}"}


def mixed_changes(items: SourceTable) -> list[Record]:
    """Changes to the 20 rows ``row(1..20)``: an update, one of unchanged TOAST, a delete and its
    tombstone, snapshot reads (a new key, an older one), a create updated in the same batch."""
    return [
        items.event("u", 200, 2001, before=row(1), after=row(1, note="changed", price="2.25")),
        items.event("u", 200, 2002, after={**row(2, price="3.00"), "note": TOAST}),  # note unchanged
        items.event("d", 200, 2003, before=row(3)), items.tombstone(row(3)),
        items.event("r", 150, 1500, after=row(40)),  # a snapshot read of a new key
        items.event("r", 50, 500, after=row(4, note="older read")),  # older than the stored row: kept out
        items.event("c", 200, 2004, after=row(50)),
        items.event("u", 200, 2005, after=row(50, note="twice")),  # newest per key wins
    ]


class Roads:
    """The same batches through a long-lived applier (``steady``) and fresh ones (``general``)."""

    def __init__(self, tmp_path: Path, topics: list[str], registry: str | None = None) -> None:
        self.tmp = tmp_path
        self.registry = registry
        self.steady = BatchApplier(self.cfg("steady", topics))
        self.roads: list[str] = []
        self.topics = topics

    def cfg(self, name: str, topics: list[str]) -> ApplyJobConfig:
        return ApplyJobConfig(bootstrap_servers="unused:9092", target_root=str(self.tmp / name / "delta"),
                              checkpoint_location=str(self.tmp / name / "cp"), subscribe=",".join(topics),
                              dead_letter_path=str(self.tmp / name / "dead"), schema_registry_url=self.registry)

    def apply(self, spark: Any, records: list[tuple[str, Record]], batch_id: int) -> None:
        data = batch(spark, records, batch_id * 1000)
        self.steady(data, batch_id)
        assert self.steady.last_clock is not None
        self.roads.append("general" if "read" in self.steady.last_clock.breakdown() else "steady")
        BatchApplier(self.cfg("general", self.topics))(data, batch_id)

    def table(self, spark: Any, road: str, name: str) -> list[tuple[Any, ...]]:
        path = str(self.tmp / road / "delta" / "public" / name)
        return sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())

    def rows(self, spark: Any, name: str) -> dict[int, dict[str, Any]]:
        path = str(self.tmp / "steady" / "delta" / "public" / name)
        return {r.id: r.asDict() for r in spark.read.format("delta").load(path).collect()}

    def dead(self, spark: Any, road: str) -> list[tuple[Any, ...]]:
        path = self.tmp / road / "dead"
        if not path.exists():
            return []
        return sorted((r.topic, r.offset, r.reason) for r in spark.read.format("delta").load(str(path)).collect())


def test_steady_batches_leave_what_the_general_road_leaves(spark: Any, tmp_path: Path) -> None:
    items = SourceTable("steady", "items", COLUMNS)
    t = items.topic
    roads = Roads(tmp_path, [t])
    roads.apply(spark, [(t, items.event("c", 100, 1000 + i, after=row(i))) for i in range(1, 21)], 0)
    roads.apply(spark, [(t, r) for r in mixed_changes(items)], 1)
    late = [(t, items.event("u", 199, 1999, after=row(3, note="late")))]  # older than the delete
    roads.apply(spark, late, 2)
    assert roads.roads == ["general", "steady", "steady"]
    steady, general = roads.table(spark, "steady", "items"), roads.table(spark, "general", "items")
    assert steady == general
    notes = {i: r["note"] for i, r in roads.rows(spark, "items").items()}
    assert notes == {**{i: f"n{i}" for i in range(1, 21) if i != 3}, 1: "changed", 40: "n40", 50: "twice"}
    assert str(roads.rows(spark, "items")[2]["price"]) == "3.00"


def test_a_batch_unlike_the_last_one_takes_the_general_road(spark: Any, tmp_path: Path) -> None:
    items = SourceTable("unlike", "items", COLUMNS)
    other = SourceTable("unlike", "others", COLUMNS)
    wider = SourceTable("unlike", "items", [*COLUMNS, Column("extra", 0, "text")])
    # the value schema of ``wider``, the key moved from id to note
    rekeyed = SourceTable("unlike", "items", [Column("id", 0, "int8", optional=False),
                                              Column("note", 0, "text", optional=False, is_key=True),
                                              *COLUMNS[2:], Column("extra", 0, "text")])
    t, o = items.topic, other.topic
    roads = Roads(tmp_path, [t, o])
    roads.apply(spark, [(t, items.event("c", 100, 1000 + i, after=row(i))) for i in range(1, 6)], 0)
    # the steady pass sees a record that is not JSON: thrown away, the general road dead-letters it
    roads.apply(spark, [(t, items.event("u", 200, 2001, after=row(1, note="a"))), (t, (b'{"id":9}', b"not json"))],
                1)
    roads.apply(spark, [(t, items.event("u", 200, 2002, after=row(2, note="b")))], 2)
    # a new column in some records
    roads.apply(spark, [(t, items.event("u", 200, 2003, after=row(3, note="c"))),
                        (t, wider.event("u", 200, 2004, after={**row(4, note="d"), "extra": "x"}))], 3)
    roads.apply(spark, [(t, wider.event("c", 200, 2005, after={**row(6), "extra": "y"}))], 4)  # two schemas before
    roads.apply(spark, [(t, wider.event("c", 200, 2006, after={**row(7), "extra": "z"}))], 5)  # steady, wider
    # another topic appears
    roads.apply(spark, [(t, wider.event("c", 200, 2007, after={**row(8), "extra": "w"})),
                        (o, other.event("c", 200, 2008, after=row(1)))], 6)
    roads.apply(spark, [(o, other.event("c", 200, 2009, after=row(2)))], 7)  # two topics before
    roads.apply(spark, [(o, other.event("c", 200, 2010, after=row(3)))], 8)  # steady, on the other topic
    # the same value schema with other key columns: the general road dead-letters the table's batch
    roads.apply(spark, [(t, wider.event("c", 200, 2011, after={**row(9), "extra": "v"}))], 9)
    roads.apply(spark, [(t, wider.event("c", 200, 2012, after={**row(10), "extra": "u"}))], 10)
    roads.apply(spark, [(t, rekeyed.event("c", 200, 2013, after={**row(11), "extra": "t"}))], 11)
    # A batch after one with a single schema tries the one pass (1, 3, 6, 9 and 11 did, and were sent
    # down the general road); a batch after one with several schemas or topics does not try (2, 4, 7).
    assert roads.roads == ["general", "general", "general", "general", "general", "steady", "general", "general",
                           "steady", "general", "steady", "general"]
    for name in ("items", "others"):
        assert roads.table(spark, "steady", name) == roads.table(spark, "general", name)
    dead = roads.dead(spark, "steady")
    assert dead == roads.dead(spark, "general")
    assert [(offset, reason.split(":")[0]) for _, offset, reason in dead] == [
        (1001, "no op (not a Debezium change event)"), (11000, "incompatible schema change")]
    extra = {i: r["extra"] for i, r in roads.rows(spark, "items").items()}
    assert extra == {1: None, 2: None, 3: None, 4: "x", 5: None, 6: "y", 7: "z", 8: "w", 9: "v", 10: "u"}
    assert {i: r["note"] for i, r in roads.rows(spark, "others").items()} == {1: "n1", 2: "n2", 3: "n3"}


def test_avro_batches_take_the_one_pass_too(spark: Any, tmp_path: Path, schema_registry: str) -> None:
    registry = SchemaRegistryClient(schema_registry)
    ids = RegistrySubjects(registry, registry)
    prefix = f"avro{uuid.uuid4().hex[:10]}"
    items = SourceTable(prefix, "items", COLUMNS, avro=ids)
    wider = SourceTable(prefix, "items", [*COLUMNS, Column("extra", 0, "text")], avro=ids)
    # the value schema of ``wider`` (the same schema id), note added to the key (another key schema id,
    # which the registry takes as FORWARD compatible)
    registry.set_compatibility(Compatibility.FORWARD, f"{items.topic}-key")
    rekeyed = SourceTable(prefix, "items", [COLUMNS[0], Column("note", 0, "text", optional=False, is_key=True),
                                            *COLUMNS[2:], Column("extra", 0, "text")], avro=ids)
    t = items.topic
    roads = Roads(tmp_path, [t], schema_registry)
    roads.apply(spark, [(t, items.event("c", 100, 1000 + i, after=row(i))) for i in range(1, 21)], 0)
    roads.apply(spark, [(t, r) for r in mixed_changes(items)], 1)
    roads.apply(spark, [(t, items.event("u", 199, 1999, after=row(3, note="late")))], 2)  # older than the delete
    key, value = items.event("u", 200, 2006, after=row(5, note="e"))
    assert value is not None
    unknown = (key, value[:1] + (0x7FFFFFF1).to_bytes(4, "big") + value[5:])  # a schema id the registry lacks
    roads.apply(spark, [(t, items.event("u", 200, 2007, after=row(6, note="f"))), (t, unknown)], 3)
    roads.apply(spark, [(t, items.event("u", 200, 2008, after=row(7, note="g")))], 4)
    roads.apply(spark, [(t, items.event("u", 200, 2009, after=row(8, note="h")))], 5)  # steady
    roads.apply(spark, [(t, wider.event("c", 200, 2010, after={**row(60), "extra": "x"}))], 6)  # a new schema id
    roads.apply(spark, [(t, wider.event("c", 200, 2011, after={**row(61), "extra": "y"}))], 7)  # steady, wider
    roads.apply(spark, [(t, rekeyed.event("c", 200, 2012, after={**row(62), "extra": "z"}))], 8)  # other key columns
    assert roads.roads == ["general", "steady", "steady", "general", "general", "steady", "general", "steady",
                           "general"]
    assert roads.table(spark, "steady", "items") == roads.table(spark, "general", "items")
    dead = roads.dead(spark, "steady")
    assert dead == roads.dead(spark, "general")
    assert [(offset, reason.split(" (")[0].split(":")[0]) for _, offset, reason in dead] == [
        (3001, "cannot read the record schema"), (8000, "incompatible schema change")]
    stored = roads.rows(spark, "items")
    assert {i: r["note"] for i, r in stored.items()} == {
        **{i: f"n{i}" for i in range(1, 21) if i != 3}, 1: "changed", 6: "f", 7: "g", 8: "h", 40: "n40", 50: "twice",
        60: "n60", 61: "n61"}
    assert str(stored[2]["price"]) == "3.00"
    assert {i: r["extra"] for i, r in stored.items() if r["extra"]} == {60: "x", 61: "y"}
