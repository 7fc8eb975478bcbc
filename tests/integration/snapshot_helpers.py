"""Helpers for the incremental-snapshot and signal integration tests (real PostgreSQL, real Kafka).

* ``SnapshotTables``: the three table shapes (integer key, composite ``(int, text)`` key, text key),
  created and filled through a ``CaptureEnv``, and read back as ``key -> row`` maps in the form the
  topics carry (Debezium JSON, key payload as canonical JSON).
* ``RandomWriter``: a thread committing small random transactions (inserts, updates, deletes,
  key-changing updates) on those tables until stopped.
* ``Api``: the sidecar's HTTP API (``POST /signals``, ``GET /snapshots``, ``PUT /snapshots/chunk-size``,
  ``GET /health``).
* ``snapshot_config``: a connector config with a signal table, sink notifications and the API on a
  free port; ``Notifications``: the notification topic, parsed; ``stored_offsets``: the offsets file.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg2
import psycopg2.errors

from signaller.model import parse_lsn
from tests.integration.capture_helpers import CaptureEnv, Record, Sidecar, TopicReader, closed_port, replay, wait_until

# --- tables ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """A table shape: its columns SQL, key columns, and how to make the ``n``-th key as SQL values."""

    tag: str
    columns: str
    key: tuple[str, ...]
    make_key: Callable[[int], tuple[Any, ...]]


def _text_key(n: int) -> tuple[Any, ...]:
    # Varied text keys: mixed case, spaces, quotes, non-ASCII, different lengths, so that key order is
    # not the order of n.
    syllables = ["ka", "Zu", "mé", "o'", "x y", "Ba", "ñ", "q"]
    parts = [syllables[(n // 8**i) % 8] for i in range(1 + n % 3)]
    return ("".join(parts) + f"-{n}",)


SHAPES = (
    Shape("int", "id integer PRIMARY KEY, val text NOT NULL, n bigint NOT NULL", ("id",), lambda n: (n,)),
    Shape("comp", "a integer NOT NULL, b text NOT NULL, val text NOT NULL, n bigint NOT NULL, PRIMARY KEY (a, b)",
          ("a", "b"), lambda n: (n % 37, f"b{n // 37}")),
    Shape("text", "k text PRIMARY KEY, val text NOT NULL, n bigint NOT NULL", ("k",), _text_key),
)


class SnapshotTables:
    """One table per shape, named ``<capture.table>_<tag>``, created through ``capture`` (dropped at teardown)."""

    def __init__(self, capture: CaptureEnv, rows: dict[str, int], shapes: Iterable[Shape] = SHAPES) -> None:
        self.capture = capture
        self.shapes = {shape.tag: shape for shape in shapes}
        self.names = {tag: f"{capture.table}_{tag}" for tag in self.shapes}
        for tag, shape in self.shapes.items():
            capture.create_table(shape.columns, self.names[tag])
            self.fill(tag, range(rows.get(tag, 0)))

    def fill(self, tag: str, numbers: Iterable[int]) -> None:
        shape, name = self.shapes[tag], self.names[tag]
        values = [(*shape.make_key(n), f"init-{n}", n) for n in numbers]
        if not values:
            return
        columns = len(values[0])
        placeholders = "(" + ", ".join(["%s"] * columns) + ")"
        with self.capture.conn.cursor() as cur:
            args = ",".join(cur.mogrify(placeholders, row).decode() for row in values)
            cur.execute(f"INSERT INTO {name} VALUES {args}")

    def qualified(self, tag: str) -> str:
        return f"public.{self.names[tag]}"

    def pattern(self, tag: str) -> str:
        """The table as an escaped ``data-collections`` regular expression."""
        return f"public\\.{self.names[tag]}"

    def topic(self, tag: str, prefix: str | None = None) -> str:
        return self.capture.topic(self.names[tag], prefix)

    def rows(self, tag: str) -> dict[str, dict[str, Any]]:
        """The table now, as ``replay`` builds it from the topic: canonical key JSON -> ``after`` row."""
        shape, name = self.shapes[tag], self.names[tag]
        with self.capture.conn.cursor() as cur:
            cur.execute(f"SELECT * FROM {name}")
            names = [d[0] for d in cur.description]
            out = {}
            for values in cur.fetchall():
                row = dict(zip(names, values, strict=True))
                out[json.dumps({k: row[k] for k in shape.key}, sort_keys=True)] = row
            return out


def compare(expected: dict[str, dict[str, Any]], actual: dict[str, dict[str, Any]]) -> str:
    """A short description of how ``actual`` differs from ``expected`` ("" if equal)."""
    if expected == actual:
        return ""
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    stale = sorted(k for k in expected if k in actual and expected[k] != actual[k])
    sample = [(k, expected[k], actual[k]) for k in stale[:3]]
    return (f"{len(missing)} missing (e.g. {missing[:3]}), {len(extra)} extra (e.g. {extra[:3]}), "
            f"{len(stale)} stale (e.g. {sample})")


def assert_replays_to(reader: TopicReader, expected: dict[str, dict[str, Any]], timeout_s: float,
                      describe: Callable[[], str] | None = None) -> None:
    """Read the topic until replaying it gives ``expected`` (fail with the difference on timeout)."""
    def detail() -> str:
        text = compare(expected, replay(reader.records))
        return text + ("\n" + describe() if describe else "")

    reader.wait_for(lambda records: replay(records) == expected, timeout_s,
                    f"the topic to replay into the table ({len(expected)} rows)", describe=detail)


def reads(records: Iterable[Record]) -> list[Record]:
    return [r for r in records if not r.tombstone and r.op == "r"]


# --- the writer ---------------------------------------------------------------------------------------------


class RandomWriter(threading.Thread):
    """Commits small transactions (1-2 changes) on the given tables at about ``rate`` per second until
    ``stop()``: inserts of new keys, updates, deletes and key-changing updates of existing keys. Keys are
    drawn from ``[0, key_space)`` of each shape, so inserts hit keys that were deleted earlier too.

    ``hot()`` may name a table and a key number where the snapshot reads now: half of the changes then
    go to the 60 keys from there, so that they race with the chunk being read (deduplication)."""

    def __init__(self, dsn: str, tables: SnapshotTables, tags: Iterable[str], key_space: dict[str, int],
                 seed: int, rate: float = 150.0, hot: Callable[[], tuple[str, int] | None] | None = None) -> None:
        super().__init__(name="random-writer", daemon=True)
        self.dsn = dsn
        self.tables = tables
        self.tags = list(tags)
        self.key_space = key_space
        self.rng = random.Random(seed)
        self.rate = rate
        self.hot = hot
        self.hot_changes = 0
        self._halt = threading.Event()
        self.error: BaseException | None = None
        self.transactions = 0
        self.changes = {"insert": 0, "update": 0, "delete": 0, "rekey": 0}

    def stop(self, timeout_s: float = 30.0) -> None:
        self._halt.set()
        self.join(timeout_s)
        assert not self.is_alive(), "the writer did not stop"
        assert self.error is None, f"the writer failed: {self.error!r}"

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:
            self.error = exc

    def _run(self) -> None:
        conn = psycopg2.connect(self.dsn)
        started = time.monotonic()
        serial = 0
        try:
            while not self._halt.is_set():
                with conn.cursor() as cur:
                    hot = self.hot() if self.hot is not None else None
                    for _ in range(self.rng.randint(1, 2)):
                        serial += 1
                        if hot is not None and self.rng.random() < 0.5:
                            self.hot_changes += 1
                            self._change(cur, hot[0], serial, hot[1] + self.rng.randrange(60))
                        else:
                            self._change(cur, self.rng.choice(self.tags), serial)
                try:
                    conn.commit()
                except psycopg2.Error:
                    conn.rollback()
                self.transactions += 1
                ahead = self.transactions / self.rate - (time.monotonic() - started)
                if ahead > 0:
                    self._halt.wait(ahead)
        finally:
            conn.close()

    def _change(self, cur: Any, tag: str, serial: int, number: int | None = None) -> None:
        shape, name = self.tables.shapes[tag], self.tables.names[tag]
        key = shape.make_key(self.rng.randrange(self.key_space[tag]) if number is None else number)
        where = " AND ".join(f"{column} = %s" for column in shape.key)
        kind = self.rng.choices(["insert", "update", "delete", "rekey"], [3, 4, 2, 1])[0]
        cur.execute("SAVEPOINT change")
        try:
            if kind == "insert":
                columns = len(shape.key) + 2
                cur.execute(f"INSERT INTO {name} VALUES ({', '.join(['%s'] * columns)}) ON CONFLICT DO NOTHING",
                            (*key, f"ins-{serial}", serial))
            elif kind == "update":
                cur.execute(f"UPDATE {name} SET val = %s, n = %s WHERE {where}", (f"upd-{serial}", serial, *key))
            elif kind == "delete":
                cur.execute(f"DELETE FROM {name} WHERE {where}", key)
            else:
                new_key = shape.make_key(self.rng.randrange(self.key_space[tag]))
                assignments = ", ".join(f"{column} = %s" for column in shape.key)
                cur.execute(f"UPDATE {name} SET {assignments}, val = %s, n = %s WHERE {where}",
                            (*new_key, f"key-{serial}", serial, *key))
            cur.execute("RELEASE SAVEPOINT change")
            self.changes[kind] += 1
        except psycopg2.errors.UniqueViolation:
            cur.execute("ROLLBACK TO SAVEPOINT change")


# --- the sidecar ----------------------------------------------------------------------------------------------


def snapshot_config(capture: CaptureEnv, tables: Iterable[str], *, signal_table: str | None,
                    chunk_size: int = 100, **overrides: Any) -> dict[str, Any]:
    """A connector config capturing ``tables`` (and ``signal_table``), with sink notifications on
    ``<prefix>-notifications`` and the HTTP API on a free port (``signaller.http.port``)."""
    extra = dict(overrides.pop("extra", {}))
    tables = list(tables)
    properties: dict[str, Any] = {
        "incremental.snapshot.chunk.size": str(chunk_size),
        "notification.enabled.channels": "sink",
        "notification.sink.topic.name": f"{capture.prefix}-notifications",
        "signaller.http.port": str(closed_port()),
        "signal.poll.interval.ms": "100",
        "heartbeat.interval.ms": "500",
    }
    if signal_table is not None:
        properties["signal.data.collection"] = f"public.{signal_table}"
        tables.append(signal_table)
    properties.update(extra)
    return capture.connector_config(tables=tables, extra=properties, **overrides)


def create_signal_table(capture: CaptureEnv, name: str | None = None) -> str:
    name = name or f"{capture.table}_signal"
    capture.create_table("id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048)", name)
    return name


class Api:
    """The HTTP API of one sidecar (``signaller.http.port`` of its config)."""

    def __init__(self, car: Sidecar) -> None:
        self.car = car
        self.url = f"http://127.0.0.1:{car.config['config']['signaller.http.port']}"
        self.client = httpx.Client(base_url=self.url, timeout=40)

    def signal(self, signal_type: str, data: dict[str, Any], signal_id: str) -> httpx.Response:
        return self.client.post("/signals", json={"id": signal_id, "type": signal_type, "data": data})

    def accepted(self, signal_type: str, data: dict[str, Any], signal_id: str) -> None:
        response = self.signal(signal_type, data, signal_id)
        assert response.status_code == 202, (signal_type, response.status_code, response.text)

    def snapshots(self) -> dict[str, Any]:
        response = self.client.get("/snapshots")
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    def chunk_size(self, size: int) -> httpx.Response:
        return self.client.put("/snapshots/chunk-size", json={"chunk_size": size})

    def healthy(self) -> bool:
        if not self.car.alive():
            raise AssertionError(f"sidecar exited with {self.car.returncode}\n{self.car.log_tail()}")
        try:
            response = self.client.get("/health", timeout=2)
        except httpx.HTTPError:
            return False
        return response.status_code == 200

    def wait_healthy(self, timeout_s: float = 40.0) -> None:
        wait_until(self.healthy, timeout_s, "the sidecar to stream (GET /health 200)", interval_s=0.1,
                   describe=self.car.log_tail)

    def wait_idle(self, timeout_s: float) -> dict[str, Any]:
        """Until ``GET /snapshots`` says no snapshot runs."""
        def probe() -> dict[str, Any] | None:
            body = self.snapshots()
            return None if body["running"] else body

        return wait_until(probe, timeout_s, "GET /snapshots to report no running snapshot", interval_s=0.2,
                          describe=lambda: f"{self.snapshots()}\n{self.car.log_tail()}")

    def close(self) -> None:
        self.client.close()


def start(car: Sidecar) -> Api:
    """Start ``car`` and wait until its API reports streaming."""
    car.start()
    api = Api(car)
    api.wait_healthy()
    return api


def stored_offsets(capture: CaptureEnv) -> dict[str, Any]:
    """The file offset store's record (``{}`` before the first commit)."""
    path: Path = capture.offsets_file
    if not path.exists():
        return {}
    try:
        body: dict[str, Any] = json.loads(path.read_text() or "{}")
    except ValueError:  # caught mid-write
        return {}
    return body


def current_wal_lsn(capture: CaptureEnv) -> int:
    return parse_lsn(capture.sql("SELECT pg_current_wal_lsn()::text")[0][0])


def wait_caught_up(capture: CaptureEnv, car: Sidecar, lsn: int, timeout_s: float = 60.0) -> None:
    """Until the sidecar's stored offset reached ``lsn``."""
    wait_until(lambda: stored_offsets(capture).get("lsn", 0) >= lsn, timeout_s,
               f"the stored offset to reach {lsn:X}", interval_s=0.2,
               describe=lambda: f"{stored_offsets(capture)}\n{car.log_tail()}")


# --- notifications --------------------------------------------------------------------------------------------


class Notifications:
    """The notification topic (``<prefix>-notifications``), parsed."""

    def __init__(self, capture: CaptureEnv) -> None:
        self.reader = capture.reader(f"{capture.prefix}-notifications")

    def all(self) -> list[dict[str, Any]]:
        self.reader.read_available(0.1)
        return [record.payload for record in self.reader.records]

    def of(self, kind: str, aggregate: str = "Incremental Snapshot") -> list[dict[str, Any]]:
        return [n for n in self.all() if n["type"] == kind and n["aggregate_type"] == aggregate]

    def wait(self, predicate: Callable[[dict[str, Any]], bool], timeout_s: float, what: str,
             describe: Callable[[], str] | None = None) -> dict[str, Any]:
        def probe() -> dict[str, Any] | None:
            return next((n for n in self.all() if predicate(n)), None)

        def detail() -> str:
            kinds = [(n["type"], n["id"]) for n in self.all()][-12:]
            return f"notifications so far (last 12): {kinds}" + ("\n" + describe() if describe else "")

        return wait_until(probe, timeout_s, what, interval_s=0.1, describe=detail)

    def wait_for(self, kind: str, timeout_s: float, describe: Callable[[], str] | None = None,
                 aggregate: str = "Incremental Snapshot", after: int = 0, **data: str) -> dict[str, Any]:
        """The first ``kind`` notification (at index >= ``after``) whose additional_data includes ``data``."""
        def matches(n: dict[str, Any]) -> bool:
            return (n["type"] == kind and n["aggregate_type"] == aggregate
                    and all(n["additional_data"].get(k) == v for k, v in data.items()))

        def probe() -> dict[str, Any] | None:
            return next((n for n in self.all()[after:] if matches(n)), None)

        def detail() -> str:
            kinds = [(n["type"], n["id"]) for n in self.all()][-12:]
            return f"notifications so far (last 12): {kinds}" + ("\n" + describe() if describe else "")

        return wait_until(probe, timeout_s, f"a {kind} notification {data or ''}", interval_s=0.1, describe=detail)

    def count(self) -> int:
        return len(self.all())


def check_notification_fields(notification: dict[str, Any], connector: str) -> None:
    """Debezium's notification value: id, type, aggregate_type, additional_data (connector_name), timestamp."""
    assert list(notification) == ["id", "type", "aggregate_type", "additional_data", "timestamp"], notification
    assert isinstance(notification["id"], str) and notification["id"]
    assert notification["additional_data"]["connector_name"] == connector, notification
    assert all(isinstance(v, str) for v in notification["additional_data"].values()), notification
    assert isinstance(notification["timestamp"], int) and notification["timestamp"] > 1_600_000_000_000


def read_to_end(reader: TopicReader, timeout_s: float = 30.0, *, missing_ok: bool = False) -> list[Record]:
    """Read ``reader``'s topic up to the end offsets it has now (the topic must exist; with ``missing_ok``, a
    topic that does not exist has no records: call it once the sidecar stored an offset past what it sent)."""
    from confluent_kafka import TopicPartition

    consumer = reader._consumer
    if missing_ok and not (reader._assigned or reader._assign()):
        return []
    wait_until(lambda: reader._assigned or reader._assign(), timeout_s, f"topic {reader.topic} to exist")
    partitions = consumer.list_topics(reader.topic, timeout=10).topics[reader.topic].partitions
    ends = {p: consumer.get_watermark_offsets(TopicPartition(reader.topic, p), timeout=10)[1] for p in partitions}

    def done(records: list[Record]) -> bool:
        reached = {p: -1 for p in ends}
        for record in records:
            reached[record.partition] = max(reached[record.partition], record.offset)
        return all(reached[p] + 1 >= end for p, end in ends.items())

    return reader.wait_for(done, timeout_s, f"the end offsets {ends}")


def sync_point(capture: CaptureEnv, car: Sidecar, statement: str) -> int:
    """Run ``statement`` (a change of a captured table) and wait until the sidecar stored an offset
    past it: everything the sidecar emitted before that change is then in Kafka. Returns the LSN."""
    capture.sql(statement)
    lsn = current_wal_lsn(capture)
    wait_caught_up(capture, car, lsn)
    return lsn


def stale_after_read(records: Iterable[Record]) -> list[str]:
    """Streamed ``c``/``u`` events that follow a READ of their key in the topic but carry an older
    change than the READ (by the writer's serial ``n``; rows of the initial fill are older than every
    change). Without restarts there must be none: a READ is emitted after every change it saw."""
    read_serial: dict[str, int] = {}
    problems = []
    for record in records:
        if record.tombstone:
            continue
        after = record.payload["after"]
        key = json.dumps(record.key_payload, sort_keys=True)
        if record.op == "r":
            read_serial[key] = -1 if after["val"].startswith("init-") else after["n"]
        elif record.op in ("c", "u") and key in read_serial:
            serial = -1 if after["val"].startswith("init-") else after["n"]
            if serial <= read_serial[key]:
                problems.append(f"{key}: {record.op} of change {serial} at offset {record.offset} after a READ "
                                f"of change {read_serial[key]}")
    return problems


class HotSpot(threading.Thread):
    """Polls ``GET /snapshots`` of the sidecar at ``url`` and remembers where the snapshot of the
    integer-key table reads now (``RandomWriter``'s ``hot``); survives the sidecar being down."""

    def __init__(self, url: str, tables: SnapshotTables) -> None:
        super().__init__(name="hot-spot", daemon=True)
        self.url = url
        self.table = tables.qualified("int")
        self.tag = "int"
        self.spot: tuple[str, int] | None = None
        self._halt = threading.Event()

    def __call__(self) -> tuple[str, int] | None:
        return self.spot

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=2) as client:
            while not self._halt.wait(0.05):
                try:
                    body = client.get("/snapshots").json()
                except (httpx.HTTPError, ValueError):
                    continue
                current = [t for t in body.get("tables", ()) if t["state"] == "running" and t["table"] == self.table]
                bound = current[0]["chunk_to"] if current else None
                self.spot = (self.tag, int(bound)) if bound is not None else None

    def stop(self) -> None:
        self._halt.set()
        self.join(10)


def reads_older_than_streamed(records: Iterable[Record]) -> list[str]:
    """READs that carry an older change of their row than a ``c``/``u`` event of the key earlier in the
    topic (by the writer's serial ``n``). There must be none, restarts included: a change streamed
    while its row's chunk was buffered must suppress the READ (deduplication)."""
    newest: dict[str, int] = {}
    problems = []
    for record in records:
        if record.tombstone or record.op not in ("c", "u", "r"):
            continue
        after = record.payload["after"]
        key = json.dumps(record.key_payload, sort_keys=True)
        serial = -1 if after["val"].startswith("init-") else after["n"]
        if record.op == "r":
            if serial < newest.get(key, -1):
                problems.append(f"{key}: READ of change {serial} at offset {record.offset} after a streamed "
                                f"change {newest[key]}")
        else:
            newest[key] = max(newest.get(key, -1), serial)
    return problems
