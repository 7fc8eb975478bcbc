"""PostgreSQL's table schema provider (``sources/postgres/schemas.py``): one schema cache for stream and chunks.

* a snapshot's table is described from the catalog as it is now, through the log reader's own
  ``RelationCache``, without replacing the stream's entry (the log may still hold tuples of the
  older shape: an ``ALTER TABLE`` the stream has not reached);
* type resolutions are shared: a Type message in the stream refreshes them for the chunk side too;
* the key rule is the reader's (``message.key.columns`` included), so a READ and a streamed change of
  one table carry the same Kafka key columns;
* a chunk row becomes the row values the stream produces, and a READ is wrapped as the stream's changes are.
"""

from __future__ import annotations

import pytest

from signaller.config import config_from_mapping
from signaller.model import ChangeEvent, Op, TableId
from signaller.sources.base import TableDescription
from signaller.sources.postgres.catalog import PostgresTableInfo
from signaller.sources.postgres.pgoutput import Relation, RelationColumn, Type
from signaller.sources.postgres.reader import Change, PostgresLogReader
from signaller.sources.postgres.relations import ResolvedType
from signaller.sources.postgres.schemas import PostgresSchemaProvider

pytestmark = pytest.mark.unit

OID, INT4, TEXT, MOOD = 16384, 23, 25, 50000
TABLE = TableId("public", "t")
BASE = {"database.hostname": "localhost", "database.user": "u", "database.dbname": "d", "topic.prefix": "pg"}


class FakeCatalog:
    """The catalog as the reader's cache and the provider ask it; ``columns`` is the table now."""

    def __init__(self, columns: tuple[tuple[str, int], ...]) -> None:
        self.columns = columns
        self.labels = ("sad", "ok")
        self.resolved: list[int] = []

    def resolve_type(self, type_oid: int) -> ResolvedType:
        self.resolved.append(type_oid)
        return ResolvedType("mood", enum_values=self.labels)

    def not_null_columns(self, namespace: str, table: str) -> set[str]:
        return {"id"}

    def primary_key_columns(self, namespace: str, table: str) -> tuple[str, ...]:
        return ("id",)

    def column_defaults(self, namespace: str, table: str) -> dict[str, str]:
        return {}

    def tables(self) -> list[TableId]:
        return [TABLE]

    def describe_table(self, table: TableId) -> PostgresTableInfo | None:
        if table != TABLE:
            return None
        relation = _stream_relation(self.columns)  # what the catalog amounts to, as a Relation message
        return PostgresTableInfo(table_id=table, sql_types={name: "text" for name, _ in self.columns},
                                 not_null=frozenset({"id"}), primary_key=("id",), unique_columns=frozenset({"id"}),
                                 estimated_rows=None, oid=OID, relation=relation)


def _stream_relation(columns: tuple[tuple[str, int], ...]) -> Relation:
    return Relation(OID, TABLE.schema, TABLE.table, "d",
                    tuple(RelationColumn(1 if name == "id" else 0, name, oid, -1) for name, oid in columns))


def _setup(properties: dict[str, str] | None = None,
           columns: tuple[tuple[str, int], ...] = (("id", INT4), ("mood", MOOD))
           ) -> tuple[FakeCatalog, PostgresLogReader, PostgresSchemaProvider]:
    config = config_from_mapping({**BASE, **(properties or {})}, env={})
    catalog = FakeCatalog(columns)
    reader = PostgresLogReader(config, catalog)  # type: ignore[arg-type]
    return catalog, reader, PostgresSchemaProvider(config, catalog, reader.relations)


def test_the_chunk_side_sees_the_catalog_now_and_leaves_the_streams_entry_alone() -> None:
    catalog, reader, provider = _setup()
    reader.relations.apply_relation(_stream_relation((("id", INT4), ("mood", MOOD))))
    catalog.columns = (("id", INT4), ("mood", MOOD), ("note", TEXT))  # ALTER TABLE ... ADD COLUMN, not yet streamed
    info = provider.describe(TABLE)
    assert info is not None
    rows = provider.rows_for(info)
    assert rows.columns == ("id", "mood", "note") and rows.table_id == TABLE
    entry = reader.relations.get(OID)
    assert entry.column_names == ("id", "mood") and entry.version == 1


def test_type_resolutions_are_shared_and_a_type_message_refreshes_them_for_both() -> None:
    catalog, reader, provider = _setup()
    reader.relations.apply_relation(_stream_relation((("id", INT4), ("mood", MOOD))))
    info = provider.describe(TABLE)
    assert info is not None
    assert provider.rows_for(info).read_change(_read({"id": 1})).plan.schema.columns[1].enum_values == ("sad", "ok")
    assert catalog.resolved == [MOOD]  # resolved once, for the stream; the chunk side used the same resolution
    catalog.labels = ("sad", "ok", "happy")  # ALTER TYPE mood ADD VALUE 'happy'
    reader.relations.apply(Type(MOOD, "public", "mood"))
    schema = provider.rows_for(info).read_change(_read({"id": 1})).plan.schema
    assert schema.columns[1].enum_values == ("sad", "ok", "happy")


def test_reads_carry_the_streams_key_columns_message_key_columns_included() -> None:
    _, reader, provider = _setup({"message.key.columns": "public.t:mood"})
    reader.relations.apply_relation(_stream_relation((("id", INT4), ("mood", MOOD))))
    info = provider.describe(TABLE)
    assert info is not None
    read_schema = provider.rows_for(info).read_change(_read({"id": 1})).plan.schema
    assert read_schema.key_columns == reader.relations.schema(OID).key_columns == ("mood",)


def test_a_chunk_row_becomes_the_streams_row_values_and_a_read_a_change_with_the_plan() -> None:
    _, _, provider = _setup(columns=(("id", INT4), ("note", TEXT)))
    info = provider.describe(TABLE)
    assert info is not None and provider.describe(TableId("public", "missing")) is None
    rows = provider.rows_for(info)
    assert rows.emitted_columns == ("id", "note")
    assert rows.row(("7", None)) == {"id": 7, "note": None}
    event = _read(rows.row(("7", "x")))
    change = rows.read_change(event)
    assert isinstance(change, Change) and change.event is event and change.plan is rows.plan
    assert provider.tables() == [TABLE]


def test_a_chunk_row_of_a_table_with_an_excluded_column_lines_up_with_the_selected_columns() -> None:
    """The chunk query selects the captured columns only: the values are read in that order (an excluded
    column before a captured one used to shift them, and the last one was out of range)."""
    _, _, provider = _setup({"column.exclude.list": r"public\.t\.secret"},
                            columns=(("id", INT4), ("secret", TEXT), ("note", TEXT)))
    info = provider.describe(TABLE)
    assert info is not None
    rows = provider.rows_for(info)
    assert rows.columns == ("id", "note")
    assert rows.row(("1", "hello")) == {"id": 1, "note": "hello"}


def test_a_description_from_elsewhere_is_refused() -> None:
    _, _, provider = _setup()
    foreign = TableDescription(TABLE, {"id": "integer"}, frozenset(), ("id",), frozenset(), None)
    with pytest.raises(TypeError, match="not a description of a PostgreSQL table"):
        provider.rows_for(foreign)


def _read(after: dict[str, object]) -> ChangeEvent:
    return ChangeEvent(Op.READ, TABLE, None, after, None, None, None, None, 0, "incremental")
