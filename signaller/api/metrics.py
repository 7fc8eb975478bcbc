"""Prometheus metrics of one sidecar, in a registry of its own (never prometheus_client's global one).

The capture loop, the snapshot engine, the signal channels and the HTTP API update the metrics
through ``MetricsRegistry``'s methods; ``GET /metrics`` serves ``render()``. Every method is
thread-safe (prometheus_client locks each value) and cheap enough to call once per event batch:
labelled children are looked up once and cached, so the hot path is a dict lookup plus an add.

Metrics (names as exposed):

* ``signaller_events_total{table,op}``: change events published (``op`` is Debezium's ``c``/``u``/``d``/``r``/``t``).
* ``signaller_snapshot_rows_total{table}``: rows emitted by incremental snapshots (READ events).
* ``signaller_signals_total{channel,outcome}``: signals received, by channel and outcome
  (``accepted``, ``rejected``, ``invalid``, ``timeout``...).
* ``signaller_values_unrepresentable_total{table,column,kind}``: captured values the configured mode
  cannot express, published as null (or a NOT NULL column's default/zero) instead (``kind``: ``nan``,
  ``infinity``, ``multidimensional_array``, ``out_of_range``).
* ``signaller_records_skipped_total{topic,reason}``: records not produced under
  ``event.processing.failure.handling.mode=warn|skip`` (``reason``: ``too_large``).
* ``signaller_committed_lsn``: the last LSN confirmed to PostgreSQL (as a float: exact up to 2**53).
* ``signaller_streaming_lag_seconds``: at the last acknowledgement, now minus the commit time of the
  last acknowledged event (Debezium's ``MilliSecondsBehindSource``, in seconds); it is not advanced
  while no events flow, so an idle database does not look like a lagging sidecar.
* ``signaller_kafka_in_flight``: records handed to the producer and not yet acknowledged.
* ``signaller_snapshot_chunk_seconds``: duration of one incremental-snapshot chunk (query + window).
"""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

CHUNK_SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, float("inf"))
"""Histogram buckets of ``signaller_snapshot_chunk_seconds``: chunks take milliseconds to a minute."""


class MetricsRegistry:
    """The sidecar's metrics (see the module docstring) in their own ``CollectorRegistry``.

    Two registries never share values, so tests and several sidecars in one process are isolated.
    ``content_type`` is the media type of ``render()``'s output: the classic text format 0.0.4, which
    every Prometheus version scrapes (all metric names are legacy-valid, so nothing needs escaping).
    """

    content_type: str = CONTENT_TYPE_PLAIN_0_0_4

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._events = Counter("signaller_events", "Change events published, by table and Debezium op.",
                               ["table", "op"], registry=self.registry)
        self._snapshot_rows = Counter("signaller_snapshot_rows", "Rows emitted by incremental snapshots, by table.",
                                      ["table"], registry=self.registry)
        self._signals = Counter("signaller_signals", "Signals received, by channel and outcome.",
                                ["channel", "outcome"], registry=self.registry)
        self._unrepresentable = Counter("signaller_values_unrepresentable",
                                        "Captured values the configured mode cannot express, written as null.",
                                        ["table", "column", "kind"], registry=self.registry)
        self._skipped = Counter("signaller_records_skipped", "Records not produced (event.processing.failure."
                                "handling.mode=warn|skip), by topic and reason.", ["topic", "reason"],
                                registry=self.registry)
        self._committed_lsn = Gauge("signaller_committed_lsn", "Last LSN confirmed to PostgreSQL.",
                                    registry=self.registry)
        self._lag = Gauge("signaller_streaming_lag_seconds",
                          "Now minus the commit time of the last acknowledged event, at acknowledgement.",
                          registry=self.registry)
        self._in_flight = Gauge("signaller_kafka_in_flight", "Records produced to Kafka and not yet acknowledged.",
                                registry=self.registry)
        self._chunk_seconds = Histogram("signaller_snapshot_chunk_seconds",
                                        "Duration of one incremental-snapshot chunk.",
                                        buckets=CHUNK_SECONDS_BUCKETS, registry=self.registry)
        # Label children, cached: ``labels()`` validates and hashes on every call.
        self._event_children: dict[tuple[str, str], Any] = {}
        self._row_children: dict[str, Any] = {}
        self._signal_children: dict[tuple[str, str], Any] = {}

    # -- counters --------------------------------------------------------------------------------------

    def count_events(self, table: str, op: str, count: int = 1) -> None:
        """Add ``count`` (>= 0) published change events of ``table`` (``schema.table``) with Debezium ``op``."""
        key = (table, op)
        child = self._event_children.get(key)
        if child is None:
            child = self._event_children.setdefault(key, self._events.labels(table, op))
        child.inc(count)

    def count_snapshot_rows(self, table: str, count: int) -> None:
        """Add ``count`` (>= 0) rows emitted by an incremental snapshot of ``table``."""
        child = self._row_children.get(table)
        if child is None:
            child = self._row_children.setdefault(table, self._snapshot_rows.labels(table))
        child.inc(count)

    def count_signal(self, channel: str, outcome: str) -> None:
        """Count one signal received on ``channel`` (``http``, ``kafka``, ``file``, ``source``) with ``outcome``.

        The HTTP API counts its own signals (``accepted``, ``rejected``, ``invalid``, ``timeout``,
        ``not_applied``, ``failed``); whoever reads the other channels counts theirs.
        """
        key = (channel, outcome)
        child = self._signal_children.get(key)
        if child is None:
            child = self._signal_children.setdefault(key, self._signals.labels(channel, outcome))
        child.inc()

    def count_unrepresentable(self, table: str, column: str, kind: str, count: int = 1) -> None:
        """Add ``count`` (>= 0) values of ``table``.``column`` that could not be expressed (``kind``)."""
        self._unrepresentable.labels(table, column, kind).inc(count)

    def count_skipped_record(self, topic: str, reason: str) -> None:
        """Count one record of ``topic`` that was not produced for ``reason`` (``too_large``)."""
        self._skipped.labels(topic, reason).inc()

    # -- gauges and histogram --------------------------------------------------------------------------

    def set_committed_lsn(self, lsn: int) -> None:
        """The LSN last confirmed to PostgreSQL (``flush_lsn`` of the standby status update)."""
        self._committed_lsn.set(lsn)

    def set_streaming_lag(self, commit_time: float, now: float | None = None) -> None:
        """Lag behind the source: ``now`` (default: the wall clock) minus ``commit_time``, both epoch seconds.

        Call it when an event is acknowledged by Kafka, with that event's transaction commit time.
        """
        current = time.time() if now is None else now
        self._lag.set(max(0.0, current - commit_time))

    def acknowledged(self, lsn: int, commit_time: float, now: float | None = None) -> None:
        """Shorthand for ``set_committed_lsn(lsn)`` and ``set_streaming_lag(commit_time, now)``."""
        self.set_committed_lsn(lsn)
        self.set_streaming_lag(commit_time, now)

    def set_kafka_in_flight(self, count: int) -> None:
        """Records handed to the producer that Kafka has not acknowledged yet."""
        self._in_flight.set(count)

    def observe_chunk(self, seconds: float) -> None:
        """Record the duration of one incremental-snapshot chunk (chunk query to window close)."""
        self._chunk_seconds.observe(seconds)

    # -- exposition ------------------------------------------------------------------------------------

    def render(self) -> bytes:
        """Every metric in Prometheus' text exposition format (media type ``content_type``)."""
        data: bytes = generate_latest(self.registry)
        return data
