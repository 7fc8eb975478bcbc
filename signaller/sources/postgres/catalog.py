"""Catalog look-ups and administration over a regular (non-replication) connection: the
publication, the replication slot, type names for user types, primary keys and NOT NULL columns,
and a table's description as the catalog has it now (``describe_table``, for snapshots).

Every driver error is translated into a ``SourceError`` at this boundary.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import psycopg2
import psycopg2.errors
import psycopg2.extensions

from signaller.errors import TerminalSourceError, TransientSourceError
from signaller.model import TableId, parse_lsn
from signaller.sources.base import TableDescription
from signaller.sources.postgres.chunk_sql import schema_version_sql
from signaller.sources.postgres.defaults import default_text
from signaller.sources.postgres.pgoutput import Relation, RelationColumn
from signaller.sources.postgres.relations import ResolvedType
from signaller.sources.postgres.sqltext import quote_ident

TRANSIENT_CODES = ("08", "57P", "53", "55006", "40")
TABLES_QUERY = (
    "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
    "AND n.nspname NOT LIKE %s ORDER BY 1, 2"
)
TABLES_PARAMS = ("pg\\_toast%",)
"""Every user table (ordinary and partitioned), as ``(schema, table)``: run with ``TABLES_PARAMS``."""


LOST_CONNECTION_TEXTS = ("no message from the libpq", "server closed the connection", "connection already closed",
                         "terminating connection", "SSL SYSCALL error", "could not receive data from server",
                         "no COPY in progress")
"""What libpq says when the server went away under a connection. psycopg2 raises some of these as a plain
``DatabaseError`` without SQLSTATE, not as ``OperationalError``: a server crash or ``pg_ctl restart -m
immediate`` in the middle of the replication stream gives "error with status PGRES_COPY_BOTH and no message
from the libpq"; a shutdown (``pg_ctl restart -m fast``) ends the stream first (the walsender sends CopyDone),
and the next read gives "no COPY in progress"."""


def translate(exc: psycopg2.Error, doing: str) -> Exception:
    """Map a driver error to a transient (connection, locks, resources) or terminal SourceError. A lost
    connection is transient whatever class psycopg2 gave it (``InterfaceError``, or an error without SQLSTATE
    whose text is one of :data:`LOST_CONNECTION_TEXTS`): the supervisor connects again."""
    code = getattr(exc, "pgcode", None) or ""
    text = f"PostgreSQL error while {doing}: {str(exc).strip()}"
    lost = isinstance(exc, psycopg2.InterfaceError) or (
        not code and any(phrase in str(exc) for phrase in LOST_CONNECTION_TEXTS))
    if isinstance(exc, psycopg2.OperationalError) or code.startswith(TRANSIENT_CODES) or lost:
        return TransientSourceError(text)
    return TerminalSourceError(text)


def connect(dsn: str, doing: str = "connecting", **kwargs: Any) -> Any:
    """A psycopg2 connection (autocommit), or a TransientSourceError naming what failed."""
    try:
        conn = psycopg2.connect(dsn, **kwargs)
    except psycopg2.Error as exc:
        raise translate(exc, doing) from exc
    conn.autocommit = True
    return conn


@contextlib.contextmanager
def cursor(conn: Any, doing: str) -> Iterator[Any]:
    """A cursor on ``conn`` whose driver errors become ``SourceError``s naming ``doing`` (see ``translate``)."""
    try:
        with conn.cursor() as cur:
            yield cur
    except psycopg2.Error as exc:
        raise translate(exc, doing) from exc


@dataclass(frozen=True)
class SlotState:
    """A replication slot as ``pg_replication_slots`` shows it; ``exists`` is False (and the rest None) when there is no
    such slot."""

    exists: bool
    active_pid: int | None = None
    confirmed_flush_lsn: int | None = None
    plugin: str | None = None


@dataclass(frozen=True)
class PostgresTableInfo(TableDescription):
    """A table as the catalog describes it now, with what a schema plan needs: its ``oid`` and the
    pgoutput ``Relation`` message the catalog amounts to (columns in ``attnum`` order, primary-key
    columns flagged, the table's replica identity)."""

    oid: int
    relation: Relation
    column_defaults: Mapping[str, str] = field(default_factory=dict)
    """``column -> default as value text`` (as :meth:`Catalog.column_defaults` reads them), read with the columns."""


_DEFAULTS: Final = ("FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum "
                    "AND NOT a.attisdropped AND a.attgenerated = '' JOIN pg_type t ON t.oid = a.atttypid")
"""The columns' defaults (``pg_attrdef``, with each column and its type; generated columns left out)."""


def _default_texts(rows: Iterable[Sequence[Any]]) -> dict[str, str]:
    """``column -> default as value text`` of ``(column, default expression, type name)`` rows, for the defaults
    Debezium gives a schema default (:func:`signaller.sources.postgres.defaults.default_text`)."""
    out: dict[str, str] = {}
    for name, expression, type_name in rows:
        text = default_text(expression, type_name)
        if text is not None:
            out[name] = text
    return out


class Catalog:
    """Catalog queries for one database. Not thread-safe: one per reader."""

    def __init__(self, dsn: str) -> None:
        self._dsn = dsn
        self._conn = connect(dsn, "connecting for catalog queries")

    def close(self) -> None:
        """Close the connection; never raises."""
        with contextlib.suppress(psycopg2.Error):
            self._conn.close()

    def _rows(self, sql: str, params: Sequence[Any] = (), doing: str = "reading the catalog") -> list[tuple[Any, ...]]:
        """Run ``sql`` and return its rows. ``params`` only with constant statement text (psycopg2 then reads
        every ``%`` as a placeholder); statements that carry names are written whole with ``quote_ident``
        and run without parameters."""
        if self._conn.closed:
            self._conn = connect(self._dsn, "reconnecting for catalog queries")
        with cursor(self._conn, doing) as cur:
            cur.execute(sql, params or None)
            return list(cur.fetchall()) if cur.description else []

    def check_logical_decoding(self) -> None:
        """Refuse to start (terminal) unless ``wal_level=logical``."""
        level = self._rows("SHOW wal_level")[0][0]
        if level != "logical":
            msg = f"PostgreSQL wal_level is {level!r}; logical decoding needs wal_level=logical (then restart)"
            raise TerminalSourceError(msg)

    def server_version(self) -> int:
        """The server's ``server_version_num`` (e.g. 160004 for 16.4)."""
        return int(self._rows("SHOW server_version_num")[0][0])

    # -- tables ---------------------------------------------------------------------------
    def tables(self) -> list[TableId]:
        """Every user table (ordinary and partitioned) in the database, sorted."""
        rows = self._rows(TABLES_QUERY, TABLES_PARAMS, "listing tables")
        return [TableId(schema, table) for schema, table in rows]

    def describe_table(self, table: TableId) -> PostgresTableInfo | None:
        """The table's columns, types and keys as the catalog has them now, or None if it does not exist
        (or is not an ordinary or partitioned table); ``SourceError`` if the catalog cannot be read."""
        found = self._rows(
            "SELECT c.oid, c.relreplident, c.reltuples::bigint, "
            "(SELECT json_agg(json_build_array(a.attname, a.atttypid::bigint, a.atttypmod, a.attnotnull, "
            "        format_type(a.atttypid, a.atttypmod), EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = "
            "        a.attrelid AND i.indisprimary AND a.attnum = ANY(i.indkey))) ORDER BY a.attnum) "
            "   FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), "
            f"{schema_version_sql('c.oid')}, "
            "(SELECT json_agg(a.attname ORDER BY k.ord) FROM pg_index i "
            "   JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) ON true "
            "   JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum "
            "   WHERE i.indrelid = c.oid AND i.indisprimary), "
            "(SELECT json_agg(a.attname) FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
            "   AND a.attnum = i.indkey[0] WHERE i.indrelid = c.oid AND i.indisunique AND i.indnatts = 1 "
            "   AND i.indpred IS NULL), "
            f"(SELECT json_agg(json_build_array(a.attname, pg_get_expr(d.adbin, d.adrelid), t.typname)) {_DEFAULTS} "
            "   WHERE d.adrelid = c.oid) "
            "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = %s "
            "AND c.relkind IN ('r', 'p')",
            (table.schema, table.table), f"describing {table}",
        )  # one statement (one snapshot, one round trip): the schema version is the version of exactly these columns
        if not found:
            return None
        oid, identity, reltuples, columns, version, primary_key, unique, defaults = found[0]
        cols = [tuple(column) for column in columns or ()]
        relation = Relation(
            relation_id=oid, namespace=table.schema, name=table.table, replica_identity=identity,
            columns=tuple(RelationColumn(1 if in_pk else 0, name, typid, typmod)
                          for name, typid, typmod, _, _, in_pk in cols),
        )
        return PostgresTableInfo(
            table_id=table, oid=oid, relation=relation,
            sql_types={name: sql_type for name, _, _, _, sql_type, _ in cols},
            not_null=frozenset(name for name, _, _, notnull, _, _ in cols if notnull),
            primary_key=tuple(primary_key or ()),
            unique_columns=frozenset(unique or ()),
            estimated_rows=int(reltuples) if reltuples is not None and reltuples >= 0 else None,
            schema_version=version if cols else None,
            column_defaults=_default_texts(defaults or ()),
        )

    def primary_key_columns(self, namespace: str, table: str) -> tuple[str, ...]:
        """The table's primary-key columns in key order; empty when it has no primary key."""
        rows = self._rows(
            "SELECT a.attname FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) ON true "
            "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum "
            "WHERE i.indisprimary AND n.nspname = %s AND c.relname = %s ORDER BY k.ord",
            (namespace, table),
        )
        return tuple(r[0] for r in rows)

    def column_defaults(self, namespace: str, table: str) -> dict[str, str]:
        """``column -> default as value text`` for the columns Debezium gives a schema default
        (see :func:`signaller.sources.postgres.defaults.default_text`)."""
        rows = self._rows(
            f"SELECT a.attname, pg_get_expr(d.adbin, d.adrelid), t.typname {_DEFAULTS} "
            "JOIN pg_class c ON c.oid = d.adrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = %s",
            (namespace, table),
        )
        return _default_texts(rows)

    def not_null_columns(self, namespace: str, table: str) -> set[str]:
        """The names of the table's columns declared NOT NULL."""
        rows = self._rows(
            "SELECT a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = %s "
            "AND a.attnum > 0 AND NOT a.attisdropped AND a.attnotnull",
            (namespace, table),
        )
        return {r[0] for r in rows}

    def resolve_type(self, type_oid: int) -> ResolvedType:
        """Name, enum labels, array element and domain base of a non-built-in type."""
        rows = self._rows(
            "SELECT t.typname, t.typtype, t.typelem, t.typbasetype, t.typtypmod, "
            "e.typname AS elem_name, "
            "(SELECT array_agg(enumlabel ORDER BY enumsortorder) FROM pg_enum "
            "  WHERE enumtypid = CASE WHEN t.typelem <> 0 THEN t.typelem ELSE t.oid END) "
            "FROM pg_type t LEFT JOIN pg_type e ON e.oid = t.typelem WHERE t.oid = %s",
            (type_oid,),
        )
        if not rows:
            msg = f"type OID {type_oid} not found in pg_type"
            raise TerminalSourceError(msg)
        name, typtype, elem, base, typmod, elem_name, labels = rows[0]
        return ResolvedType(
            name=name,
            enum_values=tuple(_pg_array(labels)) if labels else None,
            element_type_name=elem_name if elem else None,
            element_type_oid=elem or None,
            base_type_oid=base or None if typtype == "d" else None,
            base_type_modifier=typmod if typtype == "d" else -1,
        )

    # -- publication and slot -------------------------------------------------------------
    def publication_tables(self, name: str) -> set[TableId] | None:
        """The tables of publication ``name`` (None if it does not exist)."""
        exists = self._rows("SELECT puballtables FROM pg_publication WHERE pubname = %s", (name,))
        if not exists:
            return None
        rows = self._rows("SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = %s", (name,))
        return {TableId(s, t) for s, t in rows}

    def ensure_publication(self, name: str, mode: str, tables: Sequence[TableId]) -> None:
        """Debezium's ``publication.autocreate.mode``: ``all_tables`` creates ``FOR ALL TABLES``;
        ``filtered`` creates or alters it to exactly ``tables``; ``disabled`` requires it to exist."""
        existing = self.publication_tables(name)
        quoted = ", ".join(f"{quote_ident(t.schema)}.{quote_ident(t.table)}" for t in tables)
        publication = quote_ident(name)
        if mode == "disabled":
            if existing is None:
                msg = (f"publication {name!r} does not exist and publication.autocreate.mode=disabled; "
                       "create it (CREATE PUBLICATION ... FOR TABLE ...) or choose all_tables/filtered")
                raise TerminalSourceError(msg)
            return
        if mode == "all_tables":
            if existing is None:
                self._rows(f"CREATE PUBLICATION {publication} FOR ALL TABLES", doing="creating the publication")
            return
        if not tables:
            msg = "publication.autocreate.mode=filtered but no table matches the include/exclude lists"
            raise TerminalSourceError(msg)
        if existing is None:
            self._rows(f"CREATE PUBLICATION {publication} FOR TABLE {quoted}", doing="creating the publication")
        elif existing != set(tables):
            self._rows(f"ALTER PUBLICATION {publication} SET TABLE {quoted}", doing="altering the publication")

    def slot_state(self, slot: str) -> SlotState:
        """The state of replication slot ``slot`` (``exists=False`` when there is none)."""
        rows = self._rows(
            "SELECT active_pid, confirmed_flush_lsn::text, plugin FROM pg_replication_slots WHERE slot_name = %s",
            (slot,),
        )
        if not rows:
            return SlotState(exists=False)
        pid, flushed, plugin = rows[0]
        return SlotState(True, pid, parse_lsn(flushed) if flushed else None, plugin)

    def ensure_slot(self, slot: str) -> SlotState:
        """Create the pgoutput slot when missing; refuse a slot of another plugin."""
        state = self.slot_state(slot)
        if not state.exists:
            self._rows("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,),
                       doing=f"creating replication slot {slot!r}")
            state = self.slot_state(slot)
        elif state.plugin != "pgoutput":
            msg = f"replication slot {slot!r} uses plugin {state.plugin!r}; signaller needs a pgoutput slot"
            raise TerminalSourceError(msg)
        return state

    def drop_slot(self, slot: str) -> None:
        """Drop replication slot ``slot`` if it exists (nothing happens otherwise); ``SourceError`` if it is in use."""
        self._rows("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
                   (slot,), doing=f"dropping replication slot {slot!r}")


def _pg_array(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    text = str(value).strip("{}")
    return [part.strip('"') for part in text.split(",")] if text else []
