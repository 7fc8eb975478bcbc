"""The job's SparkSession (``spark_jobs.session``)."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.spark


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

    client.send_command = counting
    try:
        F.upper(F.col("a"))
    finally:
        client.send_command = original
    # Three calls per function (two reflection lookups and the call); 16 for these two with
    # debugging on.
    assert len(calls) <= 6, calls
