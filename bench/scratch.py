"""Scratch objects for one benchmark run: a table, its publication and slot, its Kafka topics.

Every name carries a random suffix, so benchmark runs never collide with each other or with
tests running against the same local stack, and :meth:`Scratch.cleanup` drops everything it
created (slots pin WAL, so it must run even when a benchmark fails).
"""

from __future__ import annotations

import contextlib
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg2
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from signaller.devstack import StackSettings


class Scratch:
    """A table ``public.<name>`` with a publication and a pgoutput slot of the same name."""

    def __init__(self, settings: StackSettings, kind: str, columns_sql: str) -> None:
        self.settings = settings
        self.name = f"bench_{kind}_{uuid.uuid4().hex[:8]}"
        self.topic_prefix = self.name.replace("_", "-")
        self.columns_sql = columns_sql
        self.workdir = Path(tempfile.mkdtemp(prefix=f"{self.name}-"))
        self._topics: list[str] = []
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

    def create_topic(self, topic: str, partitions: int = 1) -> None:
        admin = AdminClient({"bootstrap.servers": self.settings.bootstrap_servers})
        futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
        self._topics.append(topic)
        for future in futures.values():
            try:
                future.result(30)
            except Exception as exc:
                if "TOPIC_ALREADY_EXISTS" not in str(exc):
                    raise

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
        with contextlib.suppress(Exception):
            self.sql(f"DROP TABLE IF EXISTS public.{self.name}")
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
        for path in sorted(self.workdir.glob("*")):
            path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.workdir.rmdir()
