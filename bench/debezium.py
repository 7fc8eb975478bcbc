"""The reference: the same workloads on Debezium's PostgreSQL connector (Kafka Connect standalone).

The Connect worker is :class:`devtools.debezium.DebeziumConnect` (Debezium 3.7.0.Final on
Kafka Connect 4.3.1, JsonConverter with schemas, ``-Xmx1g``), one worker per run, against the same
PostgreSQL and Kafka, with the same tables, publication layout (made by the bench,
``publication.autocreate.mode=disabled``), ``pgoutput`` slot, ``snapshot.mode=no_data`` and the same
writers as the sidecar's runs. A JVM cannot be instrumented from here, so everything is measured
from the outside, and the sidecar's comparable figures are measured the same way:

* throughput: topics stamp records with the broker's append time (:data:`bench.scratch.LOG_APPEND_TIME`);
  rate = changes ÷ (append time of the last record − the instant the slot became active, polled
  from ``pg_replication_slots`` every 20 ms: :class:`bench.scratch.SlotWatcher`);
* latency: the bench's consumer stamps each record when ``poll()`` returns it; latency = that −
  ``payload.source.ts_us`` (the commit timestamp PostgreSQL put in the commit record; Debezium
  carries it the same way);
* snapshot: from just before the signal row is inserted into the signal table until the broker
  appended the last READ of the table (every row is in Kafka), once Debezium has also sent its
  ``COMPLETED`` notification (``notification.enabled.channels=sink``);
* memory: the worker JVM's peak resident set (``VmHWM``) just before it is stopped.

The worker's producer gets the sidecar's producer settings (:data:`MATCHED_PRODUCER`: 1 MB
batches, 5 ms linger, lz4; ``acks=all`` and Connect's one request in flight stay as Connect sets
them): with Connect's stock producer (16 KB batches, no compression, one request in flight) a
~2.7 KB JSON-with-schema record leaves 5-6 records per produce request and the producer, not the
connector, caps the rate (``debezium_stock_producer_max_changes_per_s`` measures that once).

See ``bench/README.md`` for every reported field.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from bench.live import NARROW_TABLE, LiveSession, Stamper, latency_figures, preload, write_steadily
from bench.options import DebeziumOptions, SnapshotOptions, StreamingOptions
from bench.process import process_cpu_seconds
from bench.scratch import LOG_APPEND_TIME, Scratch, SlotWatcher
from bench.topics import TopicReader, rate_between
from devtools import StackSettings
from devtools.debezium import DebeziumConnect

MATCHED_PRODUCER: dict[str, str] = {
    "producer.override.batch.size": "1000000",
    "producer.override.linger.ms": "5",
    "producer.override.compression.type": "lz4",
}
"""Per-connector producer overrides (Connect's default override policy ``All`` accepts them):
librdkafka's defaults as the sidecar uses them (``batch.size`` 1,000,000 bytes, ``linger.ms`` 5)
and the sidecar's lz4."""
HEAP = "-Xmx1g"


def peak_rss_mb(pid: int | None) -> float:
    """``VmHWM`` of ``pid`` in MiB (NaN if unknown)."""
    if pid is None:
        return float("nan")
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class Worker:
    """One Connect worker running Debezium for ``scratch`` (work directory ``<scratch>/connect``)."""

    def __init__(self, settings: StackSettings, scratch: Scratch, connector: dict[str, str],
                 stock_producer: bool = False) -> None:
        properties = {**connector, **({} if stock_producer else MATCHED_PRODUCER)}
        self.connect = DebeziumConnect(settings, properties, scratch.workdir / "connect", name=scratch.name,
                                       heap=HEAP)
        self.spawned_at = 0.0

    def start(self) -> None:
        self.spawned_at = time.time()
        try:
            self.connect.start()
        except Exception as exc:
            tail = "\n".join(self.connect.log_text().splitlines()[-30:])
            self.connect.stop()
            raise RuntimeError(f"Debezium did not start: {exc}\n{tail}") from exc

    def cpu_s(self) -> float:
        return process_cpu_seconds(self.connect.pid)

    def stop(self) -> float:
        """Stop the worker; returns its peak RSS (MiB)."""
        peak = peak_rss_mb(self.connect.pid)
        self.connect.stop()
        return peak

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.connect.log_text().splitlines()[-lines:])


def _connector(scratch: Scratch, tables: list[str], **extra: str) -> dict[str, str]:
    return {
        "topic.prefix": scratch.topic_prefix,
        "slot.name": scratch.name,
        "publication.name": scratch.name,
        "publication.autocreate.mode": "disabled",
        "table.include.list": ",".join(f"public.{t}" for t in tables),
        "snapshot.mode": "no_data",
        **extra,
    }


# --------------------------------------------------------------------------------------------
# Streaming: throughput, then latency in the same worker
# --------------------------------------------------------------------------------------------


def streaming_run(settings: StackSettings, options: StreamingOptions, changes: int, latency: bool = True,
                  stock_producer: bool = False) -> dict[str, float]:
    """The sidecar's throughput workload (``changes`` preloaded into the slot, then the worker
    starts), then, in the same worker, its latency workload (``options.rate`` changes/s)."""
    scratch = Scratch(settings, "dbzt", NARROW_TABLE)
    worker: Worker | None = None
    stamper: Stamper | None = None
    try:
        scratch.create()
        topic = scratch.data_topic
        scratch.create_topic(topic, config=LOG_APPEND_TIME)
        preload(scratch, changes, options.tx_rows)
        worker = Worker(settings, scratch, _connector(scratch, [scratch.name]), stock_producer=stock_producer)
        watcher = SlotWatcher(settings, scratch.name, cpu_reader=worker.cpu_s)
        watcher.start()
        worker.start()
        with TopicReader(settings) as reader:
            reader.wait_for_count(topic, changes, 900)
            cpu = worker.cpu_s()
            slot_active = watcher.result()
            first = reader.append_time(topic, 0)
            last = reader.append_time(topic, changes - 1)
            if (high := reader.high_watermark(topic)) != changes:
                raise RuntimeError(f"Debezium wrote {high} records for {changes} changes")
        result = {
            "max_changes_per_s": rate_between(changes, slot_active, last),
            "startup_to_first_record_s": first - worker.spawned_at,
            "cpu_us_per_change": (cpu - watcher.cpu_at_activation) / changes * 1e6,
        }
        if latency:
            stamper = Stamper(settings, topic, offset=changes)
            stamper.start()
            scratch.sql(f"INSERT INTO public.{scratch.name} VALUES (0, 0, 'ready')")
            deadline = time.monotonic() + 60
            while not stamper.stamps and time.monotonic() < deadline:
                time.sleep(0.01)
            if not stamper.stamps:
                raise RuntimeError(f"Debezium did not publish the first live row\n{worker.log_tail()}")
            window_start_us = time.time_ns() // 1000 + int(options.warmup_s * 1e6)
            rows, achieved = write_steadily(scratch, options.rate, options.latency_tx_rows,
                                             options.warmup_s + options.duration_s, changes + 1)
            window_end_us = time.time_ns() // 1000
            deadline = time.monotonic() + 60
            while len(stamper.stamps) < rows + 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            stamper.stop_event.set()
            stamper.join(10)
            result.update(latency_figures(stamper.stamps, window_start_us, window_end_us, rows + 1, rows / achieved))
        result["rss_peak_mb"] = worker.stop()
        return result
    finally:
        if stamper is not None:
            stamper.stop_event.set()
            stamper.join(10)
        if worker is not None:
            worker.stop()
        scratch.cleanup()


# --------------------------------------------------------------------------------------------
# Snapshot: idle live latency, the whole table, a key range under live load, in one worker
# --------------------------------------------------------------------------------------------


class _Notifications(threading.Thread):
    """Consumes Debezium's notification topic (sink channel); keeps every payload."""

    def __init__(self, settings: StackSettings, topic: str) -> None:
        super().__init__(daemon=True, name="bench-notifications")
        self.consumer = Consumer({"bootstrap.servers": settings.bootstrap_servers,
                                  "group.id": f"bench-{uuid.uuid4().hex}", "enable.auto.commit": False,
                                  "fetch.wait.max.ms": 100})
        self.consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        self.payloads: list[dict[str, Any]] = []
        self.changed = threading.Condition()
        self.halt = threading.Event()

    def run(self) -> None:
        try:
            while not self.halt.is_set():
                msg = self.consumer.poll(0.1)
                if msg is None or msg.error():
                    continue
                value = msg.value()
                if value is None:
                    continue
                payload = orjson.loads(value).get("payload") or {}
                with self.changed:
                    self.payloads.append(payload)
                    self.changed.notify_all()
        finally:
            self.consumer.close()

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        with self.changed:
            return [p for p in self.payloads if p.get("type") == kind]

    def wait_count(self, kind: str, count: int, timeout_s: float) -> dict[str, Any]:
        """The ``count``-th notification of type ``kind`` (1-based); RuntimeError on timeout."""
        deadline = time.monotonic() + timeout_s
        with self.changed:
            while True:
                found = [p for p in self.payloads if p.get("type") == kind]
                if len(found) >= count:
                    return found[count - 1]
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise RuntimeError(f"no {kind} notification #{count} within {timeout_s:.0f}s "
                                       f"(seen: {[p.get('type') for p in self.payloads][-10:]})")
                self.changed.wait(remaining)

    def stop(self) -> None:
        self.halt.set()
        self.join(10)


class SnapshotSession(LiveSession):
    """A Connect worker capturing a fresh live table and the big table, with a signal table (the
    ``source`` channel: Debezium's way to start a snapshot, and where it writes its watermarks) and
    notifications to a topic; the live table's records are stamped as in the sidecar's sessions."""

    def __init__(self, settings: StackSettings, options: SnapshotOptions, dbz: DebeziumOptions, table: str) -> None:
        super().__init__(options, table, Scratch(settings, "dbzs", NARROW_TABLE))
        self.settings = settings
        self.chunk = dbz.chunk_size
        scratch = self.scratch
        self.signal_table = f"{scratch.name}_signal"
        self.big_topic = f"{scratch.topic_prefix}.public.{table}"
        self.notification_topic = f"{scratch.topic_prefix}-notifications"
        self.worker: Worker | None = None
        self.notes: _Notifications | None = None
        self.reader: TopicReader | None = None
        try:
            scratch.extra_tables.append(self.signal_table)
            scratch.sql(f"CREATE TABLE public.{scratch.name} ({NARROW_TABLE})")
            scratch.sql(f"CREATE TABLE public.{self.signal_table} "
                        "(id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data text)")
            scratch.sql(f"CREATE PUBLICATION {scratch.name} FOR TABLE public.{scratch.name}, public.{table}, "
                        f"public.{self.signal_table}")
            scratch.sql("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (scratch.name,))
            for topic in (scratch.data_topic, self.big_topic, self.notification_topic):
                scratch.create_topic(topic, config=LOG_APPEND_TIME)
            # Debezium also publishes the signal table's rows (its watermarks: two per chunk) to a topic
            # the broker creates on first use.
            scratch.drop_topic_later(f"{scratch.topic_prefix}.public.{self.signal_table}")
            self.reader = TopicReader(settings)
            self.notes = _Notifications(settings, self.notification_topic)
            self.notes.start()
            self.stamper = Stamper(settings, scratch.data_topic)
            self.stamper.start()
            self.worker = Worker(settings, scratch, _connector(
                scratch, [scratch.name, table],
                **{"signal.data.collection": f"public.{self.signal_table}",
                   "notification.enabled.channels": "sink",
                   "notification.sink.topic.name": self.notification_topic,
                   "incremental.snapshot.chunk.size": str(self.chunk)}))
            self.worker.start()
            scratch.sql(f"INSERT INTO public.{scratch.name} VALUES (0, 0, 'ready')")
            self._wait_live(1, 60)
            if len(self.stamper.stamps) < 1:
                raise RuntimeError(f"Debezium did not publish the first live row\n{self.worker.log_tail()}")
        except BaseException:
            self.close()
            raise

    def close(self) -> float:
        """Stop everything and drop the scratch objects; returns the worker's peak RSS (MiB)."""
        peak = float("nan")
        try:
            if self.stamper is not None:
                self.stamper.stop_event.set()
                self.stamper.join(10)
            if self.notes is not None:
                self.notes.stop()
            if self.reader is not None:
                self.reader.close()
            if self.worker is not None:
                peak = self.worker.stop()
        finally:
            self.scratch.cleanup()
        return peak

    def snapshot(self, chunk: int, limit: int | None = None, timeout_s: float = 1200) -> dict[str, float]:
        """An incremental snapshot of the big table (``limit``: only ``id <= limit``, an
        ``additional-conditions`` filter), started by a row in the signal table."""
        assert self.reader is not None and self.notes is not None and self.worker is not None
        if chunk != self.chunk:
            raise ValueError(f"this worker snapshots in chunks of {self.chunk}, not {chunk}")
        expected = self.options.rows if limit is None else limit
        before = self.reader.high_watermark(self.big_topic)
        completed = len(self.notes.of_type("COMPLETED"))
        data: dict[str, Any] = {"data-collections": [f"public.{self.table}"], "type": "incremental"}
        if limit is not None:
            data["additional-conditions"] = [{"data-collection": f"public.{self.table}", "filter": f"id <= {limit}"}]
        ident = f"bench-snapshot-{uuid.uuid4().hex[:8]}"
        start = time.time()
        self.scratch.sql(f"INSERT INTO public.{self.signal_table} (id, type, data) VALUES (%s, %s, %s)",
                         (ident, "execute-snapshot", json.dumps(data)))
        try:
            self.notes.wait_count("COMPLETED", completed + 1, timeout_s)
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}\n{self.worker.log_tail()}") from exc
        scans = self.notes.of_type("TABLE_SCAN_COMPLETED")
        scan = (scans[-1].get("additional_data") or {}) if scans else {}
        if scan.get("status") != "SUCCEEDED" or str(scan.get("total_rows_scanned")) != str(expected):
            raise RuntimeError(f"Debezium's snapshot {ident} ended with {scan}, expected {expected} rows")
        self.reader.wait_for_count(self.big_topic, before + expected, 120)
        end = self.reader.append_time(self.big_topic, before + expected - 1)
        if (high := self.reader.high_watermark(self.big_topic)) != before + expected:
            raise RuntimeError(f"Debezium's snapshot {ident} wrote {high - before} records for {expected} rows")
        elapsed = end - start
        return {"rows_per_s": expected / elapsed, "seconds": elapsed,
                "start_us": int(start * 1e6), "end_us": int(end * 1e6)}


def snapshot_run(settings: StackSettings, options: SnapshotOptions, dbz: DebeziumOptions, table: str,
                 log: Callable[[str], None], prefix: str) -> dict[str, Any]:
    """One worker: a snapshot of the whole table (no other load), the live latency with no
    snapshot running, then a key-range snapshot while the live writer runs. The whole-table
    snapshot comes first so that the latencies are measured on a warm JVM (JIT-compiled, as a
    long-running worker is): measured first, right after start-up, the idle p50 was 1.1 s
    instead of 0.65 s in a trial."""
    session = SnapshotSession(settings, options, dbz, table)
    run: dict[str, Any] = {}
    try:
        run["full"] = session.snapshot(dbz.chunk_size)["rows_per_s"]
        log(f"{prefix} Debezium snapshot of all {options.rows:,} rows, chunk {dbz.chunk_size}: "
            f"{run['full']:,.0f} rows/s")
        run["idle"] = lat = session.idle_latency()
        log(f"{prefix} Debezium live latency idle p50 {lat['p50_ms']:.1f} ms, p99 {lat['p99_ms']:.1f} ms "
            f"at {lat['offered']:,.0f} changes/s")
        run["loaded"] = result = session.loaded_snapshot(dbz.chunk_size, dbz.range_rows)
        log(f"{prefix} Debezium snapshot of {dbz.range_rows:,} rows under load, chunk {dbz.chunk_size}: "
            f"{result['rows_per_s']:,.0f} rows/s; live p50 {result['live_p50_ms']:.1f} ms, "
            f"p99 {result['live_p99_ms']:.1f} ms ({result['live_offered']:,.0f} changes/s, "
            f"{result['live_missing']:.0f} missing)")
    finally:
        run["rss_peak_mb"] = session.close()
    return run
