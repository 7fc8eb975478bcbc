"""A window's READ superseded by changes that lack a TOASTed value is folded, not dropped (``toast_fold``).

Under ``REPLICA IDENTITY DEFAULT`` an UPDATE leaving a TOASTed column unchanged carries Debezium's
placeholder for it; the DBLog rule (as Debezium) drops the chunk row it supersedes, and for a row that
predates the capture the value is then lost. The pure fold first (examples, then a property over random
histories of one row), then the engine wiring: watermark and read-only windows, over a fake chunk reader.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from signaller.config import config_from_mapping
from signaller.model import ChangeEvent, Op, TableId
from signaller.signals.filters import compile_filter
from signaller.signals.model import ExecuteSnapshot, Signal, WindowMarker
from signaller.snapshot import notifications as notes
from signaller.snapshot.engine import IncrementalSnapshotter
from signaller.snapshot.reading import InlineReads
from signaller.snapshot.state import Key
from signaller.snapshot.toast_fold import WindowChanges
from signaller.sources.base import ChunkTable
from signaller.sources.postgres.catalog import PostgresTableInfo
from signaller.sources.postgres.chunks import VisibleSnapshot
from signaller.sources.postgres.pgoutput import Relation, RelationColumn
from signaller.sources.postgres.reader import Change
from signaller.sources.postgres.relations import RelationCache
from signaller.sources.postgres.schemas import PostgresSchemaProvider

pytestmark = pytest.mark.unit

U = "__debezium_unavailable_value"
T = TableId("public", "t")
PLACEHOLDERS = {"big": U}


def _change(op: Op, before: dict[str, Any] | None, after: dict[str, Any] | None, lsn: int,
            tx_id: int | None = None) -> ChangeEvent:
    return ChangeEvent(op, T, before, after, lsn, lsn, lsn - 1, tx_id if tx_id is not None else lsn, 0)


def _fold(changes: list[ChangeEvent], chunk_row: dict[str, Any], identity: int = 1,
          order: Callable[[list[ChangeEvent]], list[ChangeEvent]] = list) -> dict[str, Any] | None:
    window = WindowChanges(PLACEHOLDERS)
    for event in order(changes):
        ids = [None if image is None else (image["id"],) for image in (event.before, event.after)]
        window.record(event, ids[0], ids[1])
    return window.fold((identity,), chunk_row)


CHUNK = {"id": 1, "n": 0, "big": "B0"}


def test_an_update_without_the_toasted_value_folds_it_from_the_chunk_row() -> None:
    assert _fold([_change(Op.UPDATE, None, {"id": 1, "n": 1, "big": U}, 10)], CHUNK) == {"id": 1, "n": 1, "big": "B0"}


def test_the_most_recent_real_value_of_the_window_wins_over_the_chunk_row() -> None:
    changes = [_change(Op.UPDATE, None, {"id": 1, "n": 1, "big": "B1"}, 10),
               _change(Op.UPDATE, None, {"id": 1, "n": 2, "big": U}, 20),
               _change(Op.UPDATE, None, {"id": 1, "n": 3, "big": U}, 30)]
    assert _fold(changes, CHUNK) == {"id": 1, "n": 3, "big": "B1"}
    # recorded out of log order, twice (live and again once the read's visibility came back): the same fold
    assert _fold(changes, CHUNK, order=lambda c: [c[2], c[0], c[1], c[2], c[0]]) == {"id": 1, "n": 3, "big": "B1"}


def test_without_a_placeholder_the_row_is_dropped_as_debezium_does() -> None:
    assert _fold([_change(Op.UPDATE, None, {"id": 1, "n": 1, "big": "B1"}, 10)], CHUNK) is None
    assert WindowChanges({}).fold((1,), CHUNK) is None


def test_a_delete_or_a_key_change_away_last_drops_the_row() -> None:
    update = _change(Op.UPDATE, None, {"id": 1, "n": 1, "big": U}, 10)
    assert _fold([update, _change(Op.DELETE, {"id": 1}, None, 20)], CHUNK) is None
    assert _fold([update, _change(Op.UPDATE, {"id": 1}, {"id": 9, "n": 1, "big": U}, 20)], CHUNK) is None


def test_a_key_change_into_the_key_folds_from_the_chunk_row_read_after_it() -> None:
    # The chunk holds key 1, so it was read after key 5 moved there (no removal of 1 in the window before).
    moved = _change(Op.UPDATE, {"id": 5}, {"id": 1, "n": 7, "big": U}, 10)
    assert _fold([moved], {"id": 1, "n": 7, "big": "B5"}) == {"id": 1, "n": 7, "big": "B5"}


def test_a_row_removed_and_recreated_with_a_placeholder_is_dropped_not_guessed() -> None:
    # The chunk row may be the removed row's (read before the delete): its value is not the new row's.
    changes = [_change(Op.DELETE, {"id": 1}, None, 10), _change(Op.UPDATE, {"id": 5}, {"id": 1, "n": 7, "big": U}, 20)]
    assert _fold(changes, CHUNK) is None
    # ... unless a change after the re-creation carried the value.
    changes += [_change(Op.UPDATE, None, {"id": 1, "n": 8, "big": "B8"}, 30),
                _change(Op.UPDATE, None, {"id": 1, "n": 9, "big": U}, 40)]
    assert _fold(changes, CHUNK) == {"id": 1, "n": 9, "big": "B8"}


def test_the_folded_row_has_the_chunk_rows_columns_in_its_order() -> None:
    chunk = {"id": 1, "added": "d", "n": 0, "big": "B0"}  # a column added after the change was logged
    update = _change(Op.UPDATE, None, {"big": U, "n": 1, "id": 1, "dropped": 3}, 10)
    folded = _fold([update], chunk)
    assert folded is not None and list(folded.items()) == [("id", 1), ("added", "d"), ("n", 1), ("big", "B0")]


# A property over random histories of one row that predates the capture: each window change is an update of
# n (the TOASTed column unchanged: the placeholder), an update of the TOASTed column, a delete, or (after a
# delete) an insert; the chunk is read at a random point where the row exists. Whenever ``fold`` emits a READ
# it is the row's final state; it always does when the row was never removed and a change lacked the value.
STEPS = st.lists(st.sampled_from(["n", "big", "delete"]), min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(steps=STEPS, read_at=st.integers(0, 8))
def test_a_folded_read_is_always_the_rows_final_state(steps: list[str], read_at: int) -> None:
    row: dict[str, Any] | None = {"id": 1, "n": 0, "big": "B0"}
    states: list[dict[str, Any] | None] = [dict(row)]
    changes = []
    for lsn, step in enumerate(steps, start=1):
        if row is None:  # re-created: an insert carries every value
            row = {"id": 1, "n": lsn, "big": f"I{lsn}"}
            changes.append(_change(Op.CREATE, None, dict(row), 10 * lsn))
        elif step == "delete":
            row = None
            changes.append(_change(Op.DELETE, {"id": 1}, None, 10 * lsn))
        elif step == "n":
            row["n"] = lsn
            changes.append(_change(Op.UPDATE, None, {**row, "big": U}, 10 * lsn))
        else:
            row["big"] = f"B{lsn}"
            changes.append(_change(Op.UPDATE, None, dict(row), 10 * lsn))
        states.append(None if row is None else dict(row))
    present = [state for state in states if state is not None]
    chunk_row = present[read_at % len(present)]
    folded = _fold(changes, chunk_row)
    if folded is not None:
        assert folded == row
    removed = any(c.op is Op.DELETE for c in changes)
    lacking = any(c.after is not None and c.after["big"] == U for c in changes)
    if row is not None and lacking and not removed:
        assert folded == row


# --- the engine: one table ``id integer primary key, n integer, big text``, chunk rows from a fake reader ---

INT4, TEXT = 23, 25
OID = 16400


class OneTable:
    """Catalog and chunk reader of ``T``: every chunk read returns ``rows`` (text values) in one window; in
    read-only mode the read's snapshot sees no transaction from 100 on and its high watermark is 1000."""

    def __init__(self, rows: list[tuple[str, str, str]]) -> None:
        self.rows = rows
        self.markers: list[WindowMarker] = []
        self.read = False

    def tables(self) -> list[TableId]:
        return [T]

    def describe_table(self, table: TableId) -> PostgresTableInfo | None:
        relation = Relation(OID, T.schema, T.table, "d", (RelationColumn(1, "id", INT4, -1),
                                                        RelationColumn(0, "n", INT4, -1),
                                                        RelationColumn(0, "big", TEXT, -1)))
        return PostgresTableInfo(table_id=T, oid=OID, relation=relation,
                                 sql_types={"id": "integer", "n": "integer", "big": "text"},
                                 not_null=frozenset({"id"}), primary_key=("id",), unique_columns=frozenset({"id"}),
                                 estimated_rows=None) if table == T else None

    def max_key(self, chunk: ChunkTable) -> Key | None:
        return (self.rows[-1][0],)

    def count_rows(self, chunk: ChunkTable, upper: Key) -> int:
        return len(self.rows)

    def _chunk(self, lower: Key | None) -> list[tuple[str | None, ...]]:
        if lower is not None:
            return []
        self.read = True
        return [(*row, row[0]) for row in self.rows]

    def read_chunk_seen(self, chunk: ChunkTable, lower: Key | None, upper: Key | None,
                        limit: int) -> tuple[list[tuple[str | None, ...]], None]:
        return self._chunk(lower), None

    def read_chunk_visible(self, chunk: ChunkTable, lower: Key | None, upper: Key | None,
                           limit: int) -> tuple[list[tuple[str | None, ...]], VisibleSnapshot, int]:
        return self._chunk(lower), VisibleSnapshot(100, 100, frozenset()), 1000

    def write_marker(self, chunk_id: str, is_open: bool, metadata: dict[str, Any]) -> None:
        self.markers.append(WindowMarker(f"{chunk_id}-{'open' if is_open else 'close'}", is_open, metadata))


def _snapshot(changes: list[ChangeEvent], *, read_only: bool) -> list[ChangeEvent]:
    """Snapshot ``T`` (rows 1, 2, 3 with TOASTed ``big``) while ``changes`` stream inside its first window; the
    READs emitted."""
    source = OneTable([("1", "0", "B1"), ("2", "0", "B2"), ("3", "0", "B3")])
    config = config_from_mapping({
        "database.hostname": "localhost", "database.user": "u", "database.dbname": "d", "topic.prefix": "tf",
        "kafka.bootstrap.servers": "localhost:9092", "table.include.list": "public.t",
        "read.only": str(read_only).lower(),
    }, env={})
    schemas = PostgresSchemaProvider(config, source, RelationCache())
    emitted: list[ChangeEvent] = []
    sent: list[notes.Notification] = []
    engine = IncrementalSnapshotter(config.snapshot, config.capture, config.topics.prefix, source, schemas,
                                    lambda change: emitted.append(change.event), sent.append, compile_filter,
                                    reads=InlineReads())
    assert engine.apply(Signal("s", "execute-snapshot", {}, "http"), ExecuteSnapshot("s", ("public\\.t",))).accepted
    engine.read_chunk()
    assert source.read
    plan = schemas.rows_for(schemas.describe(T)).plan  # type: ignore[arg-type]
    if not read_only:
        engine.on_marker(source.markers[0], (1, 1))
    for event in changes:
        engine.on_stream_change(Change.from_event(event, plan))
    if read_only:
        engine.on_position(1000, (999, 0))
    else:
        engine.on_marker(source.markers[1], (900, 900))
    while engine.emitting:
        engine.emit_pending(100)
    assert [n.additional_data["status"] for n in sent if n.type == "TABLE_SCAN_COMPLETED"] in ([], ["SUCCEEDED"])
    return emitted


@pytest.mark.parametrize("read_only", [False, True], ids=["watermarks", "read-only"])
def test_a_window_folds_the_toasted_value_into_the_read_it_would_drop(read_only: bool) -> None:
    changes = [_change(Op.UPDATE, None, {"id": 1, "n": 5, "big": U}, 500, tx_id=500),
               _change(Op.UPDATE, None, {"id": 3, "n": 7, "big": "B3new"}, 600, tx_id=600)]
    reads = _snapshot(changes, read_only=read_only)
    assert [(e.op, e.before, e.after, e.snapshot) for e in reads] == [
        (Op.READ, None, {"id": 1, "n": 5, "big": "B1"}, "incremental"),  # folded: the update's n, the chunk's big
        (Op.READ, None, {"id": 2, "n": 0, "big": "B2"}, "incremental"),
        # key 3's change carries every value: its READ is dropped, as Debezium's
    ]


@pytest.mark.parametrize("read_only", [False, True], ids=["watermarks", "read-only"])
def test_a_window_still_drops_the_read_of_a_row_deleted_after_the_update(read_only: bool) -> None:
    changes = [_change(Op.UPDATE, None, {"id": 1, "n": 5, "big": U}, 500, tx_id=500),
               _change(Op.DELETE, {"id": 1}, None, 510, tx_id=510)]
    assert [e.after for e in _snapshot(changes, read_only=read_only)] == [{"id": 2, "n": 0, "big": "B2"},
                                                                          {"id": 3, "n": 0, "big": "B3"}]
