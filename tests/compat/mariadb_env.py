"""One MariaDB test's world (real MariaDB, real Kafka): a database of its own, an autocommit connection to
it, topic readers, and clean-up of everything handed out (the database, every topic of its prefixes,
the schema-change topic ``<prefix>`` itself included).

A database per test keeps Debezium's schema snapshot (``database.include.list``) and its schema-change
topic to the test's own tables, whatever other tests create meanwhile in the stack's database.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pymysql
from confluent_kafka.admin import AdminClient

from devtools import StackSettings
from tests.integration.capture_helpers import TopicReader


def connect(stack: StackSettings, database: str | None = None) -> pymysql.connections.Connection[Any]:
    """An autocommit connection as the stack's MariaDB user (utf8mb4, the server's time zone kept)."""
    return pymysql.connect(host="127.0.0.1", port=stack.mariadb_port, user=stack.mariadb_user,
                           password=stack.mariadb_password, database=database, charset="utf8mb4",
                           autocommit=True, binary_prefix=True)


class MariaDbEnv:
    """Unique names and clean-up for one test. ``variant(tag)`` hands out another topic prefix."""

    def __init__(self, stack: StackSettings, suffix: str, workdir: Path) -> None:
        self.stack = stack
        self.suffix = suffix
        self.workdir = workdir
        self.database = f"cmp_{suffix}"
        admin = connect(stack)
        try:
            with admin.cursor() as cur:
                cur.execute(f"CREATE DATABASE `{self.database}` CHARACTER SET utf8mb4")
        finally:
            admin.close()
        self.conn = connect(stack, self.database)
        self.prefixes: list[str] = []
        self.readers: list[TopicReader] = []
        self.extra_topics: list[str] = []

    def variant(self, tag: str) -> str:
        """A topic prefix of its own (its topics are deleted at the end)."""
        prefix = f"mdb{self.suffix}{tag}"
        self.prefixes.append(prefix)
        return prefix

    def sql(self, statement: str, params: Any = None) -> list[tuple[Any, ...]]:
        with self.conn.cursor() as cur:
            cur.execute(statement, params)
            return list(cur.fetchall()) if cur.description else []

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Callable[[str], None]]:
        """Statements run in one transaction, committed at the end (rolled back on an exception)."""
        self.conn.begin()
        try:
            with self.conn.cursor() as cur:
                yield cur.execute
            self.conn.commit()
        except BaseException:
            self.conn.rollback()
            raise

    def reader(self, topic: str) -> TopicReader:
        reader = TopicReader(self.stack.bootstrap_servers, topic)
        self.readers.append(reader)
        return reader

    def close(self) -> None:
        """Close readers, drop the database, delete the topics; re-raise the first failure at the end."""
        errors: list[BaseException] = []
        for action in [*(r.close for r in self.readers), self._drop_database, self._delete_topics,
                       self.conn.close]:
            try:
                action()
            except BaseException as exc:
                errors.append(exc)
        if errors:
            raise errors[0]

    def _drop_database(self) -> None:
        self.sql(f"DROP DATABASE IF EXISTS `{self.database}`")

    def _delete_topics(self) -> None:
        admin = AdminClient({"bootstrap.servers": self.stack.bootstrap_servers})
        topics = [name for name in admin.list_topics(timeout=10).topics
                  if name in self.extra_topics or any(name == prefix or name.startswith(prefix + ".")
                                                      or name.startswith(prefix + "-") for prefix in self.prefixes)]
        if topics:
            for future in admin.delete_topics(topics, operation_timeout=10).values():
                with contextlib.suppress(Exception):
                    future.result(15)


@contextlib.contextmanager
def mariadb_env(stack: StackSettings, suffix: str, workdir: Path) -> Iterator[MariaDbEnv]:
    env = MariaDbEnv(stack, suffix, workdir)
    try:
        yield env
    finally:
        env.close()
