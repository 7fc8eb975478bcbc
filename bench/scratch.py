"""Scratch objects for one benchmark run: a table, its publication and slot, its Kafka topics.

Every name carries a random suffix, so benchmark runs never collide with each other or with
tests running against the same local stack, and :meth:`Scratch.cleanup` drops everything it
created (slots pin WAL, so it must run even when a benchmark fails).
"""

from __future__ import annotations

import contextlib
import math
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg2
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from devtools import StackSettings

LOG_APPEND_TIME = {"message.timestamp.type": "LogAppendTime"}
"""Topic config: the broker stamps every record with the instant it appended it (ms), so the
consumer side can tell when a record reached Kafka, whichever process produced it."""


AVRO_CONVERTER = "io.confluent.connect.avro.AvroConverter"


def avro_converters(registry_url: str) -> dict[str, object]:
    """Connector properties that switch the sidecar's key and value converters to Avro (Confluent wire
    format) against the registry at ``registry_url``, with Avro name adjustment: the benchmarks' topic
    prefixes hold ``-``, which Avro record names may not. Subjects are the scratch topics' own."""
    return {"key.converter": AVRO_CONVERTER, "value.converter": AVRO_CONVERTER,
            "key.converter.schema.registry.url": registry_url, "value.converter.schema.registry.url": registry_url,
            "schema.name.adjustment.mode": "avro"}


class Scratch:
    """A table ``public.<name>`` with a publication and a pgoutput slot of the same name."""

    def __init__(self, settings: StackSettings, kind: str, columns_sql: str) -> None:
        self.settings = settings
        self.name = f"bench_{kind}_{uuid.uuid4().hex[:8]}"
        self.topic_prefix = self.name.replace("_", "-")
        self.columns_sql = columns_sql
        self.workdir = Path(tempfile.mkdtemp(prefix=f"{self.name}-"))
        self._topics: list[str] = []
        self.extra_tables: list[str] = []
        """Other tables of this run (``public.<name>``) that :meth:`cleanup` drops."""
        self.conn: Any = psycopg2.connect(settings.pg_dsn())
        self.conn.autocommit = True

    @property
    def data_topic(self) -> str:
        return f"{self.topic_prefix}.public.{self.name}"

    def sql(self, statement: str, params: tuple[Any, ...] | None = None) -> list[tuple[Any, ...]]:
        with self.conn.cursor() as cur:
            cur.execute(statement, params)
            return list(cur.fetchall()) if cur.description else []

    def create(self) -> None:
        """Table, publication and slot: the slot exists before any change is written, so every
        change after this call is in the slot's stream."""
        self.sql(f"CREATE TABLE public.{self.name} ({self.columns_sql})")
        self.sql(f"CREATE PUBLICATION {self.name} FOR TABLE public.{self.name}")
        self.sql("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (self.name,))

    def slot_pid(self) -> int | None:
        """The walsender streaming this slot (None while no one streams it)."""
        rows = self.sql("SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s", (self.name,))
        return rows[0][0] if rows else None

    def create_topic(self, topic: str, partitions: int = 1, config: dict[str, str] | None = None) -> None:
        """Create ``topic`` (dropped by :meth:`cleanup`); ``config``: topic configs, e.g. :data:`LOG_APPEND_TIME`."""
        admin = AdminClient({"bootstrap.servers": self.settings.bootstrap_servers})
        futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1,
                                                config=dict(config or {}))])
        self._topics.append(topic)
        for future in futures.values():
            try:
                future.result(30)
            except Exception as exc:
                if "TOPIC_ALREADY_EXISTS" not in str(exc):
                    raise

    def drop_topic_later(self, topic: str) -> None:
        """Have :meth:`cleanup` delete ``topic`` too (one that something else may create)."""
        self._topics.append(topic)

    def connector_config(self, **overrides: object) -> dict[str, object]:
        """Debezium properties for a signaller streaming exactly this table (publication and slot
        made by :meth:`create`, file offsets, no initial snapshot); ``overrides`` win."""
        s = self.settings
        config: dict[str, object] = {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "database.hostname": "127.0.0.1",
            "database.port": str(s.pg_port),
            "database.user": s.pg_user,
            "database.password": s.pg_password,
            "database.dbname": s.pg_db,
            "topic.prefix": self.topic_prefix,
            "slot.name": self.name,
            "publication.name": self.name,
            "publication.autocreate.mode": "disabled",
            "table.include.list": rf"public\.{self.name}",
            "kafka.bootstrap.servers": s.bootstrap_servers,
            "offset.storage": "file",
            "offset.storage.file.filename": str(self.workdir / "offsets.json"),
            "snapshot.mode": "no_data",  # streaming only: no initial incremental snapshot
        }
        config.update({key: str(value) for key, value in overrides.items()})
        return config

    def cleanup(self) -> None:
        """Drop the slot (waiting for its walsender to go), publication, table and topics."""
        with contextlib.suppress(Exception):
            for _ in range(50):
                rows = self.sql("SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s", (self.name,))
                if not rows or rows[0][0] is None:
                    break
                self.sql("SELECT pg_terminate_backend(%s)", (rows[0][0],))
                time.sleep(0.1)
            self.sql("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
                     (self.name,))
        with contextlib.suppress(Exception):
            self.sql(f"DROP PUBLICATION IF EXISTS {self.name}")
        for table in [self.name, *self.extra_tables]:
            with contextlib.suppress(Exception):
                self.sql(f"DROP TABLE IF EXISTS public.{table}")
        with contextlib.suppress(Exception):
            self.conn.close()
        # Each name once: a repeated name makes the whole DeleteTopics request fail (INVALID_REQUEST).
        topics = list(dict.fromkeys([*self._topics, self.data_topic]))
        with contextlib.suppress(Exception):
            admin = AdminClient({"bootstrap.servers": self.settings.bootstrap_servers})
            existing = set(admin.list_topics(timeout=10).topics)
            doomed = [t for t in topics if t in existing]
            if doomed:
                for future in admin.delete_topics(doomed, operation_timeout=30).values():
                    with contextlib.suppress(Exception):
                        future.result(30)
        shutil.rmtree(self.workdir, ignore_errors=True)


class SlotWatcher(threading.Thread):
    """Polls ``pg_replication_slots`` every ``period_s`` until the slot has an active walsender:
    ``activated_at`` (``time.time()``) is then the instant a client started streaming it (within one
    period), seen from PostgreSQL whatever the client is; ``cpu_at_activation`` is
    ``cpu_reader()`` read at that instant, when one is given."""

    def __init__(self, settings: StackSettings, slot: str, period_s: float = 0.02,
                 cpu_reader: Callable[[], float] | None = None) -> None:
        super().__init__(daemon=True, name="bench-slot-watcher")
        self.dsn = settings.pg_dsn()
        self.slot = slot
        self.period_s = period_s
        self.cpu_reader = cpu_reader
        self.activated_at: float | None = None
        self.cpu_at_activation = math.nan
        self.halt = threading.Event()

    def run(self) -> None:
        conn = psycopg2.connect(self.dsn)
        conn.autocommit = True
        try:
            with conn.cursor() as cur:
                while not self.halt.is_set():
                    cur.execute("SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s", (self.slot,))
                    row = cur.fetchone()
                    if row is not None and row[0] is not None:
                        self.activated_at = time.time()
                        if self.cpu_reader is not None:
                            self.cpu_at_activation = self.cpu_reader()
                        return
                    self.halt.wait(self.period_s)
        finally:
            conn.close()

    def result(self, timeout_s: float = 10.0) -> float:
        """``activated_at``; RuntimeError if the slot never became active."""
        self.join(timeout_s)
        if self.activated_at is None:
            self.halt.set()
            raise RuntimeError(f"slot {self.slot} never became active")
        return self.activated_at
