"""What one micro-batch materializes, released when the batch ends.

A local checkpoint (``DataFrame.localCheckpoint``) keeps its row blocks in the block manager until
Spark's ``ContextCleaner`` notices that nothing references its RDD any more, which takes a
garbage collection of the driver's JVM after the Python side has dropped its references. Until
then the blocks stay on the heap: in-process on the bench's 100,000-change batches, the
checkpoints of two earlier batches (~95 MB) were still held when a batch ended. Released at the
end of their batch, none are (measured the same way); the batch times and the collector's pauses
did not change measurably, so this is about memory held, not speed.

:class:`BatchCache` checkpoints and caches for one batch and releases everything in
:meth:`release` (the job calls it in the batch's ``finally``). Not thread-safe: one per
``BatchApplier``, used from the batch's thread. After ``release`` the DataFrames it returned must
not be used again (their blocks are gone; Spark would recompute or fail).
"""

from __future__ import annotations

from typing import Any


class BatchCache:
    """Checkpoints and caches of the current batch (see the module docstring)."""

    def __init__(self) -> None:
        self._checkpoints: list[tuple[Any, Any]] = []  # (DataFrame, the JVM RDD whose blocks hold it)
        self._frames: list[Any] = []  # cached DataFrames

    def checkpoint(self, frame: Any, eager: bool) -> Any:
        """``frame.localCheckpoint(eager)``, its blocks released by :meth:`release`."""
        checkpointed = frame.localCheckpoint(eager=eager)
        # Spark's Dataset.checkpoint wraps the checkpointed RDD in a LogicalRDD; unpersisting that
        # RDD drops the checkpoint's blocks.
        self._checkpoints.append((checkpointed, checkpointed._jdf.queryExecution().analyzed().rdd()))
        return checkpointed

    def persist(self, frame: Any) -> Any:
        """``frame.persist()`` (Spark's default level), unpersisted by :meth:`release` or :meth:`drop`."""
        cached = frame.persist()
        self._frames.append(cached)
        return cached

    def drop(self, frame: Any) -> None:
        """Release one DataFrame of :meth:`persist` or :meth:`checkpoint` now (non-blocking)."""
        for i, (kept, rdd) in enumerate(self._checkpoints):
            if kept is frame:
                rdd.unpersist(False)
                del self._checkpoints[i]
                return
        frame.unpersist()
        self._frames = [f for f in self._frames if f is not frame]

    @property
    def held(self) -> int:
        """How many checkpoints and caches :meth:`release` would release."""
        return len(self._checkpoints) + len(self._frames)

    def release(self) -> None:
        """Drop every checkpoint and cache taken since the last release (non-blocking). Safe to
        call again, and when nothing was taken."""
        checkpoints, frames, self._checkpoints, self._frames = self._checkpoints, self._frames, [], []
        for _, rdd in checkpoints:
            rdd.unpersist(False)
        for frame in frames:
            frame.unpersist()
