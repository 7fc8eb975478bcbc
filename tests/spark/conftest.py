"""A session-wide SparkSession with Delta and the Kafka connector, from the stack's jars."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from signaller.devstack import StackSettings
from signaller.devstack.spark import jars_dir

pytestmark = pytest.mark.spark


@pytest.fixture(scope="session")
def spark(stack: StackSettings) -> Iterator[Any]:
    from spark_jobs.session import build_session

    session = build_session("signaller-tests", master="local[2]", jars_dir=str(jars_dir(stack)))
    yield session
    session.stop()
