"""How hard a snapshot's READs press on the capture loop: gently while the stream carries changes, at full
speed while it is quiet.

A window's READs share one interpreter and one Kafka producer with the stream. Two settings trade the
snapshot's speed against a live change's wait:

* the **fetch pace** (:class:`~signaller.snapshot.reading.FetchPace`): a streamed chunk's rest is fetched in
  slices, each parsed on the worker thread while it holds the interpreter lock (about 0.5 µs a row), so a
  4,096-row slice can hold a live change up for about 2 ms, a 1,024-row one for 0.5 ms;
* the **queued records**: no READ is emitted while the producer holds this many records, which bounds what
  a live change produced meanwhile waits behind (its batch goes out after those READs) and the memory a
  window takes in the producer's queue.

:data:`SHARED` keeps the settings under which the bench's live latency during snapshots was measured
(10,000 queued records measured a live record's produce→consume p99 of up to 52 ms, 2,000 8-19 ms;
with READs produced in batches, 1,000 gave the same latencies and 5-10 % more READs/s at chunk 65,536 than
2,000; once the bench's loaded windows lasted 10 s, 600 against 1,000 gave a live p99 of 11.9 against 13.4 ms
at chunk 1,024 and 13.3 against 14.9 ms at 65,536, for 4 % and 2 % fewer READs/s, and 300 halved them).
:data:`QUIET` is for a stream with nothing to hold up: the loop had waited for fetched rows and for
Kafka's acknowledgements about a third of the time, and larger slices and a deeper queue took the bench's
1,000,000-row snapshot at chunk 65,536 from about 180,000 to 200,000-210,000 rows/s (sessions of the bench's
snapshot section on one machine; one run of the whole section each, with the chunk reader's cheaper string
caster: ``best_rows_per_s`` 173,029 -> 206,242). 8,192-row slices were no faster than 4,096; 2,000 queued
records gave about 6 % less than 4,000. The stream counts as busy for
:data:`QUIET_AFTER_S` after its last captured change; a change arriving during a quiet window switches the
pace back at the loop's next tick (the slice already being fetched finishes at the quiet pace).

Pure logic, on the capture loop's thread; nothing here survives a restart (a new session starts quiet).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from signaller.snapshot.engine import DEFAULT_FETCH_PACE
from signaller.snapshot.reading import FetchPace


@dataclass(frozen=True)
class SnapshotPace:
    """The fetch pace of a streamed chunk's rest and the producer queue depth at which READs wait."""

    fetch: FetchPace
    queued_records: int


SHARED = SnapshotPace(DEFAULT_FETCH_PACE, queued_records=600)
"""While the stream carries changes (the engine's own default fetch pace)."""
QUIET = SnapshotPace(FetchPace(rows=4096, ahead=8192), queued_records=4_000)
"""While it has carried none for :data:`QUIET_AFTER_S`."""
QUIET_AFTER_S = 1.0
"""How long after its last captured change the stream counts as quiet."""


class PaceKeeper:
    """Chooses the pace from a running count of captured changes (the caller counts; this compares)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._seen = 0
        self._busy_until = 0.0

    def pace(self, changes: int) -> SnapshotPace:
        """:data:`SHARED` if ``changes`` (a count that only grows) grew within the last :data:`QUIET_AFTER_S`,
        else :data:`QUIET`. Call it whenever READs are about to be fetched or emitted."""
        now = self._clock()
        if changes != self._seen:
            self._seen = changes
            self._busy_until = now + QUIET_AFTER_S
        return SHARED if now < self._busy_until else QUIET
