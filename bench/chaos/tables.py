"""The captured tables of a chaos run, their seed rows, and the source read back as rows.

Four data tables (issue 17): an integer key with a TOASTed text column (``REPLICA IDENTITY DEFAULT``, so an
update that leaves it alone streams Debezium's unavailable-value placeholder), a composite ``(int, text)`` key,
a text key under a non-C collation (ICU ``en-US-x-icu``: keyset chunking must follow that order), and a table
without a primary key (``REPLICA IDENTITY FULL``; ``uid`` NOT NULL with a unique index, as ``surrogate-key``
requires) keyed in Kafka by ``message.key.columns`` and snapshotted by ``surrogate-key``. Every write sets
``n`` from one sequence, so a later version of a row always has a larger ``n`` (what :mod:`bench.chaos.topics`
uses to find a READ older than a streamed change). Plus ``chaos_probe`` (recovery markers) and ``chaos_signal``
(the signal table).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

COLLATION = "en-US-x-icu"
SEQUENCE = "chaos_n"
PROBE = "chaos_probe"
SIGNAL_TABLE = "chaos_signal"
Row = dict[str, Any]
Rows = dict[str, Row]
"""Canonical key (JSON list of the key values) -> row (column -> value)."""


def _text_key(n: int) -> tuple[Any, ...]:
    syllables = ["ka", "Zu", "mé", "o'", "x y", "Ba", "ñ", "q", "É", "ab"]
    parts = [syllables[(n // 10**i) % 10] for i in range(1 + n % 3)]
    return ("".join(parts) + f"-{n}",)


@dataclass(frozen=True)
class TableSpec:
    """One captured table: its name, columns SQL, key columns, how the ``n``-th key looks, and whether the
    writer's inserts fill the TOASTed ``doc`` column."""

    name: str
    columns_sql: str
    key: tuple[str, ...]
    make_key: Callable[[int], tuple[Any, ...]]
    replica_full: bool = False
    keyless: bool = False
    toast: bool = False

    @property
    def qualified(self) -> str:
        return f"public.{self.name}"

    def canonical_key(self, row: Row) -> str:
        return json.dumps([row.get(column) for column in self.key])


TABLES = (
    TableSpec("chaos_int", "id integer PRIMARY KEY, n bigint NOT NULL, val text, doc text", ("id",),
              lambda n: (n,), toast=True),
    TableSpec("chaos_comp", "a integer NOT NULL, b text NOT NULL, n bigint NOT NULL, val text, PRIMARY KEY (a, b)",
              ("a", "b"), lambda n: (n % 37, f"b{n // 37}")),
    TableSpec("chaos_text", f'k text COLLATE "{COLLATION}" PRIMARY KEY, n bigint NOT NULL, val text', ("k",),
              _text_key),
    TableSpec("chaos_keyless", "uid bigint NOT NULL, n bigint NOT NULL, val text", ("uid",), lambda n: (n,),
              replica_full=True, keyless=True),
)
BY_NAME = {spec.name: spec for spec in TABLES}


def toast_sql(chars: int) -> str:
    """An SQL expression of ``chars`` random hex characters (incompressible: stored out of line)."""
    return f"(SELECT left(string_agg(md5(random()::text), ''), {chars}) FROM generate_series(1, {chars // 32 + 1}))"


def create(cur: Any, key_space: int, toast_chars: int) -> None:
    """Drop and create every table (and the sequence), seeding the even keys below ``key_space``."""
    cur.execute("SELECT 1 FROM pg_collation WHERE collname = %s", (COLLATION,))
    if cur.fetchone() is None:
        raise RuntimeError(f"collation {COLLATION!r} does not exist: PostgreSQL must be built with ICU")
    cur.execute(f"DROP SEQUENCE IF EXISTS {SEQUENCE}; CREATE SEQUENCE {SEQUENCE}")
    for spec in TABLES:
        cur.execute(f"DROP TABLE IF EXISTS {spec.name}; CREATE TABLE {spec.name} ({spec.columns_sql})")
        if spec.replica_full:
            cur.execute(f"ALTER TABLE {spec.name} REPLICA IDENTITY FULL")
        if spec.keyless:  # no primary key; surrogate-key needs a NOT NULL column with a unique index
            cur.execute(f"CREATE UNIQUE INDEX ON {spec.name} ({', '.join(spec.key)})")
        seed(cur, spec, range(0, key_space, 2), toast_chars)
    cur.execute(f"DROP TABLE IF EXISTS {PROBE}; CREATE TABLE {PROBE} (id integer PRIMARY KEY, t double precision)")
    cur.execute(f"DROP TABLE IF EXISTS {SIGNAL_TABLE}; CREATE TABLE {SIGNAL_TABLE} "
                "(id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))")


def seed(cur: Any, spec: TableSpec, numbers: range, toast_chars: int) -> None:
    keys = [spec.make_key(n) for n in numbers]
    width = len(spec.key)
    doc = f", {toast_sql(toast_chars)}" if spec.toast else ""
    placeholders = "(" + ", ".join(["%s"] * width) + f", nextval('{SEQUENCE}'), 'seed'{doc})"
    for start in range(0, len(keys), 2000):
        values = ",".join(cur.mogrify(placeholders, key).decode() for key in keys[start:start + 2000])
        columns = ", ".join([*spec.key, "n", "val", *(["doc"] if spec.toast else [])])
        cur.execute(f"INSERT INTO {spec.name} ({columns}) VALUES {values}")


def source_rows(cur: Any, spec: TableSpec) -> tuple[list[str], Rows]:
    """The table's columns now and its rows by canonical key."""
    cur.execute(f"SELECT * FROM {spec.name}")
    names = [d[0] for d in cur.description]
    rows: Rows = {}
    for values in cur.fetchall():
        row = dict(zip(names, values, strict=True))
        rows[spec.canonical_key(row)] = row
    return names, rows
