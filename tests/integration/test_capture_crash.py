"""Crash safety: the sidecar is killed with SIGKILL at random moments while a writer commits small
transactions continuously; after every restart (same config, same file offset store) it resumes, and
in the end the topic replays into exactly the table's contents with every committed change present."""

from __future__ import annotations

import json
import random
import threading
import time
from typing import Any

import psycopg2
import pytest

from tests.integration.capture_helpers import CaptureEnv, Record, replay

pytestmark = pytest.mark.integration

KILLS = 6
TARGET_TX_PER_S = 400


class Writer(threading.Thread):
    """Commits small transactions (1-3 inserts/updates/deletes) at about ``TARGET_TX_PER_S``, recording
    each committed change: ``("c"|"u", id, rev)`` or ``("d", id)``; ids are never reused."""

    def __init__(self, dsn: str, table: str, seed: int) -> None:
        super().__init__(name="writer", daemon=True)
        self.dsn, self.table = dsn, table
        self.rng = random.Random(seed)
        self.stop_event = threading.Event()
        self.committed: list[tuple[Any, ...]] = []
        self.transactions = 0
        self.error: BaseException | None = None
        self.elapsed = 0.0

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:
            self.error = exc

    def _run(self) -> None:
        conn = psycopg2.connect(self.dsn, options="-c synchronous_commit=off")
        live: list[int] = []
        next_id = 1
        rev = 0
        started = time.monotonic()
        try:
            with conn.cursor() as cur:
                while not self.stop_event.is_set():
                    pending: list[tuple[Any, ...]] = []
                    deleted: list[int] = []
                    for _ in range(self.rng.randint(1, 3)):
                        rev += 1
                        roll = self.rng.random()
                        if roll < 0.5 or len(live) < 5:
                            cur.execute(f"INSERT INTO {self.table} VALUES (%s, %s, %s)", (next_id, rev, f"n{rev}"))
                            pending.append(("c", next_id, rev))
                            live.append(next_id)
                            next_id += 1
                        elif roll < 0.8:
                            key = self.rng.choice(live)
                            cur.execute(f"UPDATE {self.table} SET rev = %s, note = %s WHERE id = %s",
                                        (rev, f"u{rev}", key))
                            pending.append(("u", key, rev))
                        else:
                            key = live.pop(self.rng.randrange(len(live)))
                            cur.execute(f"DELETE FROM {self.table} WHERE id = %s", (key,))
                            pending.append(("d", key))
                            deleted.append(key)
                    conn.commit()
                    self.committed.extend(pending)
                    self.transactions += 1
                    ahead = self.transactions / TARGET_TX_PER_S - (time.monotonic() - started)
                    if ahead > 0:
                        time.sleep(ahead)
        finally:
            self.elapsed = time.monotonic() - started
            conn.close()


def observed_changes(records: list[Record]) -> set[tuple[Any, ...]]:
    seen: set[tuple[Any, ...]] = set()
    for record in records:
        if record.tombstone:
            continue
        payload = record.payload
        if record.op in ("c", "u"):
            seen.add((record.op, payload["after"]["id"], payload["after"]["rev"]))
        elif record.op == "d":
            seen.add(("d", payload["before"]["id"]))
    return seen


def test_kill_9_at_random_moments_loses_no_committed_change(capture: CaptureEnv) -> None:
    t = capture.table
    seed = random.randrange(2**32)
    print(f"kill loop seed {seed}")
    rng = random.Random(seed)
    capture.create_table("id integer PRIMARY KEY, rev bigint NOT NULL, note text")
    # Records wait up to 300 ms in the producer before they are sent: offsets stored ahead of Kafka's
    # acknowledgement (a broken commit order) would then be lost by almost every kill.
    car = capture.start_streaming(capture.sidecar(capture.connector_config(
        offset_flush_interval_ms="100", extra={"producer.override.linger.ms": "300"})))
    reader = capture.reader()

    writer = Writer(capture.stack.pg_dsn(), t, seed)
    writer.start()
    kills = 0

    def kill_and_restart() -> None:
        nonlocal kills
        assert car.alive(), car.log_tail()
        car.kill()
        kills += 1
        assert writer.error is None, writer.error
        capture.wait_slot_inactive(car.slot)
        car.start()

    try:
        for _ in range(KILLS):
            time.sleep(rng.uniform(0.1, 1.5))  # a random moment in the stream, not an assertion
            kill_and_restart()
            if rng.random() < 0.3:
                time.sleep(rng.uniform(0.0, 0.5))  # sometimes during start-up, before it streams
                kill_and_restart()
            capture.wait_slot_active(car)
            reader.read_available(0.0)
    finally:
        writer.stop_event.set()
        writer.join(30)
    assert writer.error is None, writer.error
    rate = writer.transactions / writer.elapsed
    assert rate >= 200, f"the writer managed only {rate:.0f} transactions/s"
    assert kills >= KILLS and car.runs == kills + 1

    table = {json.dumps({"id": row[0]}): {"id": row[0], "rev": row[1], "note": row[2]}
             for row in capture.table_rows().values()}
    assert len(table) > 100

    def caught_up(records: list[Record]) -> bool:
        return replay(records) == table

    def difference() -> str:
        state = replay(reader.records)
        missing = sorted(set(table) - set(state))[:5]
        extra = sorted(set(state) - set(table))[:5]
        stale = [k for k in table if k in state and state[k] != table[k]][:5]
        return f"missing {missing}, extra {extra}, stale {stale}\n{car.log_tail()}"

    reader.wait_for(caught_up, 90, "the topic to replay into the table's contents", describe=difference)
    missing = set(writer.committed) - observed_changes(reader.records)
    assert not missing, f"{len(missing)} committed change(s) never published, e.g. {sorted(missing)[:10]}"
    events = sum(1 for r in reader.records if not r.tombstone)
    print(f"{writer.transactions} transactions ({rate:.0f}/s), {len(writer.committed)} changes, "
          f"{events} events published ({events - len(writer.committed)} duplicates), {kills} kills")
    assert car.stop() == 0, car.log_tail()
