"""The chaos run's writer: mixed changes at a target rate, plus one TRUNCATE, one ADD COLUMN and one large
transaction at fixed points of the chaos phase.

Each transaction holds ``changes_per_tx`` changes on random tables: inserts of absent keys, updates, deletes
and key-changing updates (weights 3:4:2:1), keys drawn from ``[0, key_space)``. Every change sets ``n`` from
the run's sequence. The writer survives PostgreSQL restarts: a lost connection is counted, and it connects
again and carries on (a transaction whose commit was cut off may or may not have committed: the source is the
truth the verdict compares with, so that is fine).
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import psycopg2

from bench.chaos.plan import ChaosPlan
from bench.chaos.tables import BY_NAME, SEQUENCE, TABLES, TableSpec, toast_sql

KINDS = ("insert", "update", "delete", "rekey")
WEIGHTS = (3, 4, 2, 1)
TRUNCATED = "chaos_keyless"
ALTERED = "chaos_comp"
LARGE = "chaos_comp"
EVENTS_AT = {"truncate": 0.35, "add_column": 0.5, "large_tx": 0.6}
"""When each one-off event runs, as a fraction of the chaos phase."""


@dataclass
class LoadStats:
    """What the writer did."""

    transactions: int = 0
    changes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    reconnects: int = 0
    events: dict[str, float] = field(default_factory=dict)
    """One-off event -> seconds into the chaos phase when it committed."""
    elapsed_s: float = 0.0

    @property
    def total_changes(self) -> int:
        return sum(self.changes.values())


class LoadWriter(threading.Thread):
    """Writes until ``stop()``; ``error`` holds what stopped it otherwise."""

    def __init__(self, dsn: str, plan: ChaosPlan) -> None:
        super().__init__(name="chaos-writer", daemon=True)
        self.dsn = dsn
        self.plan = plan
        self.rng = random.Random(plan.seed + 1)
        self.stats = LoadStats()
        self.error: BaseException | None = None
        self._halt = threading.Event()
        self._serial = 0
        self._altered = False

    def stop(self, timeout_s: float = 600.0) -> None:
        self._halt.set()
        self.join(timeout_s)
        if self.is_alive():
            raise RuntimeError("the chaos writer did not stop")

    def run(self) -> None:
        started = time.monotonic()
        try:
            self._run()
        except BaseException as exc:
            self.error = exc
        finally:
            self.stats.elapsed_s = time.monotonic() - started

    def _connect(self) -> Any:
        while not self._halt.is_set():
            try:
                conn = psycopg2.connect(self.dsn, connect_timeout=5)
                conn.autocommit = False
                return conn
            except psycopg2.OperationalError:
                self._halt.wait(0.5)
        return None

    def _run(self) -> None:
        started = time.monotonic()
        tx_rate = self.plan.rate / self.plan.changes_per_tx
        pending_events = dict(EVENTS_AT)
        conn = self._connect()
        while conn is not None and not self._halt.is_set():
            elapsed = time.monotonic() - started
            due = [name for name, at in pending_events.items() if elapsed >= at * self.plan.chaos_s]
            try:
                with conn.cursor() as cur:
                    if due:
                        self._event(cur, due[0])
                        conn.commit()
                        self.stats.events[due[0]] = round(time.monotonic() - started, 1)
                        del pending_events[due[0]]
                        continue
                    counted = [self._change(cur) for _ in range(self.plan.changes_per_tx)]
                conn.commit()
                for kind in counted:
                    self.stats.changes[kind] += 1
                self.stats.transactions += 1
            except (psycopg2.OperationalError, psycopg2.InterfaceError):
                self.stats.reconnects += 1
                with contextlib.suppress(psycopg2.Error):
                    conn.close()
                conn = self._connect()
                continue
            ahead = self.stats.transactions / tx_rate - (time.monotonic() - started)
            if ahead > 0:
                self._halt.wait(ahead)
        if conn is not None:
            conn.close()

    def _event(self, cur: Any, name: str) -> None:
        if name == "truncate":
            cur.execute(f"TRUNCATE {TRUNCATED}")
        elif name == "add_column":
            cur.execute(f"ALTER TABLE {ALTERED} ADD COLUMN extra text")
            self._altered = True
        else:
            cur.execute(f"INSERT INTO {LARGE} (a, b, n, val) SELECT g %% 37, 'big' || g, nextval('{SEQUENCE}'), "
                        f"'large-tx' FROM generate_series(1, %s) g", (self.plan.large_tx_rows,))

    def _change(self, cur: Any) -> str:
        self._serial += 1
        spec = self.rng.choice(TABLES)
        kind = self.rng.choices(KINDS, WEIGHTS)[0]
        key = spec.make_key(self.rng.randrange(self.plan.key_space))
        where = " AND ".join(f"{column} = %s" for column in spec.key)
        tag = f"{kind}-{self._serial}"
        if kind == "insert":
            columns = [*spec.key, "n", "val"]
            values = ", ".join(["%s"] * len(spec.key)) + f", nextval('{SEQUENCE}'), %s"
            if spec.toast:
                columns.append("doc")
                values += ", " + toast_sql(self.plan.toast_chars)
            cur.execute(f"INSERT INTO {spec.name} ({', '.join(columns)}) SELECT {values} "
                        f"WHERE NOT EXISTS (SELECT 1 FROM {spec.name} WHERE {where})", (*key, tag, *key))
        elif kind == "update":
            cur.execute(f"UPDATE {spec.name} SET n = nextval('{SEQUENCE}'), val = %s{self._extra_sets(spec)} "
                        f"WHERE {where}", (tag, *key))
        elif kind == "delete":
            cur.execute(f"DELETE FROM {spec.name} WHERE {where}", key)
        else:
            new_key = spec.make_key(self.rng.randrange(self.plan.key_space))
            assignments = ", ".join(f"{column} = %s" for column in spec.key)
            new_where = " AND ".join(f"t2.{column} = %s" for column in spec.key)
            # Under REPLICA IDENTITY DEFAULT PostgreSQL does not send an unchanged TOASTed value, and Debezium's
            # create event for the new key carries the unavailable-value placeholder: no consumer can rebuild the
            # column after a key change (Debezium behaves the same). So a key change writes the column anew.
            doc = f", doc = {toast_sql(self.plan.toast_chars)}" if spec.toast else ""
            cur.execute(f"UPDATE {spec.name} SET {assignments}, n = nextval('{SEQUENCE}'), val = %s{doc} "
                        f"WHERE {where} AND NOT EXISTS (SELECT 1 FROM {spec.name} t2 WHERE {new_where})",
                        (*new_key, tag, *key, *new_key))
        return kind

    def _extra_sets(self, spec: TableSpec) -> str:
        sets = ""
        if spec.toast and self.rng.random() < 0.1:
            sets += f", doc = {toast_sql(self.plan.toast_chars)}"
        if spec.name == ALTERED and self._altered:
            sets += f", extra = 'x{self._serial}'"
        return sets


assert all(name in BY_NAME for name in (TRUNCATED, ALTERED, LARGE))
