"""Table identity and the column layout the capture needs to build keys and envelopes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, order=True)
class TableId:
    """A captured table, ``schema.table`` (Debezium's data-collection id for PostgreSQL)."""

    schema: str
    table: str

    def __str__(self) -> str:
        return f"{self.schema}.{self.table}"

    @classmethod
    def parse(cls, text: str, default_schema: str = "public") -> TableId:
        """``"public.orders"`` or ``"orders"`` (schema defaults to ``public``)."""
        schema, sep, table = text.rpartition(".")
        if not table:
            msg = f"not a table name: {text!r} (expected 'schema.table' or 'table')"
            raise ValueError(msg)
        return cls(schema if sep else default_schema, table)


@dataclass(frozen=True, slots=True)
class Column:
    """One column as the log and the catalog describe it.

    ``type_name`` is the PostgreSQL type name as ``format_type`` prints it without modifiers
    (``int4``/``integer`` normalised to the catalog's ``typname``, e.g. ``int4``, ``numeric``,
    ``_int4`` for arrays); ``type_modifier`` is ``atttypmod`` (-1 when none); ``enum_values``
    is set for enum types.
    """

    name: str
    type_oid: int
    type_name: str
    type_modifier: int = -1
    optional: bool = True
    is_key: bool = False
    enum_values: tuple[str, ...] | None = None
    element_type_name: str | None = None
    default_text: str | None = None
    """The column's constant default as value text (see ``sources.postgres.defaults``), or None."""


@dataclass(frozen=True, slots=True)
class TableSchema:
    """A table's columns in ordinal order and its key.

    ``key`` names the Kafka key columns in key order (Debezium orders the key struct by the
    primary key's column order, not the table's); when empty, the columns flagged ``is_key``
    in table order are the key. ``key_columns`` is empty for a keyless table.
    """

    table_id: TableId
    columns: tuple[Column, ...]
    key: tuple[str, ...] = ()

    @property
    def key_columns(self) -> tuple[str, ...]:
        """The Kafka key columns in key order: ``key`` if given, else the columns flagged ``is_key``; empty for a
        keyless table."""
        return self.key or tuple(c.name for c in self.columns if c.is_key)
