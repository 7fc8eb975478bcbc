"""MariaDB's snapshot side against the stack's MariaDB: chunks, max keys, counts, filters, watermarks, the
read-only consistent snapshot, the schema provider and the signal writer.

Chunks must cover every row exactly once whatever the key (integers, composite, text under a
case-insensitive collation), in the order the server sorts the key: the text-key test uses values whose
Python order differs from ``utf8mb4_general_ci``'s, so paging by Python comparisons would fail it."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from devtools.settings import StackSettings
from signaller.config import load_config
from signaller.model import TableId
from signaller.signals.mariadb_filters import compile_mariadb_filter
from signaller.sources.base import ChunkQueryError, ChunkTable, Key, RawRow
from signaller.sources.mariadb.chunk_sql import chunk_query
from signaller.sources.mariadb.chunks import WATERMARK_KEYS_BEFORE_3_7, MariaDbChunkReader, transaction_number
from signaller.sources.mariadb.connection import Endpoint, connect
from signaller.sources.mariadb.schemas import MariaDbSchemaProvider, MariaDbTableInfo
from signaller.sources.mariadb.signal_writer import insert_signal

pytestmark = pytest.mark.integration
DB = "inventory"
REQUIRED = {"SIGNALLER_TOPIC_PREFIX": "m1", "SIGNALLER_DATABASE_HOSTNAME": "127.0.0.1",
            "SIGNALLER_DATABASE_USER": "u", "SIGNALLER_DATABASE_DBNAME": "d",
            "SIGNALLER_SLOT_NAME": "s"}


@pytest.fixture
def endpoint(stack: StackSettings) -> Endpoint:
    return Endpoint("127.0.0.1", stack.mariadb_port, stack.mariadb_user, stack.mariadb_password, stack.mariadb_db)


@pytest.fixture
def name(unique_name: str) -> str:
    """A table name of this test (starting with a letter: an all-digit name is a number to MariaDB)."""
    return f"m_{unique_name}"


@pytest.fixture
def sql(endpoint: Endpoint, name: str) -> Iterator[Any]:
    """A cursor on an autocommit connection; the test's tables (named after ``name``) are dropped afterwards."""
    conn = connect(endpoint, "testing")
    cursor = conn.cursor()
    yield cursor
    cursor.execute("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME LIKE %s",
                   (DB, name + "%"))
    for (table,) in cursor.fetchall():
        cursor.execute(f"DROP TABLE IF EXISTS `{table.replace('`', '``')}`")
    conn.close()


@pytest.fixture
def reader(endpoint: Endpoint, name: str) -> Iterator[MariaDbChunkReader]:
    chunks = MariaDbChunkReader(endpoint, TableId(DB, f"{name}_signal"), "insert_insert")
    yield chunks
    chunks.close()


def scan(reader: MariaDbChunkReader, table: ChunkTable, size: int) -> list[RawRow]:
    """Every row, chunk by chunk, as the engine pages: from no bound up to the maximum key."""
    upper = reader.max_key(table)
    rows: list[RawRow] = []
    lower: Key | None = None
    while upper is not None:
        chunk = reader.read_chunk(table, lower, upper, size)
        if not chunk:
            break
        rows.extend(chunk)
        lower = chunk[-1][len(table.columns):]
    return rows


def test_integer_keys_are_covered_once_with_max_key_and_count(reader: MariaDbChunkReader, sql: Any,
                                                              name: str) -> None:
    sql.execute(f"CREATE TABLE {name} (id bigint unsigned PRIMARY KEY, v int)")
    ids = [*range(1, 2001), 18446744073709551615, 9007199254740993]
    sql.executemany(f"INSERT INTO {name} VALUES (%s, %s)", [(i, i % 7) for i in ids])
    table = ChunkTable(DB, name, ("id", "v"), (("id", "bigint(20) unsigned"),))
    assert reader.max_key(table) == ("18446744073709551615",)
    rows = scan(reader, table, 333)
    assert [int(r[0]) for r in rows] == sorted(ids)
    assert reader.count_rows(table, ("2000",)) == 2000
    assert reader.count_rows(table, ("9007199254740992",)) == 2000, "bounds are compared exactly, not as doubles"


def test_composite_keys_are_covered_once_and_bounded_chunks_use_the_key_range(reader: MariaDbChunkReader, sql: Any,
                                                                               name: str) -> None:
    sql.execute(f"CREATE TABLE {name} (a int NOT NULL, b varchar(8) NOT NULL, v int, PRIMARY KEY (a, b))")
    keys = [(a, f"k{b}") for a in range(300) for b in range(10)]
    sql.executemany(f"INSERT INTO {name} VALUES (%s, %s, 0)", keys)
    sql.execute(f"ANALYZE TABLE {name}")
    table = ChunkTable(DB, name, ("v", "a"), (("a", "int(11)"), ("b", "varchar(8)")))
    rows = scan(reader, table, 97)
    assert [(int(r[2]), r[3]) for r in rows] == keys
    sql.execute("EXPLAIN FORMAT=JSON " + chunk_query(table, ("10", "k5"), ("250", "k3"), 100))
    plan = json.loads(sql.fetchall()[0][0])["query_block"]["nested_loop"][0]["table"]
    assert (plan["access_type"], plan["key"]) == ("range", "PRIMARY")
    sql.execute(f"EXPLAIN FORMAT=JSON SELECT * FROM {name} WHERE (a, b) > (10, 'k5') ORDER BY a, b LIMIT 100")
    row_value = json.loads(sql.fetchall()[0][0])["query_block"]["nested_loop"][0]["table"]
    assert row_value["access_type"] == "index", "why the expanded OR form: row values scan the whole index"


def test_text_keys_follow_the_server_collation_not_python(reader: MariaDbChunkReader, sql: Any,
                                                          name: str) -> None:
    sql.execute(f"CREATE TABLE {name} (k varchar(20) COLLATE utf8mb4_general_ci PRIMARY KEY, n int)")
    values = ["a", "B", "c", "D", "é", "Z", "_x", "aa", "ab", "AC", "x'y", "back\\slash", "pct%", "e"]
    values.remove("e")  # 'é' = 'e' under utf8mb4_general_ci: one of them only
    sql.executemany(f"INSERT INTO {name} VALUES (%s, %s)", [(v, i) for i, v in enumerate(values)])
    sql.execute(f"SELECT k FROM {name} ORDER BY k")
    server_order = [r[0] for r in sql.fetchall()]
    assert server_order != sorted(values), "the values must sort differently in Python for this test to mean much"
    table = ChunkTable(DB, name, ("k", "n"), (("k", "varchar(20)"),))
    assert reader.max_key(table) == ("_x",)
    assert max(values) == "é" and sorted(values, key=str.casefold)[-1] == "é", "Python would end elsewhere"
    for size in (1, 2, 5):
        assert [r[0] for r in scan(reader, table, size)] == server_order


def test_the_filter_bounds_chunks_max_key_and_count(reader: MariaDbChunkReader, sql: Any, name: str) -> None:
    sql.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, v int)")
    sql.executemany(f"INSERT INTO {name} VALUES (%s, %s)", [(i, i % 3) for i in range(1, 101)])
    table = ChunkTable(DB, name, ("id", "v"), (("id", "int(11)"),), "(`v` = 0 AND `id` < 90)")
    assert reader.max_key(table) == ("87",)
    assert [int(r[0]) for r in scan(reader, table, 7)] == list(range(3, 90, 3))
    assert reader.count_rows(table, ("87",)) == 29


def test_streaming_chunks_return_the_same_rows_in_slices(reader: MariaDbChunkReader, sql: Any,
                                                         name: str) -> None:
    sql.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, b varbinary(4))")
    sql.executemany(f"INSERT INTO {name} VALUES (%s, %s)", [(i, bytes([i % 256, 0])) for i in range(1, 1001)])
    table = ChunkTable(DB, name, ("id", "b"), (("id", "int(11)"),))
    first, rest, _ = reader.read_chunk_streaming(table, ("10",), ("900",), 500, 100)
    assert rest is not None
    rows = list(first)
    while slice_ := rest.fetch(150):
        rows.extend(slice_)
    assert rows == reader.read_chunk(table, ("10",), ("900",), 500)
    assert [int(r[0]) for r in rows] == list(range(11, 511))
    assert rows[0][1] == "0b00", "bytes come as their hex text"
    abandoned, rest, _ = reader.read_chunk_streaming(table, None, None, 1000, 10)
    assert len(abandoned) == 10 and rest is not None
    rest.close()
    assert len(reader.read_chunk_streaming(table, None, ("5",), 1000, 10)[0]) == 5, "the reader works after a close"


def test_a_failing_chunk_query_is_a_chunk_query_error(reader: MariaDbChunkReader, name: str) -> None:
    with pytest.raises(ChunkQueryError, match=f"reading a chunk of {DB}.{name}"):
        reader.read_chunk(ChunkTable(DB, name, ("id",), (("id", "int"),)), None, None, 10)


def test_watermarks_are_signal_table_rows(endpoint: Endpoint, reader: MariaDbChunkReader, sql: Any,
                                          name: str) -> None:
    signal = f"{name}_signal"
    sql.execute(f"CREATE TABLE {signal} (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))")
    metadata = {"openWindowTimestamp": "2026-01-01T00:00:00Z", "correlationId": None, "dataCollectionId": "x.y"}
    reader.write_marker("c1", True, metadata)
    reader.write_marker("c1", False, {**metadata, "closeWindowTimestamp": "2026-01-01T00:00:01Z"})
    sql.execute(f"SELECT id, type, data FROM {signal} ORDER BY id")
    assert sql.fetchall() == (
        ("c1-close", "snapshot-window-close", '{"openWindowTimestamp": "2026-01-01T00:00:00Z", "dataCollectionId": '
                                              '"x.y", "closeWindowTimestamp": "2026-01-01T00:00:01Z"}'),
        ("c1-open", "snapshot-window-open", '{"openWindowTimestamp": "2026-01-01T00:00:00Z", "dataCollectionId": '
                                            '"x.y"}'))
    deleting = MariaDbChunkReader(endpoint, TableId(DB, signal), "insert_delete")
    deleting.write_marker("c2", True, metadata)
    sql.execute(f"SELECT count(*) FROM {signal} WHERE id = 'c2-open'")
    assert sql.fetchall() == (("1",),)
    deleting.write_marker("c2", False, metadata)
    sql.execute(f"SELECT count(*) FROM {signal} WHERE id LIKE 'c2-%%'")
    assert sql.fetchall() == (("0",),)
    deleting.close()


def test_watermarks_of_the_mariadb_connector_keep_its_release_keys(endpoint: Endpoint, sql: Any, name: str) -> None:
    """Debezium's MariaDB connector 3.5.0.Final writes the window timestamps only (no correlationId and
    dataCollectionId: 3.7.0.Alpha1 added them)."""
    signal = f"{name}_signal"
    sql.execute(f"CREATE TABLE {signal} (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))")
    writer = MariaDbChunkReader(endpoint, TableId(DB, signal), "insert_insert",
                                watermark_keys=WATERMARK_KEYS_BEFORE_3_7)
    metadata = {"openWindowTimestamp": "2026-01-01T00:00:00Z", "correlationId": "snap-1", "dataCollectionId": "x.y"}
    writer.write_marker("c1", True, metadata)
    writer.write_marker("c1", False, {"openWindowTimestamp": "2026-01-01T00:00:00Z",
                                      "closeWindowTimestamp": "2026-01-01T00:00:01Z",
                                      "correlationId": "snap-1", "dataCollectionId": "x.y"})
    writer.close()
    sql.execute(f"SELECT id, data FROM {signal} ORDER BY id")
    assert sql.fetchall() == (
        ("c1-close", '{"openWindowTimestamp": "2026-01-01T00:00:00Z", "closeWindowTimestamp": "2026-01-01T00:00:01Z"}'),
        ("c1-open", '{"openWindowTimestamp": "2026-01-01T00:00:00Z"}'))


def test_read_only_chunks_see_exactly_the_transactions_before_their_snapshot(reader: MariaDbChunkReader, sql: Any,
                                                                             name: str) -> None:
    sql.execute(f"CREATE TABLE {name} (id int PRIMARY KEY)")
    sql.execute(f"INSERT INTO {name} VALUES (1)")
    sql.execute("SELECT @@last_gtid")
    before = sql.fetchall()[0][0]
    table = ChunkTable(DB, name, ("id",), (("id", "int(11)"),))
    rows, visible, high = reader.read_chunk_visible(table, None, None, 10)
    sql.execute(f"INSERT INTO {name} VALUES (2)")
    sql.execute("SELECT @@last_gtid")
    after = sql.fetchall()[0][0]
    assert rows == [("1", "1")]
    domain, _, seq = before.split("-")
    assert visible.sees(transaction_number(int(domain), int(seq)))
    domain, _, seq = after.split("-")
    assert not visible.sees(transaction_number(int(domain), int(seq)))
    sql.execute("SHOW BINARY LOGS")
    assert high > 0 and high >> 32 <= max(int(r[0].rsplit(".", 1)[1]) for r in sql.fetchall())


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "streaming"])
def test_watermark_chunks_report_what_their_snapshot_saw(reader: MariaDbChunkReader, sql: Any, name: str,
                                                         streaming: bool) -> None:
    """Watermark mode's chunk read (``read_chunk_seen`` / ``read_chunk_streaming``) reports its snapshot's GTID
    position: a transaction committed before it is seen, one committed after it is not."""
    sql.execute(f"CREATE TABLE {name} (id int PRIMARY KEY)")
    sql.execute(f"INSERT INTO {name} VALUES (1)")
    sql.execute("SELECT @@last_gtid")
    before = sql.fetchall()[0][0]
    table = ChunkTable(DB, name, ("id",), (("id", "int(11)"),))
    if streaming:
        rows, rest, visible = reader.read_chunk_streaming(table, None, None, 10, 5)
        assert rest is None
    else:
        rows, visible = reader.read_chunk_seen(table, None, None, 10)
    sql.execute(f"INSERT INTO {name} VALUES (2)")
    sql.execute("SELECT @@last_gtid")
    after = sql.fetchall()[0][0]
    assert rows == [("1", "1")] and visible is not None
    domain, _, seq = before.split("-")
    assert visible.sees(transaction_number(int(domain), int(seq)))
    domain, _, seq = after.split("-")
    assert not visible.sees(transaction_number(int(domain), int(seq)))
    assert reader.read_chunk_seen(table, None, None, 10)[0] == [("1", "1"), ("2", "2")], "no transaction left open"
    assert reader.read_chunk_streaming(table, None, None, 10, 5)[0] == [("1", "1"), ("2", "2")]


def test_the_schema_provider_describes_tables_and_converts_rows(endpoint: Endpoint, reader: MariaDbChunkReader,
                                                                sql: Any, name: str) -> None:
    sql.execute(f"CREATE TABLE {name} (b varchar(10) NOT NULL, a int unsigned NOT NULL, code char(3) NOT NULL, "
                "note text, price decimal(10,2), day date, at timestamp(3) NULL, bits bit(10), tags set('x','y'), "
                "raw varbinary(4), f float, PRIMARY KEY (b, a), UNIQUE KEY (code), KEY (note(10)))")
    sql.execute(f"INSERT INTO {name} VALUES ('k', 7, 'abc', NULL, 12.50, '2026-02-03', "
                "'2026-02-03 04:05:06.789', b'101', 'x,y', X'00ff', 1.1)")
    capture = load_config(None, REQUIRED).capture
    provider: MariaDbSchemaProvider[Any] = MariaDbSchemaProvider(endpoint, capture, lambda event, info: (event, info))
    assert TableId(DB, name) in provider.tables()
    assert provider.describe(TableId(DB, name + "_missing")) is None
    info = provider.describe(TableId(DB, name))
    assert isinstance(info, MariaDbTableInfo)
    assert info.primary_key == ("b", "a")
    assert info.unique_columns == {"code"}
    assert info.not_null == {"b", "a", "code"}
    assert list(info.sql_types.items())[:3] == [("b", "varchar(10)"), ("a", "int(10) unsigned"), ("code", "char(3)")]
    assert info.estimated_rows is not None and info.estimated_rows >= 0
    rows = provider.rows_for(info)
    assert rows.columns == tuple(info.sql_types)
    chunk = ChunkTable(DB, name, rows.columns, (("b", "varchar(10)"), ("a", "int(10) unsigned")))
    [raw] = reader.read_chunk(chunk, None, None, 10)
    assert rows.row(raw[:len(rows.columns)]) == {
        "b": "k", "a": 7, "code": "abc", "note": None, "price": Decimal("12.50"), "day": dt.date(2026, 2, 3),
        "at": dt.datetime(2026, 2, 3, 4, 5, 6, 789000, tzinfo=dt.UTC), "bits": 5, "tags": {"x", "y"},
        "raw": b"\x00\xff", "f": pytest.approx(1.1, rel=1e-7)}
    event: Any = object()
    assert rows.read_change(event) == (event, info)
    provider.close()


def test_signals_are_written_as_rows(endpoint: Endpoint, sql: Any, name: str) -> None:
    table = f"{name}_sig`%s"
    sql.execute(f"CREATE TABLE `{table.replace('`', '``')}` (id varchar(42) PRIMARY KEY, type varchar(32), "
                "data varchar(2048))")
    insert_signal(endpoint, TableId(DB, table), {"id": "s'1\\", "type": "execute-snapshot",
                                                 "data": {"data-collections": [f"{DB}.x"]}})
    sql.execute(f"SELECT id, type, data FROM `{table.replace('`', '``')}`")
    assert sql.fetchall() == (("s'1\\", "execute-snapshot", '{"data-collections": ["inventory.x"]}'),)


def test_checked_filters_run_on_mariadb_with_the_meaning_they_were_checked_for(endpoint: Endpoint,
                                                                               reader: MariaDbChunkReader, sql: Any,
                                                                               name: str) -> None:
    sql.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, `Label` varchar(10), `pct%` int, day date)")
    sql.executemany(f"INSERT INTO {name} VALUES (%s, %s, %s, %s)",
                    [(i, ["a%b", "A_c", "it's", "x\\y"][i % 4], i, dt.date(2026, 1, 1 + i % 28)) for i in range(40)])
    provider: MariaDbSchemaProvider[Any] = MariaDbSchemaProvider(endpoint, load_config(None, REQUIRED).capture,
                                                                 lambda event, info: (event, info))
    info = provider.describe(TableId(DB, name))
    assert info is not None
    provider.close()
    cases = {
        "label like 'a!%%' escape '!'": [i for i in range(40) if i % 4 == 0],
        "label = 'it\\'s' and `pct%` % 3 = 0": [i for i in range(40) if i % 4 == 2 and i % 3 == 0],
        "label = \"x\\\\y\" or day between '2026-01-02' and date_add('2026-01-01', interval 1 day)":
            [i for i in range(40) if i % 4 == 3 or i % 28 == 1],
        "not (id in (1, 2, 3) || id >= 5)": [0, 4],
    }
    for text, expected in cases.items():
        normalized = "(" + compile_mariadb_filter(text, info.sql_types) + ")"
        table = ChunkTable(DB, name, ("id",), (("id", "int(11)"),), normalized)
        assert [int(r[0]) for r in scan(reader, table, 7)] == expected, normalized
