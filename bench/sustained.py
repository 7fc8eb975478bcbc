"""Sustained load on the apply job: does its lag grow at the sidecar's maximum streaming rate?

``apply.sustained_lag_growing`` of issue 11. The apply section's worker runs the job's streaming
query (``spark_jobs.apply_changes.start_query``, the job's own settings and the section's trigger)
on a fresh topic over a copy of the cached 1,000,000-row table, while an :class:`OfferingProducer`
in this process offers the throughput runs' change mix (80 % updates of existing keys, 10 %
inserts, 10 % deletes, JSON with schemas) at ``rate`` changes/s for ``duration_s``, with the
sidecar's producer settings (idempotent, ``acks=all``, lz4, 5 ms linger).

The lag at time *t* is the records delivered to Kafka by then minus the records of the query's
micro-batches finished by then (the query's ``numInputRows`` per batch). The lag grows when it rose
by more than 5 % of what was offered between the end of the first third of the window and its end.
The offered rate is measured, not assumed: on a 2-core machine the producer shares the cores with
the broker and Spark, and may not reach ``rate``; the figures say what it reached.

Pure arithmetic (:func:`lag_figures`) apart from the I/O (:func:`sustained_session`).
"""

from __future__ import annotations

import bisect
import contextlib
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from confluent_kafka import Producer

from devtools import StackSettings
from signaller.config.model import PRODUCER_DEFAULTS
from signaller.sinks.kafka import SINK_DEFAULTS

SIDECAR_MAX_CHANGES_PER_S = 84_000
"""The sidecar's ``streaming.max_changes_per_s`` when the streaming section did not run in the same
bench run (issue 11 measured 83,760 on this machine)."""
GROWTH_TOLERANCE = 0.05
"""The lag "grows" when it rose by more than this share of the records offered meanwhile."""
MAX_OFFSETS_PER_TRIGGER = 500_000
"""The query's ``maxOffsetsPerTrigger`` here: a backlog never becomes one micro-batch larger than the
bench's 1g driver heap is sized for (the job's default is Spark's: no limit)."""
CHUNK = 2_000
"""Changes generated and produced at a time by the offering producer."""


class _EventSource(Protocol):
    topic: str

    def mixed(self, changes: int) -> list[tuple[bytes | None, bytes | None]]: ...


class _Worker(Protocol):
    def command(self, cmd: str, done: str, timeout_s: float, **fields: Any) -> tuple[dict[str, Any], int]: ...

    def reports_since(self, start: int, kind: str) -> list[dict[str, Any]]: ...


class OfferingProducer(threading.Thread):
    """Produces ``events.mixed`` changes at ``rate`` changes/s (Kafka tombstones of deletes on top)
    for ``duration_s`` or until halted; ``samples`` holds (``time.time()``, records delivered so
    far, tombstones included), one every ``CHUNK`` changes. Never more than ``rate``; less when the machine
    cannot generate and produce that fast."""

    def __init__(self, bootstrap_servers: str, events: _EventSource, rate: int, duration_s: float) -> None:
        super().__init__(daemon=True, name="offering-producer")
        self.events, self.rate, self.duration_s = events, rate, duration_s
        self.producer = Producer({**SINK_DEFAULTS, **PRODUCER_DEFAULTS, "bootstrap.servers": bootstrap_servers})
        self.halt = threading.Event()
        self.samples: list[tuple[float, int]] = []
        self.offered = 0
        self.delivered = 0
        self.errors: list[str] = []
        self.started_at = self.ended_at = 0.0

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.errors.append(str(err))
        else:  # Kafka tombstones too: the query's numInputRows counts every record
            self.delivered += 1

    def run(self) -> None:
        self.started_at = time.time()
        start = time.monotonic()
        end = start + self.duration_s
        while not self.halt.is_set():
            due = start + self.offered / self.rate
            if due >= end or (due > time.monotonic() and self.halt.wait(max(due - time.monotonic(), 0.0))):
                break
            for key, value in self.events.mixed(CHUNK):
                while True:
                    try:
                        self.producer.produce(self.events.topic, value=value, key=key, on_delivery=self._on_delivery)
                        break
                    except BufferError:
                        self.producer.poll(0.01)
            self.offered += CHUNK
            self.producer.poll(0)
            self.samples.append((time.time(), self.delivered))
        self.producer.flush(60)
        self.ended_at = time.time()
        self.samples.append((self.ended_at, self.delivered))


@dataclass(frozen=True)
class LagFigures:
    offered_per_s: float
    applied_per_s: float
    lag_start: int
    lag_end: int
    growth_per_s: float
    growing: bool
    batches_finished: int = 0
    """Micro-batches with records that finished inside the window: ``applied_per_s`` moves in steps of one."""


def _at(series: list[tuple[float, int]], when: float) -> int:
    """The value of a step series of (time, cumulative count) at ``when`` (0 before its first point)."""
    times = [t for t, _ in series]
    index = bisect.bisect_right(times, when)
    return series[index - 1][1] if index else 0


def lag_figures(delivered: list[tuple[float, int]], batches: list[tuple[float, int]], started_at: float,
                ended_at: float, tolerance: float = GROWTH_TOLERANCE) -> LagFigures:
    """The lag figures of a window from ``started_at`` to ``ended_at``: ``delivered`` is (time,
    records delivered so far); ``batches`` is (finished at, records) per micro-batch of the query.
    The lag is measured at the end of the first third and at the end; it grows when it rose by more
    than ``tolerance`` times the records offered in between."""
    applied: list[tuple[float, int]] = []
    total = 0
    for finished, rows in sorted(batches):
        total += rows
        applied.append((finished, total))
    duration = ended_at - started_at
    if duration <= 0:
        msg = f"the window ends ({ended_at}) before it starts ({started_at})"
        raise ValueError(msg)
    first = started_at + duration / 3
    lag_start = _at(delivered, first) - _at(applied, first)
    lag_end = _at(delivered, ended_at) - _at(applied, ended_at)
    offered_between = _at(delivered, ended_at) - _at(delivered, first)
    growth = (lag_end - lag_start) / (ended_at - first)
    return LagFigures(
        offered_per_s=_at(delivered, ended_at) / duration,
        applied_per_s=_at(applied, ended_at) / duration,
        lag_start=lag_start, lag_end=lag_end, growth_per_s=growth,
        growing=lag_end - lag_start > tolerance * offered_between,
        batches_finished=sum(1 for finished, rows in batches if rows and started_at < finished <= ended_at),
    )


def sustained_session(settings: StackSettings, worker: _Worker, cached: Path, events: _EventSource, rate: int,
                      duration_s: float, trigger: str, table_dir: Path, admin_topics: Any,
                      max_offsets_per_trigger: int | None = MAX_OFFSETS_PER_TRIGGER) -> LagFigures:
    """One sustained window: the stream on a copy of ``cached`` (placed at ``table_dir`` relative
    to a fresh target root), ``rate`` changes/s offered for ``duration_s``. ``admin_topics(create=,
    delete=)`` creates and deletes the topic. The query is stopped before returning."""
    root = Path(tempfile.mkdtemp(prefix="bench_sustained_"))
    producer: OfferingProducer | None = None
    streaming = False
    try:
        admin_topics(settings, create=[events.topic])
        shutil.copytree(cached, root / table_dir)
        _, seen = worker.command("stream", "stream_started", 300, topic=events.topic, target_root=str(root),
                                 checkpoint=str(root / "_checkpoint"), trigger=trigger,
                                 max_offsets_per_trigger=max_offsets_per_trigger)
        streaming = True
        producer = OfferingProducer(settings.bootstrap_servers, events, rate, duration_s)
        producer.start()
        producer.join(duration_s + 120)
        if producer.is_alive() or producer.errors:
            msg = f"the offering producer did not finish cleanly: {producer.errors[:3]}"
            raise RuntimeError(msg)
        batches = [(float(r["t"]), int(r["rows"] or 0)) for r in worker.reports_since(seen, "progress")]
        return lag_figures(producer.samples, batches, producer.started_at, producer.ended_at)
    finally:
        if producer is not None and producer.is_alive():
            producer.halt.set()
            producer.join(30)
        if streaming:
            with contextlib.suppress(Exception):  # the worker is stopped at the end of the section anyway
                worker.command("stop_stream", "stream_stopped", 300)
        admin_topics(settings, delete=[events.topic])
        shutil.rmtree(root, ignore_errors=True)
