"""A chunk's read and the streamed changes it may not have seen yet.

A chunk is read in a snapshot of the database whose visibility the read reports
(``TransactionVisibility``: ``ChunkReader.read_chunk_visible`` in read-only mode, ``read_chunk_seen`` or
``read_chunk_streaming`` in watermark mode). Being streamed does not make a transaction visible:
PostgreSQL writes and flushes a commit record (which logical decoding may then send at once) before
the committing backend leaves the process array, and only then do new snapshots see it (MariaDB,
likewise, writes a transaction to the binlog before the storage engine commits it); under CPU load
that gap is long enough for the capture loop to stream the change and start the next chunk's read
before it closes. Such a change was streamed before its window opened (in watermark mode: its commit
precedes the open marker in the log, yet the chunk query, run after the open marker committed, does
not see it), yet the chunk shows the row as it was before the change: its READ would reach Kafka
after the change and set the row back (a deleted row comes back). Debezium has the same exposure.

So the engine keeps the changes streamed lately (:class:`RecentChanges`) and, when a read returns,
matches every one its snapshot did not see (:func:`unseen`) against the window, wherever it was
streamed relative to the window; a change streamed after the read returned but before the open
marker is matched as it comes. Read-only mode has no open marker: a streamed change supersedes the
chunk's row only if unseen. Watermark mode keeps DBLog's rule from the open marker on (every change
supersedes), so its READs are Debezium's except for the rows such a change supersedes. After a read,
only the changes that read did not see are kept (a snapshot taken later sees whatever an earlier one
saw); in between, the newest ``limit`` changes are kept (the oldest go first: a change sits in the
gap only while its transaction commits). Pure logic, one thread; nothing here survives a restart (a
restarted session streams from the stored offsets, and chunks are read again after the last emitted
key).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from signaller.model import ChangeEvent
from signaller.sources.base import TransactionVisibility

RECENT_CHANGES = 8192
"""Changes kept between two reads (about a few MB of events): far more than a commit's visibility gap
spans, at any rate the stream can deliver."""


def unseen(visible: TransactionVisibility | None, event: ChangeEvent) -> bool:
    """Whether a read with ``visible`` did not see ``event``'s transaction (a change without a transaction id
    counts as unseen); False while the read's visibility is not known (``visible`` None)."""
    return visible is not None and (event.tx_id is None or not visible.sees(event.tx_id))


class RecentChanges:
    """The changes streamed lately, oldest first, at most ``limit`` (see the module docstring)."""

    def __init__(self, limit: int = RECENT_CHANGES) -> None:
        self._changes: deque[ChangeEvent] = deque(maxlen=limit)

    def add(self, event: ChangeEvent) -> None:
        """A change was streamed (call in stream order); the oldest one kept goes when ``limit`` is reached."""
        self._changes.append(event)

    def unseen_by(self, visible: TransactionVisibility) -> Iterator[ChangeEvent]:
        """The changes a read with ``visible`` did not see, oldest first; the ones it saw are forgotten (every
        later read sees them too). A change without a transaction id counts as unseen."""
        kept: list[ChangeEvent] = []
        tx_id, seen = None, False
        for event in self._changes:  # a transaction's changes come together: one look per transaction
            if event.tx_id != tx_id or tx_id is None:
                tx_id = event.tx_id
                seen = tx_id is not None and visible.sees(tx_id)
            if not seen:
                kept.append(event)
        self._changes.clear()
        self._changes.extend(kept)
        return iter(kept)

    def clear(self) -> None:
        """Forget every change."""
        self._changes.clear()

    def __len__(self) -> int:
        return len(self._changes)
