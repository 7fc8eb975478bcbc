"""A snapshot's schema of a table (``PostgresSchemaProvider.rows_for``: keys, NOT NULL columns and defaults read in
``Catalog.describe_table``'s one statement) is the schema the stream derives for the same table (the
``RelationCache``'s catalog look-ups), so a READ and a streamed change of one row carry the same schema and Kafka
key: with defaults Debezium puts in the schema, NOT NULL columns, a composite primary key, and a
``message.key.columns`` override."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg2
import pytest

from devtools.settings import StackSettings
from signaller.config import config_from_mapping
from signaller.model import TableId
from signaller.sources.postgres.catalog import Catalog
from signaller.sources.postgres.reader import PostgresLogReader
from signaller.sources.postgres.schemas import PostgresSchemaProvider

pytestmark = pytest.mark.integration


@pytest.fixture
def table(stack: StackSettings, unique_name: str) -> Iterator[str]:
    name = f"schemas_{unique_name}"
    conn = psycopg2.connect(stack.pg_dsn())
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {name} (b text NOT NULL DEFAULT 'x', a int, n numeric(6,2) DEFAULT 1.5, "
                    "ts timestamptz DEFAULT now(), flag boolean NOT NULL DEFAULT true, g int GENERATED ALWAYS AS "
                    "(a * 2) STORED, note varchar(10) DEFAULT 'it''s', PRIMARY KEY (a, b))")
    try:
        yield name
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {name}")
        conn.close()


@pytest.mark.parametrize("override", [None, "public.{table}:note"])
def test_the_snapshot_schema_is_the_streams(stack: StackSettings, table: str, override: str | None) -> None:
    properties: dict[str, Any] = {
        "database.hostname": "127.0.0.1", "database.port": str(stack.pg_port), "database.user": stack.pg_user,
        "database.password": stack.pg_password, "database.dbname": stack.pg_db, "topic.prefix": "pg1"}
    if override is not None:
        properties["message.key.columns"] = override.format(table=table)
    config = config_from_mapping(properties, env={})
    catalog = Catalog(stack.pg_dsn())
    try:
        reader = PostgresLogReader(config, catalog)
        provider = PostgresSchemaProvider(config, catalog, reader.relations)
        info = provider.describe(TableId("public", table))
        assert info is not None
        snapshot = provider.rows_for(info).plan.schema
        stream = reader.relations.derive_schema(info.relation)  # the stream's look-ups, one query each
        assert snapshot == stream
        assert snapshot.key_columns == (("note",) if override else ("a", "b"))
        assert {c.name: c.default_text for c in snapshot.columns if c.default_text is not None} == {
            "b": "x", "n": "1.5", "flag": "t", "note": "it's", "ts": "1970-01-01 00:00:00+00"}  # now(): the epoch
        assert {c.name for c in snapshot.columns if not c.optional} >= {"b", "flag"}
    finally:
        catalog.close()
