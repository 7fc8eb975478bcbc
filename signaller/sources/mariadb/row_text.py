"""A MariaDB column value as the server's text (a chunk row) → the Python value the binlog client gives.

A chunk query returns every value as the server's text (:data:`~signaller.sources.base.RawRow`; binary
values as their hex text); the stream gets the same row from the binlog, decoded by the binlog client
into Python values. :func:`binlog_value` turns the first into the second, so both go through the same
values conversion (the module that makes Debezium's value of a column's Python value) and a READ and a
streamed change of one row carry identical values:

* integers (``year`` too) → ``int``; ``decimal`` → ``Decimal``; ``double`` → ``float``; ``float`` →
  the ``float`` of its 32-bit value (the binlog stores 4 bytes; the server prints the shortest text);
* ``bit(n)`` → ``int``; binary strings, blobs and spatial values → ``bytes``;
* ``date`` → ``date``, ``datetime`` → naive ``datetime``, ``timestamp`` → ``datetime`` in UTC (the
  chunk connection's ``time_zone`` is UTC, the binlog's timestamps are UTC seconds), ``time`` →
  ``timedelta``; zero dates (``0000-00-00``) and dates with a zero part → None, as the binlog client
  gives them;
* ``set`` → ``set`` of its members; ``enum``, text types and ``json`` (MariaDB: text) → ``str``.

Pure; raises ``ValueError`` for text a column of that type cannot hold (never expected from the server).
"""

from __future__ import annotations

import datetime as dt
import struct
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

__all__ = ["MariaDbColumn", "binlog_value"]

_INTEGERS = frozenset({"tinyint", "smallint", "mediumint", "int", "integer", "bigint", "year"})
_BYTES = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "geometry", "point",
                    "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection"})
_UTC = dt.UTC


@dataclass(frozen=True)
class MariaDbColumn:
    """One column as ``information_schema.COLUMNS`` describes it: ``data_type`` is ``DATA_TYPE``
    (``int``, ``varchar``...), ``column_type`` the full ``COLUMN_TYPE`` (``int(10) unsigned``,
    ``enum('a','b')``), ``charset`` its character set (None for non-text types)."""

    name: str
    position: int
    data_type: str
    column_type: str
    nullable: bool
    charset: str | None = None
    numeric_scale: int | None = None
    datetime_precision: int | None = None

    @property
    def unsigned(self) -> bool:
        """Whether the column is an unsigned number."""
        return " unsigned" in self.column_type.lower()


def _date(text: str) -> dt.date | None:
    year, month, day = (int(part) for part in text.split("-"))
    if not (year and month and day):
        return None
    return dt.date(year, month, day)


def _datetime(text: str) -> dt.datetime | None:
    day, _, clock = text.partition(" ")
    date = _date(day)
    if date is None:
        return None
    hms, _, fraction = clock.partition(".")
    hour, minute, second = (int(part) for part in hms.split(":"))
    micros = int((fraction + "000000")[:6]) if fraction else 0
    return dt.datetime(date.year, date.month, date.day, hour, minute, second, micros)


def _time(text: str) -> dt.timedelta:
    negative = text.startswith("-")
    hms, _, fraction = text.lstrip("-").partition(".")
    hours, minutes, seconds = (int(part) for part in hms.split(":"))
    micros = int((fraction + "000000")[:6]) if fraction else 0
    delta = dt.timedelta(hours=hours, minutes=minutes, seconds=seconds, microseconds=micros)
    return -delta if negative else delta


def binlog_value(column: MariaDbColumn, text: str | None) -> Any:
    """The Python value the binlog client gives for the column value the server printed as ``text``
    (hex text for binary types, see :func:`~signaller.sources.mariadb.chunk_sql.binary_type`); None
    for SQL NULL. See the module docstring for each type."""
    if text is None:
        return None
    kind = column.data_type.lower()
    if kind in _INTEGERS:
        return int(text)
    if kind in ("decimal", "numeric"):
        return Decimal(text)
    if kind == "double":
        return float(text)
    if kind == "float":
        return struct.unpack("<f", struct.pack("<f", float(text)))[0]
    if kind == "bit":
        return int(text or "0", 16)
    if kind in _BYTES:
        return bytes.fromhex(text)
    if kind == "date":
        return _date(text)
    if kind == "datetime":
        return _datetime(text)
    if kind == "timestamp":
        stamp = _datetime(text)
        return None if stamp is None else stamp.replace(tzinfo=_UTC)
    if kind == "time":
        return _time(text)
    if kind == "set":
        return set(text.split(",")) if text else set()
    return text
