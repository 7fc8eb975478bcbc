"""Frozen value types shared by every package: no I/O here."""

from signaller.model.events import ChangeEvent, Op
from signaller.model.positions import format_lsn, parse_lsn
from signaller.model.tables import Column, TableId, TableSchema

__all__ = ["ChangeEvent", "Column", "Op", "TableId", "TableSchema", "format_lsn", "parse_lsn"]
