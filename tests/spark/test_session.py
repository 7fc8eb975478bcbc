"""The job's SparkSession (``spark_jobs.session``)."""

from __future__ import annotations

import gc
from typing import Any

import pytest

pytestmark = pytest.mark.spark
MEMORY_DELETE = "m\nd\n"
"""Py4J's command that frees a JVM object whose Python proxy was garbage-collected."""


def test_building_a_column_does_not_record_its_call_site_in_the_jvm(spark: Any) -> None:
    """DataFrame debugging is off: a pyspark Column function no longer records its Python call site
    in the JVM around the call that builds the expression (five more round trips each)."""
    from pyspark.errors.utils import is_debugging_enabled
    from pyspark.sql import functions as F

    assert spark.conf.get("spark.python.sql.dataFrameDebugging.enabled") == "false"
    assert is_debugging_enabled() is False
    calls: list[str] = []
    gateway = spark.sparkContext._gateway
    client = gateway._gateway_client
    original = client.send_command

    def counting(command: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(command)
        return original(command, *args, **kwargs)

    gc.collect()  # proxies of earlier tests' JVM objects, freed now rather than during the call
    client.send_command = counting
    try:
        F.upper(F.col("a"))
    finally:
        client.send_command = original
    # Py4J's own garbage collection ("m", "d", object id: a Python proxy of a JVM object was freed) runs whenever
    # Python's collector frees one, also inside the call: not a round trip the Column function makes.
    made = [command for command in calls if not command.startswith(MEMORY_DELETE)]
    # Three calls per function (two reflection lookups and the call); 16 for these two with
    # debugging on.
    assert len(made) <= 6, calls
