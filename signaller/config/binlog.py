"""The binlog connectors' own properties (Debezium's MariaDB and MySQL connectors): the replica's server id,
database and GTID-source filters, and the binlog-specific event and type options.

Declared as a section (``config.binlog``) like every other; read only by ``sources/mariadb``. The
connection itself is ``database.hostname``/``database.port``/``database.user``/``database.password``
(``config.database``; the port defaults to 3306 for these connectors, see :func:`binlog_port`).
"""

from __future__ import annotations

from enum import StrEnum

from signaller.config import parsing as p
from signaller.config.declare import Kind, choice, section, setting
from signaller.patterns import UserPattern

MARIADB_CONNECTOR = "io.debezium.connector.mariadb.MariaDbConnector"
MYSQL_CONNECTOR = "io.debezium.connector.mysql.MySqlConnector"
BINLOG_CONNECTORS = (MARIADB_CONNECTOR, MYSQL_CONNECTOR)
"""The ``connector.class`` names the binlog source implements."""
DEFAULT_BINLOG_PORT = 3306


class BigintUnsignedHandlingMode(StrEnum):
    """``bigint.unsigned.handling.mode``."""

    LONG = "long"
    PRECISE = "precise"


Patterns = tuple[UserPattern, ...]


@section
class BinlogSection:
    """Debezium's MariaDB/MySQL connector properties (``config.binlog``)."""

    server_id: int | None = setting("database.server.id", Kind.INT, None,
                                    "Replica server id of the binlog client (default: random in 5400-6400, as "
                                    "Debezium).", check=p.in_range(1, 4294967295))
    database_include_list: Patterns = setting("database.include.list", Kind.REGEX_LIST, "",
                                           "Databases to capture (regexes, full match).")
    database_exclude_list: Patterns = setting("database.exclude.list", Kind.REGEX_LIST, "",
                                           "Databases not to capture (regexes, full match).")
    gtid_source_includes: Patterns = setting("gtid.source.includes", Kind.REGEX_LIST, "",
                                          "GTID sources (domain-server) whose transactions are captured.")
    gtid_source_excludes: Patterns = setting("gtid.source.excludes", Kind.REGEX_LIST, "",
                                          "GTID sources (domain-server) whose transactions are skipped.")
    buffer_size: int = setting("binlog.buffer.size", Kind.INT, "0", "Look-ahead buffer of the binlog reader "
                               "(0: none; signaller reads whole transactions anyway).", check=p.at_least(0))
    include_schema_changes: bool = setting("include.schema.changes", Kind.BOOL, "true",
                                           "Publish DDL to the schema change topic (<topic.prefix>).")
    history_topic: str | None = setting("schema.history.internal.kafka.topic", Kind.STR, None,
                                        "Schema history topic: the DDL of the captured tables, read back at a restart "
                                        "(unset: no history; a restart reads the schema the tables have then).")
    history_bootstrap_servers: str | None = setting(
        "schema.history.internal.kafka.bootstrap.servers", Kind.STR, None,
        "Kafka of the schema history topic (default: kafka.bootstrap.servers).")
    history_only_captured_tables: bool = setting(
        "schema.history.internal.store.only.captured.tables.ddl", Kind.BOOL, "false",
        "Keep the start-up schema snapshot's database statements (DROP/CREATE DATABASE, USE) out of the history.")
    history_only_captured_databases: bool = setting(
        "schema.history.internal.store.only.captured.databases.ddl", Kind.BOOL, "false",
        "Record DDL of the captured databases only (signaller records DDL of captured tables only anyway).")
    include_query: bool = setting("include.query", Kind.BOOL, "false",
                                  "Put the statement (annotate rows event) in source.query.")
    bigint_unsigned_handling_mode: BigintUnsignedHandlingMode = choice(
        "bigint.unsigned.handling.mode", BigintUnsignedHandlingMode, "long", "BIGINT UNSIGNED representation.")
