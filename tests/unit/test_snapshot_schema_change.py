"""A table altered while its incremental snapshot runs: no READ carries the columns it had before.

The engine prepares a table once (its columns, its rows plan); every chunk query then names those
columns. A chunk read checks, in its own transaction and with the table locked against ALTER TABLE,
that the table's schema version is still the prepared one (``ChunkTable.schema_version``); when it
is not, it reads nothing (``ChunkSchemaChanged``), the window goes by empty and the engine reads the
same chunk again with the table described anew. These tests drive the engine over a fake chunk
reader whose table gains a column after its first chunk (the loop of ``test_snapshot_window_hop``),
and check the PostgreSQL reader's pure part: the statement that locks and reads the version, and the
check of its answer.
"""

from __future__ import annotations

from typing import Any

import pytest

from signaller.model import TableId
from signaller.snapshot.state import Key
from signaller.sources.base import ChunkSchemaChanged, ChunkTable
from signaller.sources.postgres.catalog import PostgresTableInfo
from signaller.sources.postgres.chunks import checked_snapshot, snapshot_statement
from signaller.sources.postgres.pgoutput import Relation, RelationColumn
from signaller.sources.postgres.reader import Change
from tests.unit.test_snapshot_window_hop import INT4, TABLES, TEXT, Loop, TwoTables, _windows

pytestmark = pytest.mark.unit

A = TableId("public", "a")


class AlteredTable(TwoTables):
    """Table ``a`` (``b`` empty) gains ``extra text`` once ``alter_after`` chunk reads are done; a read whose
    chunk description has another schema version raises ``ChunkSchemaChanged``, as PostgreSQL's reader does."""

    def __init__(self, keys: list[int], alter_after: int) -> None:
        super().__init__({A: keys, TableId("public", "b"): []})
        self.alter_after = alter_after
        self.reads_done = 0

    @property
    def altered(self) -> bool:
        return self.reads_done >= self.alter_after

    def describe_table(self, table: TableId) -> PostgresTableInfo | None:
        if table != A or not self.altered:
            info = super().describe_table(table)
            return None if info is None else PostgresTableInfo(
                table_id=info.table_id, oid=info.oid, relation=info.relation, sql_types=info.sql_types,
                not_null=info.not_null, primary_key=info.primary_key, unique_columns=info.unique_columns,
                estimated_rows=None, schema_version="v1")
        columns = (RelationColumn(1, "id", INT4, -1), RelationColumn(0, "val", TEXT, -1),
                   RelationColumn(0, "extra", TEXT, -1))
        return PostgresTableInfo(table_id=table, oid=TABLES[table], relation=Relation(TABLES[table], "public", "a",
                                 "d", columns), sql_types={"id": "integer", "val": "text", "extra": "text"},
                                 not_null=frozenset({"id"}), primary_key=("id",), unique_columns=frozenset({"id"}),
                                 estimated_rows=None, schema_version="v2")

    def read_chunk_seen(self, chunk: ChunkTable, lower: Key | None, upper: Key | None,
                        limit: int) -> tuple[list[tuple[str | None, ...]], None]:
        version = "v2" if chunk.name == "a" and self.altered else "v1"
        if chunk.schema_version != version:
            self.work.append(("read", chunk.name, "schema changed"))
            raise ChunkSchemaChanged(f"schema version {chunk.schema_version} -> {version}")
        rows = self.read_chunk(chunk, lower, upper, limit)
        if chunk.name == "a":
            self.reads_done += 1
        if chunk.name == "a" and version == "v2":
            assert chunk.columns == ("id", "val", "extra"), chunk.columns
            rows = [(k, val, f"x{k}", key) for k, val, key in rows]
        return rows, None


class RowsLoop(Loop):
    """The loop, keeping every READ's row values."""

    def __init__(self, source: TwoTables) -> None:
        self.rows: list[dict[str, Any]] = []
        super().__init__(source)

    def _emit(self, change: Change) -> None:
        super()._emit(change)
        assert change.event.after is not None
        self.rows.append(dict(change.event.after))


def test_a_chunk_read_after_an_alter_is_read_again_with_the_new_columns() -> None:
    source = AlteredTable([1, 2, 3, 4, 5], alter_after=1)
    loop = RowsLoop(source)
    loop.start()
    loop.run()
    windows = _windows(source.work)
    assert windows[:3] == [
        [("open", "public.a"), ("read", ("a", [1, 2])), ("close", "public.a")],
        # the table gained a column: nothing read, the window goes by empty
        [("open", "public.a"), ("read", ("a", "schema changed")), ("close", "public.a")],
        # the same chunk again, with the table described anew
        [("open", "public.a"), ("read", ("a", [3, 4])), ("close", "public.a")],
    ]
    assert loop.rows == [{"id": 1, "val": "a1"}, {"id": 2, "val": "a2"},
                         *({"id": k, "val": f"a{k}", "extra": f"x{k}"} for k in (3, 4, 5))]
    scans = [(n.additional_data["scanned_collection"], n.additional_data["status"],
              n.additional_data["total_rows_scanned"]) for n in loop.notes if n.type == "TABLE_SCAN_COMPLETED"]
    assert scans[0] == ("public.a", "SUCCEEDED", "5")
    assert not loop.engine.state.running


def test_an_alter_before_the_first_chunk_is_caught_too() -> None:
    """The table is described (``v1``) when its snapshot starts; altered before the first chunk is read, that
    chunk is read again: no READ of the table lacks the new column."""
    source = AlteredTable([1, 2, 3], alter_after=0)
    loop = RowsLoop(source)
    loop.start()
    loop.run()
    assert loop.rows == [{"id": k, "val": f"a{k}", "extra": f"x{k}"} for k in (1, 2, 3)]


def _chunk(version: str | None) -> ChunkTable:
    return ChunkTable("public", "we%ird\"t", ("id", "val"), (("id", "integer"),), None, version)


def test_a_chunk_read_locks_the_table_before_its_snapshot_and_reads_the_version_with_it() -> None:
    statement = snapshot_statement(_chunk("v1"))
    lock, select = statement.split("; ", 1)
    assert lock == 'LOCK TABLE "public"."we%ird""t" IN ACCESS SHARE MODE'
    assert select.startswith("SELECT pg_current_snapshot()::text, (SELECT md5(string_agg(")
    assert "v.attrelid = '\"public\".\"we%ird\"\"t\"'::regclass" in select
    assert snapshot_statement(_chunk(None)) == "SELECT pg_current_snapshot()::text, NULL"  # nothing to check


def test_the_version_check_passes_the_same_version_and_rejects_another() -> None:
    snapshot = checked_snapshot(_chunk("v1"), ("10:12:11", "v1"))
    assert (snapshot.xmin, snapshot.xmax, snapshot.xip) == (10, 12, frozenset({11}))
    assert checked_snapshot(_chunk(None), ("10:10:", None)).xmax == 10
    with pytest.raises(ChunkSchemaChanged, match="changed since they were described"):
        checked_snapshot(_chunk("v1"), ("10:10:", "v2"))
