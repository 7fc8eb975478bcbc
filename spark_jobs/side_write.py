"""A Delta write that runs beside the batch's MERGE, on a thread of its own.

The tombstone append of a batch with deletes writes another table than the MERGE and needs none of
its results, yet took ~0.4 s of each 100,000-change batch of the bench (a small Spark job, then the
Delta commit and the snapshot update on the driver), while the cores sat mostly idle. Started
before the MERGE, it overlaps the MERGE's planning and file listing; the batch then waits only for
whatever is left of it.

:class:`SideWrite` runs one callable on a ``pyspark.InheritableThread`` (the batch thread's Spark
local properties, among them the job group Structured Streaming cancels a batch by, carry over),
with the jobs it starts tagged as ``phase`` of the batch's :class:`spark_jobs.phases.PhaseClock`
(if one is given).
:meth:`SideWrite.wait` joins it and raises what it raised; :meth:`SideWrite.join` (for ``finally``)
joins it without raising, so an error of the batch's own writes is the one reported.

Restart: the write must be idempotent on its own (the tombstone append carries its idempotent-write
id in its own transaction, ``spark_jobs.blind_append``, not in the session's configuration, which
the MERGE on the batch thread sets at the same time). A crash between the two commits replays
the batch: the committed one is skipped, the other is written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spark_jobs.phases import PhaseClock


class SideWrite:
    """``work`` started on its own thread at construction (see the module docstring). Call
    :meth:`wait` or :meth:`join` once, on the thread that created it."""

    def __init__(self, work: Callable[[], None], clock: PhaseClock | None, phase: str) -> None:
        from pyspark import InheritableThread

        self._error: BaseException | None = None

        def run() -> None:
            try:
                if clock is None:
                    work()
                else:
                    with clock.tagged(phase):
                        work()
            except BaseException as exc:  # handed to the batch's thread by wait()
                self._error = exc

        self._thread: Any = InheritableThread(target=run, name=f"signaller-{phase}", daemon=True)
        self._thread.start()

    def join(self) -> None:
        """Wait until the write has ended, successfully or not; never raises."""
        self._thread.join()

    def wait(self) -> None:
        """Wait until the write has ended; raise its exception if it failed."""
        self.join()
        if self._error is not None:
            raise self._error
