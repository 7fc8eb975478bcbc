"""The DBLog window: the rows of one chunk, identified by their chunk-key values, between the open
and close watermarks. Pure logic, no I/O.

Contract: ``fill`` happens after the open watermark was written and before the close watermark
was written. Stream events arriving before the open marker are ignored (the chunk SELECT already
saw their effect); while the window is open, every stream event for a buffered identity removes
the rows with that identity (the stream carries a state at least as new); ``close`` returns the
remaining rows in chunk order and empties the window. A marker of another chunk (left over from
before a restart) does nothing.

The identity of a row is its chunking key (primary key, ``message.key.columns`` or the signal's
``surrogate-key``), never the message key: a keyless table has an empty message key, and rows
sharing one identity would collapse into one. ``fill`` never drops a row, even if two rows share
an identity; ``on_stream_key`` says how many rows it removed, so the caller can account for every
row read (a stream image supersedes exactly one row; more than one means the identity was
ambiguous and rows were lost).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

Row = TypeVar("Row")


class Window(Generic[Row]):
    """The rows of one chunk between its watermarks (see the module docstring); ``Row`` is the caller's row type. Pure
    logic, used from one thread."""

    def __init__(self) -> None:
        self.chunk_id: str | None = None
        self.table: str | None = None
        self.is_open = False
        self._rows: list[Row] = []
        self._index: dict[Hashable, list[int]] = {}
        self._gone: set[int] = set()

    def fill(self, chunk_id: str, table: str, rows: Iterable[tuple[Hashable, Row]]) -> None:
        """Buffer a chunk (``(identity, row)`` pairs in chunk order) for ``chunk_id``; keeps every row."""
        self.chunk_id, self.table, self.is_open = chunk_id, table, False
        self._rows, self._index, self._gone = [], {}, set()
        for identity, row in rows:
            self._index.setdefault(identity, []).append(len(self._rows))
            self._rows.append(row)

    def expect(self, chunk_id: str) -> None:
        """A window with no rows (the chunk was empty); its markers still open and close it."""
        self.fill(chunk_id, "", ())

    def matches(self, marker_id: str) -> bool:
        """Whether ``marker_id`` belongs to the buffered chunk (it starts with the chunk id)."""
        return self.chunk_id is not None and marker_id.startswith(self.chunk_id)

    def open(self, marker_id: str) -> bool:
        """The chunk's open marker came back: from now on streamed changes evict its rows; False, changing nothing, for
        a marker of another chunk."""
        if not self.matches(marker_id):
            return False
        self.is_open = True
        return True

    def on_stream_key(self, table: str, key: Hashable) -> int:
        """A streamed change of ``table`` whose row image has identity ``key``: removes the buffered
        rows with that identity while the window is open; returns how many it removed."""
        if not self.is_open or table != self.table:
            return 0
        positions = self._index.pop(key, ())
        self._gone.update(positions)
        return len(positions)

    def close(self, marker_id: str) -> list[Row] | None:
        """Rows to emit, or None if the marker belongs to another chunk."""
        if not self.matches(marker_id):
            return None
        rows = [row for position, row in enumerate(self._rows) if position not in self._gone]
        self._rows, self._index, self._gone = [], {}, set()
        self.chunk_id, self.table, self.is_open = None, None, False
        return rows

    def __len__(self) -> int:
        return len(self._rows) - len(self._gone)

    @property
    def pending(self) -> bool:
        """A chunk was read and its close marker has not come back yet."""
        return self.chunk_id is not None
