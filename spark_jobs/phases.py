"""Where a micro-batch's time goes: wall time, Spark jobs, stages and tasks per phase.

:class:`PhaseClock` times the driver-side phases of one batch (``with clock.phase("merge"): ...``).
Spark is lazy: a phase is charged with whatever its own actions compute, including lazy work of
earlier steps they pull in (the dedup window, for example, runs inside the action that first needs
it). Each phase tags the Spark jobs it starts (``SparkContext.addJobTag``, thread-local, so it does
not touch the job group Structured Streaming uses to cancel a batch); :meth:`PhaseClock.spark_work`
asks the status tracker afterwards (no listener) how many jobs, stages and tasks each phase ran.
Time outside every phase is reported as ``other``.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_TAGS = itertools.count()


class PhaseClock:
    """Phases of one batch in the order they first ran; a phase entered twice adds up."""

    def __init__(self, spark: Any, batch_id: int) -> None:
        self._sc = spark.sparkContext
        self._started = time.perf_counter()
        self._ended: float | None = None
        self.batch_id = batch_id
        self.ms: dict[str, float] = {}
        self._tags: dict[str, list[str]] = {}
        self._current: str | None = None

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        if self._current is not None:  # nested: the outer phase keeps the time and the jobs
            yield
            return
        self._current = name
        t0 = time.perf_counter()
        try:
            with self.tagged(name):
                yield
        finally:
            self.ms[name] = self.ms.get(name, 0.0) + (time.perf_counter() - t0) * 1000
            self._current = None

    @contextmanager
    def tagged(self, name: str) -> Iterator[None]:
        """Tag the Spark jobs the current thread starts as phase ``name`` without timing them: for
        work on another thread (``spark_jobs.side_write``), whose wait the batch's thread times;
        :meth:`phase` tags its own jobs with it."""
        tag = f"signaller-apply-{self.batch_id}-{name}-{next(_TAGS)}"
        self._sc.addJobTag(tag)
        try:
            yield
        finally:
            self._sc.removeJobTag(tag)
            self._tags.setdefault(name, []).append(tag)

    def finish(self) -> None:
        self._ended = time.perf_counter()

    @property
    def total_ms(self) -> float:
        return ((self._ended or time.perf_counter()) - self._started) * 1000

    def breakdown(self) -> dict[str, float]:
        """Milliseconds per phase, plus ``other`` (the rest of the batch) and ``total``, rounded to
        0.1 ms so that the parts add up to the total (rounded separately, the total could fall
        0.1 ms short of its parts)."""
        out = {name: round(ms, 1) for name, ms in self.ms.items()}
        out["other"] = round(max(self.total_ms - sum(out.values()), 0.0), 1)
        out["total"] = round(sum(out.values()), 1)
        return out

    def spark_work(self) -> dict[str, dict[str, int]]:
        """``{phase: {"jobs", "stages", "tasks"}}`` from the status tracker (skipped stages are not
        counted). Call it after the batch: the tracker is fed asynchronously by the listener bus."""
        tracker = self._sc._jsc.sc().statusTracker()
        out: dict[str, dict[str, int]] = {}
        for name, tags in self._tags.items():
            jobs = sorted({int(j) for tag in tags for j in tracker.getJobIdsForTag(tag)})
            stages = tasks = 0
            for job in jobs:
                info = tracker.getJobInfo(job)
                if info.isEmpty():
                    continue
                for stage in info.get().stageIds():
                    stage_info = tracker.getStageInfo(int(stage))
                    if stage_info.isEmpty() or stage_info.get().numCompletedTasks() == 0:
                        continue  # skipped (its output was reused) or never ran
                    stages += 1
                    tasks += int(stage_info.get().numTasks())
            out[name] = {"jobs": len(jobs), "stages": stages, "tasks": tasks}
        return out
