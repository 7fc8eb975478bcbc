"""A session-wide SparkSession with Delta and the Kafka connector, from the stack's jars.

``FAST_START`` trades peak speed for start-up: the tests' JVMs live minutes on a small, shared
machine, where C2 compilation and many shuffle partitions cost more than they return.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from devtools import StackSettings
from devtools.spark import jars_dir

pytestmark = pytest.mark.spark

FAST_START = {
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "spark.sql.shuffle.partitions": "1",
    "spark.databricks.delta.snapshotPartitions": "1",
    "spark.sql.adaptive.enabled": "false",
}


@pytest.fixture(scope="session")
def spark(stack: StackSettings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from spark_jobs.session import build_session

    conf = {**FAST_START, "spark.sql.warehouse.dir": str(tmp_path_factory.mktemp("warehouse"))}
    session = build_session("signaller-tests", master="local[2]", jars_dir=str(jars_dir(stack)), conf=conf)
    yield session
    session.stop()


@pytest.fixture
def delta_writer_appends(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths of appends ``spark_jobs.blind_append`` hands to Delta's DataFrame writer (rows not
    of the table's schema) instead of its own transaction; they still run."""
    from spark_jobs import blind_append

    calls: list[str] = []
    delta_writer = blind_append._append_with_delta_writer

    def counted(rows: Any, path: str, app_id: str, batch_id: int) -> None:
        calls.append(path)
        delta_writer(rows, path, app_id, batch_id)

    monkeypatch.setattr(blind_append, "_append_with_delta_writer", counted)
    return calls
