"""Spark's extra jars (Delta, Kafka connector, Avro), resolved from Maven Central by
``compose/local/spark/pom.xml`` and copied into the cache."""

from __future__ import annotations

from pathlib import Path

from devtools import maven
from devtools.settings import REPO_ROOT, StackSettings

POM = REPO_ROOT / "compose" / "local" / "spark" / "pom.xml"


def jars_dir(settings: StackSettings) -> Path:
    return settings.home / "spark" / "jars"


def ensure_jars(settings: StackSettings) -> Path:
    """Copy the jars once per pom version; return the directory holding them."""
    return maven.copy_dependencies(POM, jars_dir(settings))
