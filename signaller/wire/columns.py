"""What a source gives the wire format for each column: a :class:`ColumnCodec`.

Contract
--------
A source maps each column of a captured table to a :class:`ColumnCodec` once (per table
schema version); the envelope serializer builds its schemas from the codecs' ``schema`` nodes
and leaves out columns whose codec is not ``emitted``; the source turns each value into its
payload with ``convert`` before the event reaches the serializer. A :class:`CodecProvider` is
what :meth:`signaller.wire.envelope.EnvelopeSerializer.for_table` asks for the codecs (the
PostgreSQL source's is its ``TypeModes``).

Plain data, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeAlias

from signaller.model.tables import Column

__all__ = ["UNAVAILABLE_VALUE_PLACEHOLDER", "CodecProvider", "ColumnCodec", "Converter"]

UNAVAILABLE_VALUE_PLACEHOLDER: Final = "__debezium_unavailable_value"
"""Debezium's default ``unavailable.value.placeholder`` (unchanged TOASTed values)."""

Converter: TypeAlias = Callable[[str], Any]
"""Source text of one non-NULL value -> its JSON payload value."""


@dataclass(frozen=True, slots=True)
class ColumnCodec:
    """How one column appears in Debezium events.

    * ``schema``: the column's Kafka Connect schema node exactly as JsonConverter renders it
      (see :mod:`signaller.wire.connect`), without the ``field`` member a struct adds; a
      ``default`` member is written in place of a null value (JsonConverter's rule).
    * ``convert``: the source's text of a non-NULL value -> the JSON payload value (``int``,
      ``float``, ``str``, ``bool``, base64 ``str`` for bytes, ``dict`` for structs, ``list``
      for arrays); bad text raises :class:`~signaller.errors.DecodeError`.
    * ``emitted``: False for a column Debezium leaves out of its events.
    * ``toast_placeholder``: the payload Debezium emits for an unchanged TOASTed value of this
      column (``None`` where Debezium emits null or nothing valid).
    * ``null_value``: the payload a NULL of this column becomes: None for an optional column; for a
      NOT NULL one (whose NULL only a key-only old tuple brings) the schema default, else the type's
      fallback, as Debezium's converters do, so that the record still fits its schema.
    """

    schema: dict[str, Any]
    convert: Converter
    emitted: bool = True
    toast_placeholder: Any = None
    null_value: Any = None


class CodecProvider(Protocol):
    """Maps a source's columns to their :class:`ColumnCodec` (a source's type mapping)."""

    def codec(self, column: Column, table: str = "") -> ColumnCodec:
        """The codec of ``column`` of ``table`` (``schema.table``, named in warnings)."""
        ...
