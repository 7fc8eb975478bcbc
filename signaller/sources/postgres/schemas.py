"""PostgreSQL's table schema provider for snapshots, on the stream's own schema cache.

``PostgresSchemaProvider`` implements :class:`signaller.sources.base.TableSchemaProvider`: it lists and
describes tables from the catalog (``Catalog.tables``, ``Catalog.describe_table``), and derives a
described table's schema through the log reader's :class:`RelationCache` (``derive_schema``). One
cache for stream and chunks: the same type resolutions (a Type message in the stream refreshes them
for both), the same key rule (``message.key.columns`` included) and the same column filters, so a
READ and a streamed change of one row carry the same schema and Kafka key. The chunk side describes
the table as the catalog has it *now* (the chunk query reads the table now); it never replaces the
stream's entry, which describes the tuples still in the log.

Call it on the capture loop's thread; it raises ``SourceError`` when the catalog cannot be read. It
keeps no state of its own: on restart a new session builds a new one on the new reader's cache.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

from signaller.config import SignallerConfig
from signaller.model import ChangeEvent, TableId
from signaller.sources.base import TableDescription, TableRows, TableSchemaProvider
from signaller.sources.postgres.catalog import PostgresTableInfo
from signaller.sources.postgres.codecs import TypeModes
from signaller.sources.postgres.reader import Change, RelationPlan, make_plan, modes_of, row_from_tuple
from signaller.sources.postgres.relations import KnownColumns, RelationCache
from signaller.sources.postgres.rendering import PostgresReadRendering, read_rendering


class CatalogLookups(Protocol):
    """The catalog look-ups the provider needs (``Catalog`` implements them)."""

    def tables(self) -> list[TableId]:
        """Every user table, sorted; ``SourceError`` if the catalog cannot be read."""
        ...

    def describe_table(self, table: TableId) -> PostgresTableInfo | None:
        """The table as the catalog has it now, None if it does not exist; ``SourceError`` on failure."""
        ...


@dataclass(frozen=True)
class PostgresTableRows(TableRows[Change]):
    """Chunk rows of one table, as described at one moment, turned into change-event rows by its
    ``RelationPlan`` (the plan the stream would build for the same relation)."""

    plan: RelationPlan
    modes: TypeModes

    @property
    def table_id(self) -> TableId:
        """The table the rows belong to."""
        return self.plan.table_id

    @property
    def columns(self) -> tuple[str, ...]:
        """The captured columns in table order: what a chunk query selects, in this order."""
        return tuple(c.name for c in self.plan.schema.columns)

    @property
    def emitted_columns(self) -> tuple[str, ...]:
        """The captured columns of a type the value converters emit."""
        return tuple(slot[1] for slot in self.plan.slots)

    @property
    def placeholders(self) -> Mapping[str, Any]:
        """The emitted columns whose unchanged TOASTed value has a non-null placeholder (``codecs.placeholder_for``)."""
        return {slot[1]: slot[3] for slot in self.plan.slots if slot[3] is not None}

    def row(self, values: Sequence[str | None]) -> dict[str, Any]:
        """The row values of one chunk row's text values (in :attr:`columns` order)."""
        return row_from_tuple(self.plan, values)

    def read_change(self, event: ChangeEvent) -> Change:
        """``event`` as a ``Change`` with this table's plan, as the capture loop sends streamed ones."""
        return Change.from_event(event, self.plan)

    @cached_property
    def rendering(self) -> PostgresReadRendering | None:
        """The chunk query's own rendering of this table's READs (:mod:`~signaller.sources.postgres.rendering`)."""
        return read_rendering(self.plan, self.modes)


class PostgresSchemaProvider(TableSchemaProvider[Change]):
    """Tables as PostgreSQL's catalog describes them now (see the module docstring)."""

    def __init__(self, config: SignallerConfig, catalog: CatalogLookups, relations: RelationCache) -> None:
        """Describe tables through ``catalog``; derive their schemas through ``relations``, the log
        reader's cache (``PostgresLogReader.relations``), with ``config``'s column filters and type modes."""
        self._config = config
        self._catalog = catalog
        self._relations = relations
        self._modes = modes_of(config.types)

    def tables(self) -> list[TableId]:
        """Every user table (ordinary and partitioned) in the database, sorted."""
        return self._catalog.tables()

    def describe(self, table: TableId) -> PostgresTableInfo | None:
        """The table's columns, types and keys as the catalog has them now, or None if it does not exist."""
        return self._catalog.describe_table(table)

    def rows_for(self, table: TableDescription) -> PostgresTableRows:
        """The plan for ``table`` (a ``PostgresTableInfo`` from :meth:`describe`; ``TypeError`` for any
        other description): its schema derived through the shared cache, its captured columns in the
        chunk query's order."""
        if not isinstance(table, PostgresTableInfo):
            msg = f"{type(table).__name__} is not a description of a PostgreSQL table (PostgresTableInfo)"
            raise TypeError(msg)
        table_id = table.table_id
        override = self._config.capture.key_columns_for(table_id.schema, table_id.table)
        known = KnownColumns(tuple(override) if override else table.primary_key, table.not_null,
                             table.column_defaults)  # read with the columns: no further catalog query
        schema = self._relations.derive_schema(table.relation, known)
        table_id, captured = schema.table_id, self._config.capture.is_column_captured
        selected = tuple(c.name for c in schema.columns if captured(table_id.schema, table_id.table, c.name))
        return PostgresTableRows(make_plan(schema, selected, self._config.capture, self._modes), self._modes)
