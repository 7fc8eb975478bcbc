"""The pipeline a chaos run supervises: the sidecar's connector JSON and the apply job's configuration.

The sidecar captures the four data tables, the probe table and the signal table of :mod:`bench.chaos.tables`
with Debezium's defaults where the issue does not ask otherwise: the Kafka offset store
(``<prefix>-offsets``), JSON with schemas; ``skipped.operations=none`` (TRUNCATE is published),
``message.key.columns`` for the keyless table, all four signal channels, sink notifications. The apply job
MERGEs every data topic (and the probe topic) into Delta under ``<work>/delta``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

from bench.chaos.tables import PROBE, SIGNAL_TABLE, TABLES
from devtools.settings import StackSettings

SLOT = "chaos_slot"
PUBLICATION = "chaos_pub"
CHUNK_SIZE = 512


class Pipeline:
    """Names and configuration files of one run's sidecar and apply job, under ``work``."""

    def __init__(self, settings: StackSettings, work: Path, prefix: str) -> None:
        self.settings = settings
        self.work = work
        self.prefix = prefix
        self.signal_file = work / "signals.jsonl"
        self.delta_root = work / "delta"
        self.checkpoint = work / "checkpoint"
        self.read_only = False

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.settings.http_port}"

    @property
    def notification_topic(self) -> str:
        return f"{self.prefix}-notifications"

    @property
    def signal_topic(self) -> str:
        return f"{self.prefix}-signal"

    def topic(self, table: str) -> str:
        return f"{self.prefix}.public.{table}"

    def connector(self) -> dict[str, Any]:
        """The connector JSON; ``read_only`` as set now."""
        s = self.settings
        tables = [spec.qualified for spec in TABLES] + [f"public.{PROBE}", f"public.{SIGNAL_TABLE}"]
        return {"name": "chaos-connector", "config": {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "database.hostname": "127.0.0.1", "database.port": str(s.pg_port), "database.user": s.pg_user,
            "database.password": s.pg_password, "database.dbname": s.pg_db, "topic.prefix": self.prefix,
            "plugin.name": "pgoutput", "slot.name": SLOT, "publication.name": PUBLICATION,
            "publication.autocreate.mode": "filtered", "table.include.list": ",".join(tables),
            "snapshot.mode": "no_data", "bootstrap.servers": s.bootstrap_servers,
            "offset.flush.interval.ms": "1000", "skipped.operations": "none",
            "message.key.columns": "public.chaos_keyless:uid",
            "incremental.snapshot.chunk.size": str(CHUNK_SIZE),
            "signal.enabled.channels": "source,kafka,file,http",
            "signal.data.collection": f"public.{SIGNAL_TABLE}", "signal.file": str(self.signal_file),
            "signal.poll.interval.ms": "500", "notification.enabled.channels": "sink",
            "notification.sink.topic.name": self.notification_topic,
            "signaller.http.port": str(s.http_port), "heartbeat.interval.ms": "1000",
            "read.only": "true" if self.read_only else "false",
        }}

    def sidecar_argv(self) -> list[str]:
        """Writes the connector JSON as it is now and returns the command that runs the sidecar on it."""
        path = self.work / ("connector-read-only.json" if self.read_only else "connector.json")
        path.write_text(json.dumps(self.connector(), indent=2))
        return [str(Path(sys.executable).with_name("signaller")), "run", "--config", str(path)]

    def job_config(self) -> dict[str, Any]:
        return {
            "kafka.bootstrap.servers": self.settings.bootstrap_servers,
            "subscribePattern": f"{self.prefix}\\.public\\.chaos_.*", "topic_prefix": self.prefix,
            "target_root": str(self.delta_root), "checkpointLocation": str(self.checkpoint),
            "trigger_interval": "2 seconds", "maxOffsetsPerTrigger": 200_000, "master": "local[2]",
            "spark_conf": {
                "spark.driver.memory": "1g",
                "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
                "spark.sql.shuffle.partitions": "2",
                "spark.databricks.delta.snapshotPartitions": "1",
                "spark.ui.enabled": "false",
            },
        }

    def job_argv(self) -> list[str]:
        path = self.work / "apply-job.yaml"
        path.write_text(yaml.safe_dump(self.job_config()))
        return [sys.executable, "-m", "spark_jobs.apply_changes", "--config", str(path)]
