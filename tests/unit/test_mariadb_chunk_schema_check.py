"""A MariaDB chunk read's schema check: the consistent snapshot's GTID statement carries the version probe when
the table has a schema version, a different version raises ``ChunkSchemaChanged`` before the chunk is read,
and a chunk statement refused for an unknown column (1054) or a rebuilt table (1412) is a changed schema."""

from __future__ import annotations

from typing import Any

import pymysql
import pytest

from signaller.sources.base import ChunkQueryError, ChunkSchemaChanged, ChunkTable
from signaller.sources.mariadb.chunk_sql import version_probe
from signaller.sources.mariadb.chunks import _consistent_snapshot, _query_error

pytestmark = pytest.mark.unit
TABLE = ChunkTable("db", "t", ("id", "v"), (("id", "int(11)"),), None, "abc")


class ScriptedCursor:
    """Answers the three statements of ``_consistent_snapshot`` and records them."""

    def __init__(self, version: str | None) -> None:
        self.version = version
        self.statements: list[str] = []

    def execute(self, sql: str) -> None:
        self.statements.append(sql)

    def fetchall(self) -> list[tuple[Any, ...]]:
        return [("binlog_snapshot_file", "bin.000001"), ("binlog_snapshot_position", "42")]

    def fetchone(self) -> tuple[Any, ...]:
        return ("0-1-7", self.version, None)


def test_a_matching_version_returns_the_snapshot_position_and_took_the_table_lock() -> None:
    cur = ScriptedCursor("abc")
    assert _consistent_snapshot(cur, TABLE) == ("bin.000001", 42, "0-1-7")
    assert cur.statements[0] == "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"
    assert cur.statements[2] == f"SELECT BINLOG_GTID_POS('bin.000001', 42), {version_probe(TABLE)}"


def test_a_different_version_is_a_changed_schema() -> None:
    with pytest.raises(ChunkSchemaChanged, match="abc -> abd"):
        _consistent_snapshot(ScriptedCursor("abd"), TABLE)


def test_without_a_version_nothing_is_checked() -> None:
    cur = ScriptedCursor(None)
    unversioned = ChunkTable("db", "t", ("id",), (("id", "int(11)"),))
    assert _consistent_snapshot(cur, unversioned) == ("bin.000001", 42, "0-1-7")
    assert cur.statements[2] == "SELECT BINLOG_GTID_POS('bin.000001', 42), NULL, NULL"


@pytest.mark.parametrize(("code", "changed"), [(1054, True), (1412, True), (1064, False), (1146, False)])
def test_refused_chunk_statements(code: int, changed: bool) -> None:
    error = _query_error(pymysql.err.OperationalError(code, "refused"), TABLE, "reading a chunk of db.t")
    assert isinstance(error, ChunkQueryError) and isinstance(error, ChunkSchemaChanged) is changed
    unversioned = ChunkTable("db", "t", ("id",), (("id", "int(11)"),))
    assert not isinstance(_query_error(pymysql.err.OperationalError(code, "x"), unversioned, "x"), ChunkSchemaChanged)
