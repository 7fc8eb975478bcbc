"""Measurements taken while the chaos run goes on: recovery markers, lag pulses and the replication slot.

:class:`RecoveryProbe`: after each fault, a marker row (``id`` = the fault's number) is inserted into the probe
table (retried until PostgreSQL takes it); the first time its insert is seen in the probe topic and in the probe's
Delta table gives the fault's recovery time to Kafka and to Delta (from the fault's ``recover_from``). A marker
reaches Delta only after everything written before it, so its time to Delta is the recovery *plus* however far
behind the apply job runs. To tell the two apart the probe also inserts a pulse row (``id`` >= :data:`PULSE_BASE`)
every ``pulse_interval_s``, faults or not: a pulse's insert-to-Kafka and insert-to-Delta seconds are the lag of the
sidecar and of the whole pipeline; at a fault, the age of the newest pulse already in Delta says how far behind
Delta was (:func:`behind_at`), and the first pulse reaching Delta after the fault says when Delta moved again
(:func:`moving_again_after`).

:class:`SlotMonitor`: every 2 s, the slot's retained WAL (``pg_current_wal_lsn() - restart_lsn``) and its lag
(``pg_current_wal_lsn() - confirmed_flush_lsn``), in bytes.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import orjson
import psycopg2
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from bench.chaos.pipeline import SLOT
from bench.chaos.tables import PROBE

PULSE_BASE = 1_000_000
"""Pulse rows have ids from here on; fault markers have the fault's number (far below)."""


def latencies(inserted: dict[int, float], seen: dict[int, float]) -> list[float]:
    """Seconds from each insert to its first sighting (inserts never seen are left out)."""
    return [seen[key] - at for key, at in inserted.items() if key in seen]


def behind_at(moment: float, inserted: dict[int, float], seen: dict[int, float]) -> float | None:
    """How far behind the target was at ``moment``: seconds since the insert of the newest row it had shown by
    then (None: it had shown none yet)."""
    shown = [inserted[key] for key, at in seen.items() if at <= moment and key in inserted]
    return None if not shown else moment - max(shown)


def moving_again_after(moment: float, inserted: dict[int, float], seen: dict[int, float]) -> float | None:
    """Seconds from ``moment`` until the target first showed a row it had not shown before ``moment``, whenever
    that row was inserted (None: never): when changes flow into the target again, however old they are."""
    later = [at for key, at in seen.items() if at > moment and key in inserted]
    return None if not later else min(later) - moment


class RecoveryProbe:
    """Markers in, first sightings out: ``kafka_seen`` / ``delta_seen`` map a marker id to ``time.time()``."""

    def __init__(self, dsn: str, bootstrap: str, topic: str, delta_path: Path, pulse_interval_s: float = 5.0) -> None:
        self.dsn = dsn
        self.pulse_interval_s = pulse_interval_s
        self.pulses: dict[int, float] = {}
        """Pulse id -> ``time.time()`` when its insert committed (pulses PostgreSQL refused are not retried)."""
        self.bootstrap = bootstrap
        self.topic = topic
        self.delta_path = delta_path
        self.marks: dict[int, float] = {}
        self.kafka_seen: dict[int, float] = {}
        self.delta_seen: dict[int, float] = {}
        self.kafka_errors: list[str] = []
        self._halt = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._watch_kafka, name="probe-kafka", daemon=True),
                         threading.Thread(target=self._watch_delta, name="probe-delta", daemon=True),
                         threading.Thread(target=self._pulse, name="probe-pulse", daemon=True)]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._halt.set()
        for thread in self._threads:
            thread.join(30)

    def mark(self, number: int, since: float) -> None:
        """Insert marker ``number`` in the background (PostgreSQL may be restarting); recovery counts from ``since``."""
        with self._lock:
            self.marks[number] = since
        threading.Thread(target=self._insert, args=(number,), name=f"probe-mark-{number}", daemon=True).start()

    def _insert(self, number: int) -> None:
        while not self._halt.is_set():
            try:
                with psycopg2.connect(self.dsn, connect_timeout=5) as conn, conn.cursor() as cur:
                    cur.execute(f"INSERT INTO {PROBE} (id, t) VALUES (%s, %s) ON CONFLICT (id) DO UPDATE SET t = "
                                "excluded.t", (number, time.time()))
                conn.close()
                return
            except psycopg2.Error:
                self._halt.wait(0.5)

    def _pulse(self) -> None:
        conn: Any = None
        number = PULSE_BASE
        while not self._halt.wait(self.pulse_interval_s):
            try:
                if conn is None or conn.closed:
                    conn = psycopg2.connect(self.dsn, connect_timeout=5)
                    conn.autocommit = True
                with conn.cursor() as cur:
                    cur.execute(f"INSERT INTO {PROBE} (id, t) VALUES (%s, %s)", (number, time.time()))
                with self._lock:
                    self.pulses[number] = time.time()
                number += 1
            except psycopg2.Error:
                conn = None
        if conn is not None:
            conn.close()

    def _watch_kafka(self) -> None:
        """Reads the probe topic's partition 0 by assignment, without joining a consumer group; any exception
        ends that consumer, is recorded in ``kafka_errors``, and a new one starts after the last offset read. (In
        one full run the earlier group consumer saw nothing after a 67 s broker outage; whether its thread died or
        its group membership never came back was not recorded, so both ways out are closed here.)"""
        position = OFFSET_BEGINNING
        while not self._halt.is_set():
            consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "chaos-probe",
                                 "enable.auto.commit": False, "topic.metadata.refresh.interval.ms": 2000,
                                 "log_level": 0})
            try:
                consumer.assign([TopicPartition(self.topic, 0, position)])
                while not self._halt.is_set():
                    message = consumer.poll(0.5)
                    if message is None:
                        continue
                    error = message.error()
                    if error is not None:
                        if error.code() != KafkaError._PARTITION_EOF:
                            time.sleep(0.5)
                        continue
                    position = (message.offset() or 0) + 1
                    self._saw(message.value())
            except Exception as exc:  # recorded, and read again from where it stopped
                self.kafka_errors.append(repr(exc))
                self._halt.wait(1.0)
            finally:
                consumer.close()

    def _saw(self, body: bytes | None) -> None:
        if body is None:
            return
        value = orjson.loads(body)
        payload = value.get("payload", value)
        after = payload.get("after") if isinstance(payload, dict) else None
        if after is not None:
            with self._lock:
                self.kafka_seen.setdefault(int(after["id"]), time.time())

    def _watch_delta(self) -> None:
        from deltalake import DeltaTable

        while not self._halt.wait(1.0):
            try:
                ids = DeltaTable(str(self.delta_path)).to_pyarrow_table(columns=["id"]).column("id").to_pylist()
            except Exception:  # not created yet, or caught mid-commit: look again
                continue
            now = time.time()
            with self._lock:
                for marker in ids:
                    self.delta_seen.setdefault(int(marker), now)

    def lag(self) -> dict[str, list[float]]:
        """Per pulse seen, seconds from its insert to Kafka (``kafka_s``) and to Delta (``delta_s``)."""
        with self._lock:
            return {"kafka_s": latencies(self.pulses, self.kafka_seen),
                    "delta_s": latencies(self.pulses, self.delta_seen)}

    def at_fault(self, moment: float) -> dict[str, float | None]:
        """At ``moment`` (a fault's ``recover_from``): how far behind Kafka and Delta were (``*_behind_s``), and
        how long until each showed a pulse it had not shown before (``*_moving_s``)."""
        with self._lock:
            pulses, kafka, delta = dict(self.pulses), dict(self.kafka_seen), dict(self.delta_seen)
        out: dict[str, float | None] = {}
        for name, seen in (("kafka", kafka), ("delta", delta)):
            behind, moving = behind_at(moment, pulses, seen), moving_again_after(moment, pulses, seen)
            out[f"{name}_behind_s"] = None if behind is None else round(behind, 2)
            out[f"{name}_moving_s"] = None if moving is None else round(moving, 2)
        return out

    def recovery(self, number: int) -> tuple[float | None, float | None]:
        """Seconds from the fault to the marker in Kafka and in Delta (None: not seen)."""
        with self._lock:
            since = self.marks.get(number)
            if since is None:
                return None, None
            kafka_at, delta_at = self.kafka_seen.get(number), self.delta_seen.get(number)
        return (None if kafka_at is None else round(kafka_at - since, 2),
                None if delta_at is None else round(delta_at - since, 2))


class SlotMonitor(threading.Thread):
    """Samples the slot every ``interval_s``; ``peak_retained`` / ``peak_lag`` in bytes."""

    def __init__(self, dsn: str, interval_s: float = 2.0) -> None:
        super().__init__(name="chaos-slot", daemon=True)
        self.dsn = dsn
        self.interval_s = interval_s
        self.samples: list[tuple[float, int, int]] = []
        self._halt = threading.Event()

    def run(self) -> None:
        conn: Any = None
        while not self._halt.wait(self.interval_s):
            try:
                if conn is None or conn.closed:
                    conn = psycopg2.connect(self.dsn, connect_timeout=5)
                    conn.autocommit = True
                sample = self.sample(conn)
                if sample is not None:
                    self.samples.append((time.time(), *sample))
            except psycopg2.Error:
                conn = None

    @staticmethod
    def sample(conn: Any) -> tuple[int, int] | None:
        """``(retained, lag)`` in bytes now, or None without the slot."""
        with conn.cursor() as cur:
            cur.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint, "
                        "pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint "
                        "FROM pg_replication_slots WHERE slot_name = %s", (SLOT,))
            row = cur.fetchone()
        return None if row is None else (int(row[0]), int(row[1]))

    def stop(self) -> None:
        self._halt.set()
        self.join(10)

    @property
    def peak_retained(self) -> int:
        return max((s[1] for s in self.samples), default=0)

    @property
    def peak_lag(self) -> int:
        return max((s[2] for s in self.samples), default=0)
