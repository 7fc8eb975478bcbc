"""The tests' SparkSession runs the Java and the Hadoop client ``spark_jobs.driver_jvm`` chooses."""

from __future__ import annotations

import re
from typing import Any

import pytest

from devtools import StackSettings
from devtools.spark import jars_dir
from spark_jobs import driver_jvm

pytestmark = pytest.mark.spark


def _feature(version: str) -> int:
    return int(re.split(r"[.+_-]", version.removeprefix("1."))[0])


def test_the_driver_runs_the_chosen_java(spark: Any) -> None:
    """The JDK of SIGNALLER_SPARK_JAVA_HOME (the Makefile's Java 25, when the machine has one), else
    JAVA_HOME's, else the one of the ``java`` on the PATH."""
    feature = driver_jvm.java_feature(driver_jvm.chosen_java_home())
    running = str(spark.sparkContext._jvm.java.lang.System.getProperty("java.version"))
    assert feature is not None, f"the driver runs Java {running}, but no JDK's release file says which"
    assert _feature(running) == feature


def test_the_driver_loads_the_hadoop_client_of_the_jars_directory(spark: Any, stack: StackSettings) -> None:
    shipped = sorted(p.name for p in jars_dir(stack).glob("hadoop-client-api-*.jar"))
    assert len(shipped) == 1, shipped
    version = shipped[0].removeprefix("hadoop-client-api-").removesuffix(".jar")
    assert str(spark.sparkContext._jvm.org.apache.hadoop.util.VersionInfo.getVersion()) == version
    assert version != "3.4.2"  # pyspark's own, which Java 24+ cannot run
