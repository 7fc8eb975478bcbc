"""Helpers of the MariaDB capture tests: unique tables in the stack's MariaDB, a connector config for the
binlog source, sidecars and topic readers cleaned up after the test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from devtools import StackSettings
from tests.integration.capture_helpers import Sidecar, TopicReader, wait_until


class MariaEnv:
    """Unique names and clean-up for one MariaDB test (tables in ``stack.mariadb_db``)."""

    def __init__(self, stack: StackSettings, conn: Any, suffix: str, workdir: Path) -> None:
        self.stack, self.conn, self.suffix, self.workdir = stack, conn, suffix, workdir
        self.db = stack.mariadb_db
        self.table = f"t_{suffix}"
        self.prefix = f"itm{suffix}"
        self.offsets_file = workdir / "offsets.json"
        self.tables: list[str] = []
        self.sidecars: list[Sidecar] = []
        self.readers: list[TopicReader] = []

    def topic(self, table: str | None = None) -> str:
        return f"{self.prefix}.{self.db}.{table or self.table}"

    def sql(self, *statements: str, params: Any = None) -> list[tuple[Any, ...]]:
        """Run ``statements`` in one transaction (autocommit off for it); the last one's rows."""
        rows: list[tuple[Any, ...]] = []
        with self.conn.cursor() as cur:
            if len(statements) > 1:
                cur.execute("BEGIN")
            for statement in statements:
                cur.execute(statement, params)
                rows = list(cur.fetchall()) if cur.description else []
            if len(statements) > 1:
                cur.execute("COMMIT")
        return rows

    def create_table(self, columns: str, table: str | None = None) -> str:
        name = table or self.table
        self.tables.append(name)
        self.sql(f"CREATE TABLE `{name}` ({columns})")
        return name

    def connector_config(self, tables: list[str] | None = None, **overrides: Any) -> dict[str, Any]:
        config: dict[str, Any] = {
            "connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
            "database.hostname": "127.0.0.1",
            "database.port": str(self.stack.mariadb_port),
            "database.user": self.stack.mariadb_user,
            "database.password": self.stack.mariadb_password,
            "database.server.id": str(5400 + int(self.suffix[:4], 16) % 1000),
            "topic.prefix": self.prefix,
            "table.include.list": ",".join(f"{self.db}.{t}" for t in (tables or [self.table])),
            "snapshot.mode": "no_data",
            "read.only": "true",  # no signal table: snapshots (none here) would be read-only
            "kafka.bootstrap.servers": self.stack.bootstrap_servers,
            "schema.history.internal.kafka.topic": f"{self.prefix}.schema-history",
            "offset.storage": "file",
            "offset.storage.file.filename": str(self.offsets_file),
            "offset.flush.interval.ms": "200",
            "poll.interval.ms": "100",
        }
        config.update({name.replace("_", "."): value for name, value in overrides.items()})
        return {"name": f"itm-{self.suffix}", "config": config}

    def sidecar(self, config: dict[str, Any] | None = None, label: str = "sidecar") -> Sidecar:
        car = Sidecar(config or self.connector_config(), self.workdir, label)
        self.sidecars.append(car)
        return car

    def start_streaming(self, car: Sidecar, timeout_s: float = 60.0) -> Sidecar:
        """Start ``car`` and wait until its log says the binlog stream is open (for run number ``car.runs``)."""
        car.start()
        run = car.runs

        def probe() -> bool | None:
            if not car.alive():
                raise AssertionError(f"sidecar exited with {car.returncode} before streaming\n{car.log_tail()}")
            text = car.log_text().split(f"--- run {run} ---", 1)[-1]
            return True if "streaming the MariaDB binlog" in text else None

        wait_until(probe, timeout_s, "the binlog stream to open", describe=car.log_tail)
        return car

    def reader(self, table: str | None = None) -> TopicReader:
        reader = TopicReader(self.stack.bootstrap_servers, self.topic(table))
        self.readers.append(reader)
        return reader

    def stored_offsets(self) -> dict[str, Any]:
        return dict(json.loads(self.offsets_file.read_text()))

    def close(self) -> None:
        for car in self.sidecars:
            if car.alive():
                car.kill()
        for reader in self.readers:
            reader.close()
        for table in self.tables:
            self.sql(f"DROP TABLE IF EXISTS `{table}`")
