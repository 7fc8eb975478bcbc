"""The live-table workload every streaming and snapshot measurement shares, whoever captures the table
(the sidecar in :mod:`bench.streaming` and :mod:`bench.snapshot`, Debezium in :mod:`bench.debezium`).

* :data:`NARROW_TABLE`: the live table's columns;
* :func:`preload`: commit row changes into the slot while nothing reads it (throughput runs);
* :func:`write_steadily` and :class:`Writer`: commit insert transactions on a fixed schedule;
* :class:`Stamper`: a Kafka consumer stamping each record with the instant ``poll()`` returned it (JSON
  records, or Avro ones in the Confluent wire format, decoded with the writer schema from the registry);
* :func:`latency_figures`: commit → readable latencies from those stamps;
* :class:`LiveSession`: a live table, its writer and its stamper, for snapshot sessions.
"""

from __future__ import annotations

import io
import json
import math
import threading
import time
import uuid
from typing import Any

import orjson
import psycopg2
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from bench.options import SnapshotOptions
from bench.scratch import Scratch
from bench.stats import percentile
from devtools import StackSettings
from signaller.sinks.registry import SchemaRegistryClient

NARROW_TABLE = "id bigint PRIMARY KEY, v int NOT NULL, note text"


def preload(scratch: Scratch, changes: int, tx_rows: int) -> int:
    """Commit ``changes`` row changes; returns an LSN that only the last commit's end passes."""
    inserts = changes - changes // 3
    updates = changes - inserts
    statements: list[tuple[str, tuple[int, int]]] = []
    insert = (f"INSERT INTO public.{scratch.name} SELECT g, g % 1000, 'note ' || g "
              "FROM generate_series(%s, %s) g").replace("% 1000", "%% 1000")
    update = f"UPDATE public.{scratch.name} SET v = v + 1, note = 'upd ' || id WHERE id BETWEEN %s AND %s"
    for start in range(1, inserts + 1, tx_rows):
        statements.append((insert, (start, min(start + tx_rows - 1, inserts))))
    for start in range(1, updates + 1, tx_rows):
        statements.append((update, (start, min(start + tx_rows - 1, updates))))
    conn = psycopg2.connect(scratch.settings.pg_dsn())
    try:
        with conn.cursor() as cur:
            for index, (sql, params) in enumerate(statements):
                cur.execute(sql, params)
                if index == len(statements) - 1:
                    cur.execute("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn")
                    before_last_commit = int(cur.fetchone()[0])  # type: ignore[index]
                conn.commit()
    finally:
        conn.close()
    return before_last_commit


class Stamper(threading.Thread):
    """Consumes the data topic; for every record keeps (received µs, commit µs, emitted µs)."""

    def __init__(self, settings: StackSettings, topic: str, offset: int = OFFSET_BEGINNING) -> None:
        super().__init__(daemon=True)
        self.consumer = Consumer({
            "bootstrap.servers": settings.bootstrap_servers, "group.id": f"bench-{uuid.uuid4().hex}",
            "enable.auto.commit": False, "fetch.wait.max.ms": 100, "fetch.min.bytes": 1,
        })
        self.consumer.assign([TopicPartition(topic, 0, offset)])
        self.stamps: list[tuple[int, int, int]] = []
        self.stop_event = threading.Event()
        self._registry_url = settings.registry_url
        self._readers: dict[int, Any] = {}

    def _avro_payload(self, value: bytes) -> Any:
        """The envelope of an Avro record (magic byte 0, 4-byte schema id, body), its writer schema
        fetched from the registry once per id."""
        from fastavro import parse_schema, schemaless_reader

        schema_id = int.from_bytes(value[1:5], "big")
        parsed = self._readers.get(schema_id)
        if parsed is None:
            registry = SchemaRegistryClient(self._registry_url)
            parsed = self._readers[schema_id] = parse_schema(json.loads(registry.schema_by_id(schema_id)))
        return schemaless_reader(io.BytesIO(value[5:]), parsed, None)

    def run(self) -> None:
        poll, stamps = self.consumer.poll, self.stamps
        try:
            while not self.stop_event.is_set():
                msg = poll(0.05)
                if msg is None:
                    continue
                received = time.time_ns() // 1000
                if msg.error():
                    continue
                value = msg.value()
                if value is None:
                    continue
                if value[:1] == b"\x00":
                    payload = self._avro_payload(value)
                else:
                    payload = orjson.loads(value[value.index(b'"payload":') + 10:-1])
                stamps.append((received, payload["source"]["ts_us"], payload["ts_us"]))
        finally:
            self.consumer.close()


def write_steadily(scratch: Scratch, rate: int, tx_rows: int, seconds: float, first_id: int) -> tuple[int, float]:
    """Commit ``tx_rows``-row transactions on a fixed schedule; returns (rows, achieved seconds)."""
    conn = psycopg2.connect(scratch.settings.pg_dsn())
    conn.autocommit = True
    sql = (f"INSERT INTO public.{scratch.name} SELECT g, g %% 1000, 'note ' || g "
           "FROM generate_series(%s, %s) g")
    interval = tx_rows / rate
    count = int(seconds / interval)
    next_id = first_id
    try:
        with conn.cursor() as cur:
            start = time.monotonic()
            for i in range(count):
                delay = start + i * interval - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                cur.execute(sql, (next_id, next_id + tx_rows - 1))
                next_id += tx_rows
            achieved = time.monotonic() - start
    finally:
        conn.close()
    return next_id - first_id, achieved


def latency_figures(stamps: list[tuple[int, int, int]], window_start_us: int, window_end_us: int,
                    written: int, offered: float) -> dict[str, float]:
    """Latency figures of the records (``(received µs, commit µs, emitted µs)``) whose transaction
    committed in the window; ``written``: changes written to the topic's table in all (for
    ``missing_changes``), ``offered``: the writer's achieved rate."""
    window = sorted(
        (received - committed, emitted - committed)
        for received, committed, emitted in stamps
        if window_start_us <= committed <= window_end_us
    )
    totals = sorted(w[0] / 1000 for w in window)
    capture_part = sorted(w[1] / 1000 for w in window)
    return {
        "p50_ms": percentile(totals, 0.50),
        "p99_ms": percentile(totals, 0.99),
        "max_ms": totals[-1] if totals else math.nan,
        "sidecar_p50_ms": percentile(capture_part, 0.50),
        "sidecar_p99_ms": percentile(capture_part, 0.99),
        "offered_changes_per_s": offered,
        "measured_changes": float(len(totals)),
        "missing_changes": float(written - len(stamps)),
    }


class Writer(threading.Thread):
    """Commits ``tx_rows``-row insert transactions into the live table on a fixed schedule at
    ``rate`` changes/s until :meth:`stop` (as :func:`write_steadily`)."""

    def __init__(self, scratch: Scratch, rate: int, tx_rows: int, first_id: int) -> None:
        super().__init__(daemon=True, name="bench-writer")
        self.dsn = scratch.settings.pg_dsn()
        self.table = scratch.name
        self.interval = tx_rows / rate
        self.tx_rows = tx_rows
        self.next_id = first_id
        self.first_id = first_id
        self.halt = threading.Event()
        self.started_at = self.ended_at = 0.0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            conn = psycopg2.connect(self.dsn)
            conn.autocommit = True
            sql = (f"INSERT INTO public.{self.table} SELECT g, g %% 1000, 'note ' || g "
                   "FROM generate_series(%s, %s) g")
            try:
                with conn.cursor() as cur:
                    self.started_at = start = time.monotonic()
                    i = 0
                    while not self.halt.is_set():
                        delay = start + i * self.interval - time.monotonic()
                        if delay > 0 and self.halt.wait(delay):
                            break
                        cur.execute(sql, (self.next_id, self.next_id + self.tx_rows - 1))
                        self.next_id += self.tx_rows
                        i += 1
                    self.ended_at = time.monotonic()
            finally:
                conn.close()
        except BaseException as exc:
            self.error = exc

    def stop(self) -> tuple[int, float]:
        """Stop; returns (rows written, rows/s achieved)."""
        self.halt.set()
        self.join(30)
        if self.error is not None:
            raise RuntimeError(f"the live writer failed: {self.error!r}")
        rows = self.next_id - self.first_id
        return rows, rows / max(self.ended_at - self.started_at, 1e-9)


class LiveSession:
    """What every session has, whatever captures the tables: a live table (``scratch.name``),
    a writer committing into it on a fixed schedule, and a Kafka consumer stamping its records
    (:class:`Stamper`, set up by the subclass). A subclass provides
    :meth:`snapshot`."""

    def __init__(self, options: SnapshotOptions, table: str, scratch: Scratch) -> None:
        self.options = options
        self.table = table
        self.scratch = scratch
        self.stamper: Stamper | None = None
        self.live_rows = 1  # the "ready" row
        self.next_id = 1

    def _wait_live(self, count: int, timeout_s: float) -> None:
        assert self.stamper is not None
        deadline = time.monotonic() + timeout_s
        while len(self.stamper.stamps) < count and time.monotonic() < deadline:
            time.sleep(0.02)

    # -- the live writer --------------------------------------------------------------------
    def start_writer(self) -> Writer:
        writer = Writer(self.scratch, self.options.live_rate, self.options.live_tx_rows, self.next_id)
        writer.start()
        return writer

    def stop_writer(self, writer: Writer) -> tuple[int, float]:
        rows, rate = writer.stop()
        self.next_id = writer.next_id
        self.live_rows += rows
        self._wait_live(self.live_rows, 60)
        return rows, rate

    def latency(self, start_us: int, end_us: int) -> dict[str, float]:
        """p50/p99 commit→readable (ms) of live changes committed in [start_us, end_us], and the p99 of the
        capturer's part of it (``sidecar_p99_ms``: commit → the event's ``ts_us``, when its envelope was made;
        the rest is the producer's queue, the broker and the consumer)."""
        return self.latency_in([(start_us, end_us)])

    def latency_in(self, windows: list[tuple[int, int]]) -> dict[str, float]:
        """:meth:`latency` of the live changes committed in any of ``windows`` (``(start_us, end_us)`` each);
        ``measured``: how many there were."""
        assert self.stamper is not None
        stamps = [s for s in self.stamper.stamps if any(start <= s[1] <= end for start, end in windows)]
        window = sorted((received - committed) / 1000 for received, committed, _ in stamps)
        capture_part = sorted((emitted - committed) / 1000 for _, committed, emitted in stamps)
        return {"p50_ms": percentile(window, 0.50), "p99_ms": percentile(window, 0.99),
                "sidecar_p99_ms": percentile(capture_part, 0.99),
                "measured": float(len(window)), "missing": float(self.live_rows - len(self.stamper.stamps))}

    def idle_latency(self) -> dict[str, float]:
        writer = self.start_writer()
        start_us = time.time_ns() // 1000 + int(self.options.warmup_s * 1e6)
        time.sleep(self.options.warmup_s + self.options.idle_s)
        end_us = time.time_ns() // 1000
        _, rate = self.stop_writer(writer)
        return {**self.latency(start_us, end_us), "offered": rate}

    def snapshot(self, chunk: int, limit: int | None = None, timeout_s: float = 900) -> dict[str, float]:
        """One incremental snapshot of the big table: ``rows_per_s``, ``seconds``, ``start_us``, ``end_us``."""
        raise NotImplementedError

    def loaded_snapshot(self, chunk: int, limit: int | None, min_loaded_s: float = 0.0) -> dict[str, float]:
        """Snapshots while the writer commits ``live_rate`` changes/s into the live table: one, then more of the
        same until the snapshots together lasted ``min_loaded_s`` (a p99 over a one-second snapshot rests on
        ~20 changes). ``rows_per_s``: their rows ÷ their seconds; the live latency: of the changes committed
        while any of them ran (``measured`` of them); ``snapshots``: how many ran."""
        writer = self.start_writer()
        results: list[dict[str, float]] = []
        try:
            time.sleep(self.options.warmup_s)
            while not results or sum(r["seconds"] for r in results) < min_loaded_s:
                results.append(self.snapshot(chunk, limit))
        finally:
            _, rate = self.stop_writer(writer)
        seconds = sum(r["seconds"] for r in results)
        rows = sum(r["rows_per_s"] * r["seconds"] for r in results)
        live = self.latency_in([(int(r["start_us"]), int(r["end_us"])) for r in results])
        return {"rows_per_s": rows / seconds, "seconds": seconds, "start_us": results[0]["start_us"],
                "end_us": results[-1]["end_us"], "snapshots": float(len(results)),
                **{f"live_{k}": v for k, v in live.items()}, "live_offered": rate}
