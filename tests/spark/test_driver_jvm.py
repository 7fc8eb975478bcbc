"""The tests' SparkSession runs the Java and the Hadoop client ``spark_jobs.driver_jvm`` chooses."""

from __future__ import annotations

import re
import subprocess
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
    JAVA_HOME's, else the ``java`` on the PATH."""
    feature = driver_jvm.java_feature(driver_jvm.chosen_java_home())
    if feature is None:
        shown = subprocess.run(["java", "-XshowSettings:properties", "-version"], capture_output=True, text=True,
                               check=True).stderr
        feature = _feature(re.search(r"java\.version = (\S+)", shown).group(1))  # type: ignore[union-attr]
    running = str(spark.sparkContext._jvm.java.lang.System.getProperty("java.version"))
    assert _feature(running) == feature


def test_the_driver_loads_the_hadoop_client_of_the_jars_directory(spark: Any, stack: StackSettings) -> None:
    shipped = sorted(p.name for p in jars_dir(stack).glob("hadoop-client-api-*.jar"))
    assert len(shipped) == 1, shipped
    version = shipped[0].removeprefix("hadoop-client-api-").removesuffix(".jar")
    assert str(spark.sparkContext._jvm.org.apache.hadoop.util.VersionInfo.getVersion()) == version
    assert version != "3.4.2"  # pyspark's own, which Java 24+ cannot run
