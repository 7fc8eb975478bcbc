"""Bring the whole local stack up or down, idempotently."""

from __future__ import annotations

from dataclasses import dataclass, field

from devtools import kafka, postgres, spark
from devtools.processes import port_open
from devtools.settings import StackSettings


@dataclass
class StackStatus:
    """What is running, and where to look."""

    postgres_up: bool
    kafka_up: bool
    spark_jars: bool
    details: dict[str, str] = field(default_factory=dict)


class Stack:
    """The local PostgreSQL, Kafka broker and Spark jars for one ``StackSettings``.

    ``up()`` starts what is not running and reuses what is; it returns the names of the services
    it started, so a caller (the test session) can stop exactly those. ``down()`` stops both
    services; calling it when nothing runs is harmless.
    """

    def __init__(self, settings: StackSettings | None = None) -> None:
        self.settings = settings or StackSettings.from_env()
        self._kafka = kafka.paths_for(self.settings)

    def _pg_paths(self) -> postgres.PostgresPaths:
        return postgres.paths_for(self.settings, postgres.ensure_binaries())

    def up(self, *, with_spark: bool = True) -> list[str]:
        started: list[str] = []
        self.settings.home.mkdir(parents=True, exist_ok=True)
        if postgres.start(self.settings, self._pg_paths()):
            started.append("postgres")
        if kafka.start(self.settings, self._kafka):
            started.append("kafka")
        if with_spark:
            spark.ensure_jars(self.settings)
        return started

    def down(self, services: list[str] | None = None) -> list[str]:
        stopped: list[str] = []
        wanted = services or ["kafka", "postgres"]
        if "kafka" in wanted and kafka.stop(self._kafka):
            stopped.append("kafka")
        if "postgres" in wanted and postgres.find_bin_dir() and postgres.stop(self._pg_paths()):
            stopped.append("postgres")
        return stopped

    def status(self) -> StackStatus:
        jars = spark.jars_dir(self.settings)
        return StackStatus(
            postgres_up=port_open(self.settings.pg_port),
            kafka_up=port_open(self.settings.kafka_port),
            spark_jars=any(jars.glob(".resolved-*")),
            details={
                "postgres": f"127.0.0.1:{self.settings.pg_port} db={self.settings.pg_db}",
                "kafka": self.settings.bootstrap_servers,
                "spark jars": str(jars),
                "logs": str(self.settings.home / "logs"),
            },
        )
