"""Bring the whole local stack up or down, idempotently."""

from __future__ import annotations

from dataclasses import dataclass, field

from devtools import kafka, mariadb, postgres, registry, spark
from devtools.processes import port_open
from devtools.settings import StackSettings


@dataclass
class StackStatus:
    """What is running, and where to look."""

    postgres_up: bool
    kafka_up: bool
    spark_jars: bool
    registry_up: bool = False
    mariadb_up: bool = False
    details: dict[str, str] = field(default_factory=dict)

    @property
    def services_up(self) -> bool:
        """True if every service (PostgreSQL, MariaDB, Kafka, the schema registry) accepts connections."""
        return self.postgres_up and self.kafka_up and self.registry_up and self.mariadb_up


class Stack:
    """The local PostgreSQL, MariaDB, Kafka broker, schema registry (Apicurio) and Spark jars for one
    ``StackSettings``.

    ``up()`` starts what is not running and reuses what is; it returns the names of the services
    it started, so a caller (the test session) can stop exactly those. The registry boots while
    Kafka starts and the jars resolve; ``up(wait_for_registry=False)`` returns without waiting for it
    and ``await_registry()`` waits later (the test session does so only when a test needs it).
    ``down()`` stops the services; calling it when nothing runs is harmless.
    """

    def __init__(self, settings: StackSettings | None = None) -> None:
        self.settings = settings or StackSettings.from_env()
        self._kafka = kafka.paths_for(self.settings)
        self._registry = registry.paths_for(self.settings)
        self._mariadb = mariadb.paths_for(self.settings)
        self._registry_pid: int | None = None

    def _pg_paths(self) -> postgres.PostgresPaths:
        return postgres.paths_for(self.settings, postgres.ensure_binaries())

    def up(self, *, with_spark: bool = True, wait_for_registry: bool = True) -> list[str]:
        started: list[str] = []
        self.settings.home.mkdir(parents=True, exist_ok=True)
        if postgres.start(self.settings, self._pg_paths()):
            started.append("postgres")
        self._registry_pid = registry.launch(self.settings, self._registry)
        if self._registry_pid is not None:
            started.append("registry")
        if kafka.start(self.settings, self._kafka):
            started.append("kafka")
        if mariadb.start(self.settings, self._mariadb):
            started.append("mariadb")
        if with_spark:
            spark.ensure_jars(self.settings)
        if wait_for_registry:
            self.await_registry()
        return started

    def await_registry(self, timeout_s: float = 120.0) -> str:
        """Wait until the schema registry is ready (BACKWARD by default); return its client URL."""
        registry.await_ready(self.settings, self._registry, self._registry_pid, timeout_s)
        return self.settings.registry_url

    def restart_registry(self) -> None:
        """Stop the schema registry and start it again (its schemas and ids live in PostgreSQL). Raises
        ``RegistrySetupError`` if no registry started by this stack's home runs (nothing to restart)."""
        if not registry.stop(self._registry):
            msg = f"no schema registry with a pid file under {self.settings.home} runs: nothing to restart"
            raise registry.RegistrySetupError(msg)
        self._registry_pid = registry.launch(self.settings, self._registry)
        self.await_registry()

    def down(self, services: list[str] | None = None) -> list[str]:
        stopped: list[str] = []
        wanted = services or ["registry", "kafka", "mariadb", "postgres"]
        if "registry" in wanted and registry.stop(self._registry):
            stopped.append("registry")
        if "kafka" in wanted and kafka.stop(self._kafka):
            stopped.append("kafka")
        if "mariadb" in wanted and mariadb.stop(self._mariadb):
            stopped.append("mariadb")
        if "postgres" in wanted and postgres.find_bin_dir() and postgres.stop(self._pg_paths()):
            stopped.append("postgres")
        return stopped

    def status(self) -> StackStatus:
        jars = spark.jars_dir(self.settings)
        registry_up = port_open(self.settings.registry_port)
        level = registry.compatibility(self.settings) if registry_up else None
        return StackStatus(
            postgres_up=port_open(self.settings.pg_port),
            kafka_up=port_open(self.settings.kafka_port),
            spark_jars=any(jars.glob(".resolved-*")),
            registry_up=registry_up,
            mariadb_up=port_open(self.settings.mariadb_port),
            details={
                "postgres": f"127.0.0.1:{self.settings.pg_port} db={self.settings.pg_db}",
                "mariadb": f"127.0.0.1:{self.settings.mariadb_port} db={self.settings.mariadb_db}",
                "kafka": self.settings.bootstrap_servers,
                "registry": f"{self.settings.registry_url} compatibility={level or '?'}",
                "spark jars": str(jars),
                "logs": str(self.settings.home / "logs"),
            },
        )
