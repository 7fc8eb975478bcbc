"""Snapshot READs rendered by PostgreSQL (``signaller.sources.postgres.rendering``, issue 13's fast path) are
byte for byte the READs of the generic path (each column's text converted by its codec, the row rendered by
``EnvelopeSerializer.serialize_read``), on a real server.

Every type the compatibility suite covers (``tests.compat.all_types``: each ``pg_catalog`` type with its
ordinary and edge values, the declared-modifier variants, hstore and PostGIS), arrays, an enum, text with
every escape, columns with schema defaults and odd names, as value columns under every type mode of
``schemas/type-mapping.md`` (and the other binary, interval and time modes), with and without schemas; the
key types (and a composite key) as the Kafka key. Each test also says which rows PostgreSQL rendered: every
row of a type it renders but the values it must leave to the generic path (infinite or out-of-range
timestamps), every row of a table whose other columns are converted in between.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import psycopg2
import pytest

from devtools.settings import StackSettings
from signaller.config import config_from_mapping
from signaller.model import TableId
from signaller.sources.base import ChunkTable
from signaller.sources.postgres.catalog import Catalog
from signaller.sources.postgres.chunks import PostgresChunkReader
from signaller.sources.postgres.reader import PostgresLogReader
from signaller.sources.postgres.rendering import PostgresReadRendering, value_sql
from signaller.sources.postgres.schemas import PostgresSchemaProvider, PostgresTableRows
from signaller.wire.envelope import EnvelopeSerializer
from tests.compat.all_types import EXTENSIONS, MODIFIED, VALUES

pytestmark = pytest.mark.integration

MODES: list[dict[str, str]] = [
    {},
    {"decimal.handling.mode": "string"},
    {"decimal.handling.mode": "double"},
    {"time.precision.mode": "connect"},
    {"time.precision.mode": "adaptive_time_microseconds"},
    {"binary.handling.mode": "base64"},
    {"binary.handling.mode": "base64-url-safe"},
    {"binary.handling.mode": "hex"},
    {"hstore.handling.mode": "map"},
    {"interval.handling.mode": "string"},
    {"include.unknown.datatypes": "true"},
]
"""Every value of every property that changes how a value is written (``TypeModes``)."""

ESCAPES = "".join(chr(code) for code in range(1, 32)) + "\"\\/ é ✓ \u2028\u2029 \x7f\x80\x9f 𝄞"
EXTRA_VALUES: Mapping[str, tuple[str, ...]] = {
    "text": (ESCAPES, "a'b", "%s %d {}"),
    "varchar": (ESCAPES,),
    "bpchar": (ESCAPES,),
    "json": ('{"k": "\\u0001\\n"}',),
    "date": ("0001-01-01", "9999-12-31", "1969-12-31", "1900-03-01", "4714-11-24 BC"),
    "time": ("00:00:00.000001", "12:00:00.5"),
    "timestamp": ("1969-12-31 23:59:59.999999", "1900-01-01 00:00:00.000001", "4713-11-24 00:00:00 BC",
                  "294246-12-31 23:59:59.999999", "294247-01-10 04:00:54.775807", "294276-12-31 23:59:59.999999"),
    "timestamptz": ("0001-01-01 00:00:00+00", "9999-12-31 23:59:59.999999+00", "10000-01-01 00:00:00+00",
                    "2024-02-29 13:14:15+00", "2024-06-30 23:59:59.000001-07", "1900-01-01 00:00:00+00"),
    "bytea": ("\\x" + bytes(range(256)).hex(),),
}
"""Edge values beyond the compatibility suite's, for the types PostgreSQL renders."""

LEFT_TO_THE_GENERIC_PATH: Mapping[str, frozenset[str]] = {
    "date": frozenset({"infinity", "-infinity"}),
    "timestamp": frozenset({"infinity", "-infinity", "294247-01-10 04:00:54.775807", "294276-12-31 23:59:59.999999",
                            "294276-12-31 23:59:59"}),
    "timestamptz": frozenset({"infinity", "-infinity", "0044-03-15 12:00:00+00 BC", "10000-01-01 00:00:00+00"}),
}
"""The values PostgreSQL must not render (the row goes the generic way): what its expressions cannot write exactly."""

POSITION = (0x152F000, 0x1530000)
NOW_US = 1_732_000_000_123_456


def _cases() -> list[tuple[str, str, tuple[str, ...]]]:
    """``(label, column type, values)`` of every case."""
    cases = [(name, name, (*values, *EXTRA_VALUES.get(name, ()))) for name, values in VALUES.items()]
    cases += [(type_sql, type_sql, values) for type_sql, _, values in MODIFIED]
    cases += [(name, name, values) for name, (_, values) in EXTENSIONS.items()]
    cases += [
        ("int4[]", "int4[]", ("{1,2,NULL}", "{}")),
        ("text[]", "text[]", ('{a,"b c",NULL}', "{}")),
        ("date[]", "date[]", ("{2024-01-01,infinity}",)),
        ("numeric[]", "numeric[]", ("{1.5,NaN}",)),
        ("timestamptz[]", "timestamptz[]", ("{\"2024-01-01 00:00:00+00\"}",)),
        ("enum", "{enum}", ("sad", "ok")),
    ]
    return cases


@pytest.fixture(scope="module")
def database(stack: StackSettings) -> Iterator[tuple[Any, str]]:
    """A connection (autocommit) with the enum type and extensions the cases need, and the enum's name."""
    conn = psycopg2.connect(stack.pg_dsn())
    conn.autocommit = True
    cur = conn.cursor()
    for extension in sorted({extension for extension, _ in EXTENSIONS.values()}):
        cur.execute(f"CREATE EXTENSION IF NOT EXISTS {extension}")
    enum = "rendered_mood"
    cur.execute(f"DROP TYPE IF EXISTS {enum} CASCADE")
    cur.execute(f"CREATE TYPE {enum} AS ENUM ('sad', 'ok')")
    try:
        yield cur, enum
    finally:
        cur.execute(f"DROP TYPE IF EXISTS {enum} CASCADE")
        conn.close()


def _provider(stack: StackSettings, catalog: Catalog, mode: Mapping[str, str]) -> PostgresSchemaProvider:
    config = config_from_mapping({
        "database.hostname": "127.0.0.1", "database.port": str(stack.pg_port), "database.user": stack.pg_user,
        "database.password": stack.pg_password, "database.dbname": stack.pg_db, "topic.prefix": "pg1", **mode,
    }, env={})
    return PostgresSchemaProvider(config, catalog, PostgresLogReader(config, catalog).relations)


def _compare(rows: PostgresTableRows, raw: list[tuple[str | None, ...]], key_width: int,
             ) -> list[bool]:
    """Assert that every row renders to the generic path's bytes (both converters); return, per row, whether
    PostgreSQL rendered it."""
    rendering = rows.rendering
    assert rendering is not None
    width = len(rows.columns)
    offset = width + key_width

    def decode(values: Any) -> dict[str, Any]:
        return rows.row(values[:width])

    for schemas in (True, False):
        serializer = EnvelopeSerializer(rows.plan.schema, rows.plan.codecs, topic_prefix="pg1", database="shop",
                                        schemas_enable=schemas)
        assert serializer.renders(rendering.value_names, rendering.key_names)
        got = serializer.serialize_rendered_reads(raw, rendering.render_rows(raw, offset), decode, *POSITION,
                                                  ts_us_now=NOW_US)
        for values, record in zip(raw, got, strict=True):
            expected = serializer.serialize_read(decode(values), *POSITION, ts_us_now=NOW_US)
            assert record == expected, f"row {values[:width]}"
    rendered = [rendering.render(values, offset) for values in raw]
    assert rendering.render_rows(raw, offset) == rendered
    return [payloads is not None for payloads in rendered]


def _table(cur: Any, name: str, column_sql: str, values: tuple[str, ...]) -> None:
    cur.execute(f"DROP TABLE IF EXISTS {name}")
    cur.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, v {column_sql}, note text DEFAULT 'n')")
    for number, value in enumerate((*values, None)):
        cur.execute(f"INSERT INTO {name} (id, v) VALUES (%s, %s::{column_sql})", (number, value))


def test_every_type_renders_as_the_generic_path(stack: StackSettings, database: tuple[Any, str],
                                                unique_name: str) -> None:
    cur, enum = database
    catalog = Catalog(stack.pg_dsn())
    reader = PostgresChunkReader(stack.pg_dsn(), None, "insert_insert")
    providers = [_provider(stack, catalog, mode) for mode in MODES]
    table = f"rendered_{unique_name}"
    rendered_types: set[str] = set()
    try:
        for label, column_sql, values in _cases():
            column_sql = column_sql.format(enum=enum)
            _table(cur, table, column_sql, values)
            for mode, provider in zip(MODES, providers, strict=True):
                info = provider.describe(TableId("public", table))
                assert info is not None
                rows = provider.rows_for(info)
                rendering = rows.rendering
                assert isinstance(rendering, PostgresReadRendering), label
                chunk = ChunkTable("public", table, rows.columns, (("id", "integer"),), None, None, rendering.select)
                raw = reader.read_chunk(chunk, None, None, 1000)
                assert len(raw) == len(values) + 1
                rendered = _compare(rows, raw, 1)
                column = next(c for c in rows.plan.schema.columns if c.name == "v")
                if "v" not in rendering.value_names or value_sql(column, rows.modes, '"v"') is None:
                    assert all(rendered), f"{label} {mode}: converted in between, every row still rendered"
                    continue
                rendered_types.add(label)
                left = LEFT_TO_THE_GENERIC_PATH.get(label.split("(")[0], frozenset())
                expected = [value not in left for value in (*values, None)]
                assert rendered == expected, f"{label} {mode}: rendered rows"
    finally:
        cur.execute(f"DROP TABLE IF EXISTS {table}")
        reader.close()
        catalog.close()
    assert {"int2", "int4", "int8", "oid", "bool", "text", "varchar", "bpchar", "char", "name", "uuid", "json",
            "jsonb", "xml", "tsvector", "inet", "cidr", "macaddr", "bytea", "date", "time", "timestamp",
            "timestamptz", "int4range", "enum", "time(3)", "timestamp(3)", "timestamptz(0)"} <= rendered_types


KEY_CASES = [
    ("int2", ("-32768", "7")), ("int8", ("-9223372036854775808", "9223372036854775807")), ("text", (ESCAPES, "b")),
    ("varchar(10)", ("x", "y")), ("char(3)", ("a", "bc")), ("uuid", ("00000000-0000-0000-0000-000000000000",)),
    ("date", ("2024-02-29", "0044-03-15 BC")), ("timestamp(3)", ("2024-02-29 13:14:15.123",)),
    ("timestamptz", ("2024-02-29 13:14:15.123456+05:45",)), ("bool", ("true", "false")),
]


@pytest.mark.parametrize(("key_sql", "values"), KEY_CASES, ids=[case[0] for case in KEY_CASES])
def test_keys_render_as_the_generic_path(stack: StackSettings, database: tuple[Any, str], unique_name: str,
                                         key_sql: str, values: tuple[str, ...]) -> None:
    cur, _ = database
    table = f"rendered_key_{unique_name}"
    cur.execute(f'CREATE TABLE {table} (k {key_sql} PRIMARY KEY, "we""ird é" numeric(10,2), t text)')
    catalog = Catalog(stack.pg_dsn())
    reader = PostgresChunkReader(stack.pg_dsn(), None, "insert_insert")
    try:
        for value in values:
            cur.execute(f"INSERT INTO {table} VALUES (%s, 1.5, 'x')", (value,))
        for mode in MODES[:4]:
            provider = _provider(stack, catalog, mode)
            info = provider.describe(TableId("public", table))
            assert info is not None
            rows = provider.rows_for(info)
            rendering = rows.rendering
            assert rendering is not None and rendering.key_names == ("k",)
            chunk = ChunkTable("public", table, rows.columns, (("k", info.sql_types["k"]),), None, None,
                               rendering.select)
            raw = reader.read_chunk(chunk, None, None, 100)
            assert _compare(rows, raw, 1) == [True] * len(values)
    finally:
        cur.execute(f"DROP TABLE IF EXISTS {table}")
        reader.close()
        catalog.close()


def test_composite_keyless_and_defaulted_tables_render_as_the_generic_path(
        stack: StackSettings, database: tuple[Any, str], unique_name: str) -> None:
    cur, _ = database
    composite, keyless, numeric_key = (f"rendered_{kind}_{unique_name}" for kind in ("pair", "nokey", "numkey"))
    cur.execute(f"CREATE TABLE {composite} (b text, a int, t text DEFAULT 'it''s \\', n int NOT NULL DEFAULT 5, "
                "ts timestamptz DEFAULT '2024-01-01 00:00:00+00', f float8 DEFAULT 1.5, PRIMARY KEY (a, b))")
    cur.execute(f"INSERT INTO {composite} VALUES ('x', 1, NULL, 7, NULL, NULL), ('y\"', 2, 'z', 8, "
                "'2024-02-29 00:00:00+00', 2.5)")
    cur.execute(f"CREATE TABLE {keyless} (a int, t text)")
    cur.execute(f"INSERT INTO {keyless} VALUES (1, 'x'), (NULL, NULL)")
    cur.execute(f"CREATE TABLE {numeric_key} (k numeric PRIMARY KEY, t text)")
    catalog = Catalog(stack.pg_dsn())
    reader = PostgresChunkReader(stack.pg_dsn(), None, "insert_insert")
    try:
        provider = _provider(stack, catalog, {})
        info = provider.describe(TableId("public", composite))
        assert info is not None
        rows = provider.rows_for(info)
        assert rows.rendering is not None and rows.rendering.key_names == ("a", "b")
        chunk = ChunkTable("public", composite, rows.columns, (("a", "integer"), ("b", "text")), None, None,
                           rows.rendering.select)
        raw = reader.read_chunk(chunk, None, None, 100)
        assert _compare(rows, raw, 2) == [True, True]
        assert b'"t":"it\'s \\\\"' in rows.rendering.render(raw[0], len(rows.columns) + 2)[0]  # type: ignore[index]

        info = provider.describe(TableId("public", keyless))
        assert info is not None
        rows = provider.rows_for(info)
        assert rows.rendering is not None and rows.rendering.key_names == ()
        chunk = ChunkTable("public", keyless, rows.columns, (("a", "integer"),), None, None, rows.rendering.select)
        raw = reader.read_chunk(chunk, None, None, 100)
        assert _compare(rows, raw, 1) == [True, True]

        info = provider.describe(TableId("public", numeric_key))
        assert info is not None
        assert provider.rows_for(info).rendering is None, "a key PostgreSQL does not render: no rendering"
    finally:
        for table in (composite, keyless, numeric_key):
            cur.execute(f"DROP TABLE IF EXISTS {table}")
        reader.close()
        catalog.close()
