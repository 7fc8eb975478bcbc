"""Incremental-snapshot signals through all four channels, again and again, and their ledger.

:class:`SignalDriver` sends, every ``signal_interval_s`` (seeded choices), one of: ``execute-snapshot`` of some
keyed tables, ``execute-snapshot`` of the keyless table with ``surrogate-key``, ``pause-snapshot`` (followed by
``resume-snapshot`` at the next step), ``stop-snapshot`` of one table or all, or a run-time chunk-size change
(``PUT /snapshots/chunk-size``). Each signal goes through a random channel: the signal table (``source``), the
Kafka signal topic, the signal file, or ``POST /signals``. A signal is *acknowledged* when its channel took it
durably: the INSERT committed, Kafka acknowledged the record, the line was written and fsynced, or the API answered
202. Unacknowledged attempts (the database or broker down, the sidecar restarting) are recorded and not counted.

:meth:`SignalDriver.final_snapshot` sends the run's last snapshot of every table over HTTP; after it the driver
stops sending ``stop-snapshot`` and ``execute-snapshot`` (only pause/resume and chunk sizes), so that snapshot runs
to its end whatever the faults do.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

import httpx
import psycopg2
from confluent_kafka import KafkaException, Producer

from bench.chaos.pipeline import Pipeline
from bench.chaos.tables import SIGNAL_TABLE, TABLES

CHANNELS = ("source", "kafka", "file", "http")
CHUNK_SIZES = (64, 256, 1024, 4096)
KEYED = [spec for spec in TABLES if not spec.keyless]
KEYLESS = next(spec for spec in TABLES if spec.keyless)


def pattern(table: str) -> str:
    return f"public\\.{table}"


@dataclass
class SentSignal:
    """One signal the driver tried to send."""

    id: str
    type: str
    channel: str
    at: float
    acknowledged: bool
    detail: str = ""


class SignalDriver(threading.Thread):
    """Sends signals until ``stop()``; ``sent`` is the ledger, ``chunk_sizes`` the accepted size changes."""

    def __init__(self, pipeline: Pipeline, dsn: str, seed: int, interval_s: float) -> None:
        super().__init__(name="chaos-signals", daemon=True)
        self.pipeline = pipeline
        self.dsn = dsn
        self.rng = random.Random(seed + 2)
        self.interval_s = interval_s
        self.sent: list[SentSignal] = []
        self.chunk_sizes: list[int] = []
        self.error: BaseException | None = None
        self._halt = threading.Event()
        self._final_sent = threading.Event()
        self._lock = threading.Lock()
        self._serial = 0
        self._paused = False
        self.http = httpx.Client(base_url=pipeline.api_url, timeout=35)
        self.producer = Producer({"bootstrap.servers": pipeline.settings.bootstrap_servers,
                                  "message.timeout.ms": 8000, "enable.idempotence": True,
                                  "log_level": 0})

    def stop(self) -> None:
        self._halt.set()
        self.join(60)
        self.http.close()

    def run(self) -> None:
        try:
            while not self._halt.wait(self.interval_s * self.rng.uniform(0.6, 1.4)):
                self._step()
        except BaseException as exc:
            self.error = exc

    def _step(self) -> None:
        if self._paused:
            self._paused = not self.send("resume-snapshot", {}, self.rng.choice(CHANNELS)).acknowledged
            return
        actions = ["pause", "chunk"] if self._final_sent.is_set() else ["execute", "keyless", "pause", "stop",
                                                                         "chunk", "execute"]
        action = self.rng.choice(actions)
        channel = self.rng.choice(CHANNELS)
        if action == "execute":
            tables = self.rng.sample(KEYED, self.rng.randint(1, len(KEYED)))
            self.send("execute-snapshot", {"data-collections": [pattern(t.name) for t in tables],
                                           "type": "incremental"}, channel)
        elif action == "keyless":
            self.send("execute-snapshot", {"data-collections": [pattern(KEYLESS.name)], "type": "incremental",
                                           "surrogate-key": KEYLESS.key[0]}, channel)
        elif action == "pause":
            self._paused = self.send("pause-snapshot", {}, channel).acknowledged
        elif action == "stop":
            targets = [pattern(self.rng.choice(TABLES).name)] if self.rng.random() < 0.7 else []
            data: dict[str, Any] = {"type": "incremental"}
            if targets:
                data["data-collections"] = targets
            self.send("stop-snapshot", data, channel)
        else:
            self.change_chunk_size(self.rng.choice(CHUNK_SIZES))

    def final_snapshot(self) -> list[SentSignal]:
        """The last snapshot of every table, over HTTP (retried while the API does not answer; a 4xx is an answer
        and ends it); from now on the driver sends no stop or execute."""
        self._final_sent.set()
        keyed = {"data-collections": [pattern(t.name) for t in KEYED], "type": "incremental"}
        keyless = {"data-collections": [pattern(KEYLESS.name)], "type": "incremental",
                   "surrogate-key": KEYLESS.key[0]}
        out = []
        for data in (keyed, keyless):
            deadline = time.monotonic() + 300
            while True:
                sent = self.send("execute-snapshot", data, "http", label="final")
                if sent.acknowledged or sent.detail.startswith("4") or time.monotonic() > deadline:
                    out.append(sent)
                    break
                time.sleep(2)
        return out

    def resume_if_paused(self) -> None:
        """``resume-snapshot`` over HTTP until acknowledged (a 4xx "no snapshot is running" counts too)."""
        deadline = time.monotonic() + 120
        while self._paused and time.monotonic() < deadline:
            sent = self.send("resume-snapshot", {}, "http")
            self._paused = not (sent.acknowledged or sent.detail.startswith("4"))
            if self._paused:
                time.sleep(2)

    def change_chunk_size(self, size: int) -> bool:
        try:
            answer = self.http.put("/snapshots/chunk-size", json={"chunk_size": size})
        except httpx.HTTPError:
            return False
        if answer.status_code in (200, 202):
            with self._lock:
                self.chunk_sizes.append(size)
            return True
        return False

    def _next_id(self, kind: str, channel: str, label: str) -> str:
        with self._lock:
            self._serial += 1
            return f"chaos-{self._serial}-{label or kind}-{channel}"

    def send(self, kind: str, data: dict[str, Any], channel: str, label: str = "") -> SentSignal:
        """Send one signal through ``channel``; record and return the attempt."""
        signal_id = self._next_id(kind, channel, label)
        body = {"id": signal_id, "type": kind, "data": data}
        at = time.time()
        try:
            acknowledged, detail = getattr(self, f"_via_{channel}")(body)
        except (psycopg2.Error, KafkaException, httpx.HTTPError, OSError) as exc:
            acknowledged, detail = False, f"{type(exc).__name__}: {str(exc)[:200]}"
        sent = SentSignal(signal_id, kind, channel, at, acknowledged, detail)
        with self._lock:
            self.sent.append(sent)
        return sent

    def _via_source(self, body: dict[str, Any]) -> tuple[bool, str]:
        with psycopg2.connect(self.dsn, connect_timeout=5) as conn, conn.cursor() as cur:
            cur.execute(f"INSERT INTO {SIGNAL_TABLE} (id, type, data) VALUES (%s, %s, %s)",
                        (body["id"], body["type"], json.dumps(body["data"])))
        conn.close()
        return True, "committed"

    def _via_kafka(self, body: dict[str, Any]) -> tuple[bool, str]:
        outcome: list[Any] = []
        self.producer.produce(self.pipeline.signal_topic, key=self.pipeline.prefix.encode(),
                              value=json.dumps(body).encode(), on_delivery=lambda err, msg: outcome.append(err))
        self.producer.flush(15)
        if outcome and outcome[0] is None:
            return True, "delivered"
        return False, f"not delivered: {outcome[0] if outcome else 'timeout'}"

    def _via_file(self, body: dict[str, Any]) -> tuple[bool, str]:
        with self.pipeline.signal_file.open("a") as handle:
            handle.write(json.dumps(body) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        return True, "written"

    def _via_http(self, body: dict[str, Any]) -> tuple[bool, str]:
        answer = self.http.post("/signals", json=body)
        return answer.status_code == 202, f"{answer.status_code} {answer.text[:200]}"

    def ledger(self) -> list[dict[str, Any]]:
        with self._lock:
            return [asdict(s) for s in self.sent]
