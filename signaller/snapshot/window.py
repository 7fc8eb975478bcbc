"""The DBLog window: the rows of one chunk, keyed by message key, between the open and close
watermarks. Pure logic, no I/O.

Contract: ``fill`` happens after the open watermark was written and before the close watermark
was written. Stream events arriving before the open marker are ignored (the chunk SELECT already
saw their effect); while the window is open, every stream event for a buffered key removes that
row (the stream carries a state at least as new); ``close`` returns the remaining rows in chunk
order and empties the window. A marker of another chunk (left over from before a restart) does
nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, TypeVar

Row = TypeVar("Row")


class Window(Generic[Row]):
    def __init__(self) -> None:
        self.chunk_id: str | None = None
        self.table: str | None = None
        self.is_open = False
        self._rows: dict[bytes, Row] = {}

    def fill(self, chunk_id: str, table: str, rows: Iterable[tuple[bytes, Row]]) -> None:
        """Buffer a chunk (``(message key, row)`` pairs in chunk order) for ``chunk_id``."""
        self.chunk_id, self.table, self.is_open = chunk_id, table, False
        self._rows = dict(rows)

    def expect(self, chunk_id: str) -> None:
        """A window with no rows (the chunk was empty); its markers still open and close it."""
        self.fill(chunk_id, "", ())

    def matches(self, marker_id: str) -> bool:
        return self.chunk_id is not None and marker_id.startswith(self.chunk_id)

    def open(self, marker_id: str) -> bool:
        if not self.matches(marker_id):
            return False
        self.is_open = True
        return True

    def on_stream_key(self, table: str, key: bytes) -> bool:
        """A streamed change of ``table`` with message key ``key``; True if it evicted a row."""
        if self.is_open and table == self.table:
            return self._rows.pop(key, None) is not None
        return False

    def close(self, marker_id: str) -> list[Row] | None:
        """Rows to emit, or None if the marker belongs to another chunk."""
        if not self.matches(marker_id):
            return None
        rows = list(self._rows.values())
        self._rows = {}
        self.chunk_id, self.table, self.is_open = None, None, False
        return rows

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def pending(self) -> bool:
        """A chunk was read and its close marker has not come back yet."""
        return self.chunk_id is not None
