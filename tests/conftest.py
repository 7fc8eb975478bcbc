"""Test tiers and the services they need.

* ``tests/unit``: pure logic, no services.
* ``tests/integration``: the real local PostgreSQL and Kafka broker (and schema registry).
* ``tests/spark``: Spark with Delta and the Kafka connector (and the broker).

The ``stack`` fixture starts whatever of the local stack is not running (``python -m devtools stack up``)
and, at the end of the session, stops exactly what it started; nothing is ever skipped for want
of a service. The schema registry boots in the background meanwhile: only tests that use the
``schema_registry`` fixture wait for it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import settings

from devtools import Stack, StackSettings

# Property tests check results, not speed: on a loaded 2-core machine a single example can take longer
# than Hypothesis' default 200 ms deadline, which would fail a correct test. Speed is measured in bench/.
settings.register_profile("signaller", deadline=None)
settings.load_profile("signaller")


@pytest.fixture(scope="session")
def local_stack() -> Iterator[Stack]:
    """The session's local stack, up (the registry perhaps still booting); stopped at the end if started here."""
    local = Stack()
    started = local.up(with_spark=True, wait_for_registry=False)
    try:
        yield local
    finally:
        if started:
            local.down(started)


@pytest.fixture(scope="session")
def stack(local_stack: Stack) -> StackSettings:
    return local_stack.settings


@pytest.fixture(scope="session")
def schema_registry(local_stack: Stack) -> str:
    """The schema registry's Confluent-compatible URL, once it is ready (global compatibility BACKWARD)."""
    return local_stack.await_registry()


@pytest.fixture
def mariadb(stack: StackSettings) -> Iterator[Any]:
    """A PyMySQL connection (autocommit) to the stack's MariaDB, database ``stack.mariadb_db``; closed afterwards."""
    import pymysql

    conn = pymysql.connect(host="127.0.0.1", port=stack.mariadb_port, user=stack.mariadb_user,
                           password=stack.mariadb_password, database=stack.mariadb_db, autocommit=True,
                           charset="utf8mb4")
    try:
        yield conn
    finally:
        conn.close()


@pytest.fixture
def unique_name() -> str:
    """A short unique suffix for topics, slots and tables, so tests never share state."""
    return uuid.uuid4().hex[:10]
