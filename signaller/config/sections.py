"""The typed configuration sections: every supported property, declared once, as a field of one section.

Each section is a frozen dataclass whose fields carry their property (``declare.setting``); the field's
type is the parsed value's type. ``Sections`` composes them (``SignallerConfig`` adds provenance and
helpers that span sections), and ``SETTINGS`` lists every (section, field, property) in declaration
order, from which ``fields.PROPERTIES`` and the builder are derived. Components take the section they
need: ``config.snapshot`` for the snapshot engine, ``config.offsets`` for the offset store, and so on.

Names, defaults and accepted values are Debezium's (``PostgresConnectorConfig``,
``RelationalDatabaseConnectorConfig``, ``CommonConnectorConfig``, ``AbstractTopicNamingStrategy``,
``KafkaSignalChannel``), or Kafka Connect's for the worker-side settings a sidecar needs, or signaller's
own under ``signaller.``. Deliberate departures from Debezium's defaults are noted in the property's doc:
``plugin.name`` defaults to ``pgoutput`` (Debezium: ``decoderbufs``, which signaller cannot decode), and
``topic.creation.default.*`` default to 1 (Connect has no default).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any, Protocol, get_type_hints

from signaller.config import parsing as p
from signaller.config.binlog import BINLOG_CONNECTORS, BinlogSection
from signaller.config.declare import Kind, Prop, channel_list, choice, property_of, section, setting
from signaller.config.values import (
    AutoCreateMode,
    BinaryHandlingMode,
    DecimalHandlingMode,
    EventProcessingFailureHandlingMode,
    HStoreHandlingMode,
    IntervalHandlingMode,
    KeyColumns,
    NameAdjustmentMode,
    NotificationChannel,
    OffsetStorage,
    PluginName,
    Secret,
    SignalChannel,
    SnapshotMode,
    SslMode,
    TimePrecisionMode,
    WatermarkStrategy,
)
from signaller.model.tables import TableId
from signaller.patterns import UserPattern

Patterns = tuple[UserPattern, ...]

PG_CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
AVRO_CONVERTERS = (
    "io.confluent.connect.avro.AvroConverter",
    "io.apicurio.registry.utils.converter.AvroConverter",
)
"""The Avro converters signaller writes for (Confluent wire format, through a Confluent-compatible registry)."""
NOT_YET = "not implemented by signaller yet"
_CONVERTERS = p.one_of(JSON_CONVERTER, *AVRO_CONVERTERS,
                       reason="signaller writes Kafka Connect's JSON or Avro (Confluent wire format)")
_CREDENTIALS_SOURCES = p.one_of("URL", "USER_INFO", reason="SASL_INHERIT is not implemented by signaller")


_HOSTNAME = p.matches(r"[a-zA-Z0-9\-_.]+", "a host name or IP address (letters, digits, '-', '_' and '.')")
_SLOT_NAME = p.matches(r"[a-z0-9_]{1,63}", "lower-case letters, digits and '_', at most 63 characters")
_JMX = "JMX is a Java facility; use http (signaller's REST channel), kafka, file or source"
_MAX_TOPIC_LENGTH = 249
_SYSTEM_SCHEMAS = frozenset({"pg_catalog", "information_schema"})
_SYSTEM_TABLES = frozenset({"spatial_ref_sys"})


class TableLike(Protocol):
    """Anything with ``schema`` and ``table`` names (``signaller.model.TableId``)."""

    @property
    def schema(self) -> str:
        """The schema name, unquoted."""

    @property
    def table(self) -> str:
        """The table name, unquoted."""


@section
class ConnectorSection:
    """The Kafka Connect connector envelope: which connector, and the key/value converters."""

    connector_class: str = setting("connector.class", Kind.STR, PG_CONNECTOR, "Debezium's PostgreSQL, MariaDB or "
                                   "MySQL connector.", check=p.one_of(PG_CONNECTOR, *BINLOG_CONNECTORS,
                                                                      reason="signaller implements Debezium's "
                                                                      "PostgreSQL and MariaDB/MySQL connectors"))
    key_converter: str = setting("key.converter", Kind.STR, JSON_CONVERTER, "Key format.", check=_CONVERTERS)
    value_converter: str = setting("value.converter", Kind.STR, JSON_CONVERTER, "Value format.", check=_CONVERTERS)
    key_schemas_enable: bool = setting("key.converter.schemas.enable", Kind.BOOL, "true",
                                       "Wrap keys as {schema, payload}.")
    value_schemas_enable: bool = setting("value.converter.schemas.enable", Kind.BOOL, "true",
                                         "Wrap values as {schema, payload}.")
    key_registry_url: str | None = setting("key.converter.schema.registry.url", Kind.STR, None,
                                           "Schema registry (Confluent API) of the Avro key converter.")
    value_registry_url: str | None = setting("value.converter.schema.registry.url", Kind.STR, None,
                                             "Schema registry (Confluent API) of the Avro value converter.")
    key_credentials_source: str = setting("key.converter.basic.auth.credentials.source", Kind.STR, "URL",
                                          "Where the key converter's registry credentials come from.",
                                          check=_CREDENTIALS_SOURCES)
    value_credentials_source: str = setting("value.converter.basic.auth.credentials.source", Kind.STR, "URL",
                                            "Where the value converter's registry credentials come from.",
                                            check=_CREDENTIALS_SOURCES)
    key_user_info: Secret | None = setting("key.converter.basic.auth.user.info", Kind.SECRET, None,
                                           "user:password for the key converter's registry (USER_INFO).",
                                           aliases=("key.converter.schema.registry.basic.auth.user.info",))
    value_user_info: Secret | None = setting("value.converter.basic.auth.user.info", Kind.SECRET, None,
                                             "user:password for the value converter's registry (USER_INFO).",
                                             aliases=("value.converter.schema.registry.basic.auth.user.info",))

    @property
    def avro(self) -> bool:
        """Whether the records are written in Avro (both converters Avro; a cross-check refuses a mix)."""
        return self.value_converter in AVRO_CONVERTERS


@section
class DatabaseSection:
    """The PostgreSQL connection (``database.*``)."""

    hostname: str = setting("database.hostname", Kind.STR, None, "PostgreSQL host.", required=True, check=_HOSTNAME)
    port: int = setting("database.port", Kind.INT, "5432", "PostgreSQL port.", check=p.in_range(1, 65535))
    user: str = setting("database.user", Kind.STR, None, "User with REPLICATION.", required=True, check=p.NOT_BLANK)
    password: Secret | None = setting("database.password", Kind.SECRET, None, "Password of database.user.")
    dbname: str = setting("database.dbname", Kind.STR, None, "Database to capture.", check=p.NOT_BLANK)
    """Required for PostgreSQL (``build._postgres_needs_dbname``); the binlog connectors have no such property."""
    sslmode: SslMode = choice("database.sslmode", SslMode, "prefer", "libpq sslmode.")
    sslcert: str | None = setting("database.sslcert", Kind.STR, None, "Client certificate file (libpq sslcert).")
    sslkey: str | None = setting("database.sslkey", Kind.STR, None, "Client private key file (libpq sslkey).")
    sslpassword: Secret | None = setting("database.sslpassword", Kind.SECRET, None,
                                         "Password of database.sslkey (libpq sslpassword).")
    sslrootcert: str | None = setting("database.sslrootcert", Kind.STR, None,
                                      "CA certificates file (libpq sslrootcert).")
    tcp_keep_alive: bool = setting("database.tcpKeepAlive", Kind.BOOL, "true",
                                   "TCP keep-alive probes (libpq keepalives).")

    def libpq_dsn(self, **extra: str) -> str:
        """A libpq connection string, password included: pass it to the driver, never log it.

        ``extra`` adds or replaces keywords (e.g. ``replication="database"``).
        """
        params: dict[str, str | None] = {
            "host": self.hostname,
            "port": str(self.port),
            "dbname": self.dbname,
            "user": self.user,
            "password": self.password.reveal() if self.password else None,
            "sslmode": self.sslmode.value,
            "sslcert": self.sslcert,
            "sslkey": self.sslkey,
            "sslpassword": self.sslpassword.reveal() if self.sslpassword else None,
            "sslrootcert": self.sslrootcert,
            "keepalives": "1" if self.tcp_keep_alive else "0",
            "application_name": "signaller",
            **extra,
        }
        return " ".join(f"{key}={_libpq_quote(value)}" for key, value in params.items() if value is not None)


@section
class CaptureSection:
    """Which tables and columns are captured, and custom message keys."""

    schema_include_list: Patterns = setting("schema.include.list", Kind.REGEX_LIST, "",
                                            "Schemas to capture (regexes, full match).")
    schema_exclude_list: Patterns = setting("schema.exclude.list", Kind.REGEX_LIST, "",
                                            "Schemas not to capture (regexes, full match).")
    table_include_list: Patterns = setting("table.include.list", Kind.REGEX_LIST, "",
                                           "Tables to capture: regexes on schema.table.")
    table_exclude_list: Patterns = setting("table.exclude.list", Kind.REGEX_LIST, "",
                                           "Tables not to capture: regexes on schema.table.")
    column_include_list: Patterns = setting("column.include.list", Kind.REGEX_LIST, "",
                                            "Columns to keep: regexes on schema.table.column.")
    column_exclude_list: Patterns = setting("column.exclude.list", Kind.REGEX_LIST, "",
                                            "Columns to drop: regexes on schema.table.column.")
    table_ignore_builtin: bool = setting("table.ignore.builtin", Kind.BOOL, "true",
                                         "Skip pg_catalog, information_schema, pg_temp*.")
    message_key_columns: tuple[KeyColumns, ...] = setting("message.key.columns", Kind.STR, "",
                                                           "Custom keys: '<table regex>:<cols>;...'.",
                                                           parser=p.parse_key_columns)

    def is_table_captured(self, schema: str, table: str, *, always: TableId | None = None) -> bool:
        """Whether changes of ``schema.table`` are captured (Debezium's ``RelationalTableFilters``).

        ``always`` (the signal table) is captured whatever the lists say. Otherwise built-in tables
        are skipped (unless ``table.ignore.builtin=false``), then the schema lists and the table lists
        apply; every expression must match the whole name, case-insensitively.
        """
        if always is not None and _same_table(always, schema, table):
            return True
        if self.table_ignore_builtin and _is_builtin(schema, table):
            return False
        if not _admits(schema, self.schema_include_list, self.schema_exclude_list):
            return False
        return _admits(f"{schema}.{table}", self.table_include_list, self.table_exclude_list)

    def is_column_captured(self, schema: str, table: str, column: str) -> bool:
        """Whether ``column`` is published: column lists full-matched against ``schema.table.column``."""
        return _admits(f"{schema}.{table}.{column}", self.column_include_list, self.column_exclude_list)

    def key_columns_for(self, schema: str, table: str) -> tuple[str, ...] | None:
        """The ``message.key.columns`` override for ``schema.table``, or None to use the table's key."""
        name = f"{schema}.{table}"
        return next((rule.columns for rule in self.message_key_columns if rule.table.fullmatch(name)), None)


@section
class ReplicationSection:
    """The replication slot, the publication and the stream's status updates."""

    plugin_name: PluginName = choice(
        "plugin.name", PluginName, "pgoutput", "Logical decoding plugin. Debezium defaults to decoderbufs.",
        unsupported={"decoderbufs": "it needs a server extension and signaller decodes pgoutput only; "
                                    "set plugin.name=pgoutput (PostgreSQL 10+ has it built in)"})
    slot_name: str = setting("slot.name", Kind.STR, "debezium", "Replication slot.", check=_SLOT_NAME)
    slot_drop_on_stop: bool = setting("slot.drop.on.stop", Kind.BOOL, "false", "Drop the slot on orderly stop.")
    slot_max_retries: int = setting("slot.max.retries", Kind.INT, "6", "Attempts to acquire a busy slot.",
                                    check=p.at_least(0))
    slot_retry_delay_ms: int = setting("slot.retry.delay.ms", Kind.INT, "10000", "Delay between slot attempts.",
                                       check=p.at_least(0))
    publication_name: str = setting("publication.name", Kind.STR, "dbz_publication", "pgoutput publication.",
                                    check=p.NOT_BLANK)
    publication_autocreate_mode: AutoCreateMode = choice("publication.autocreate.mode", AutoCreateMode,
                                                         "all_tables", "How the publication is created.")
    publish_via_partition_root: bool = setting(
        "publish.via.partition.root", Kind.BOOL, "false", "Publish partitions via the root.",
        check=p.not_true("publishing through the partition root is not implemented yet"))
    status_update_interval_ms: int = setting("status.update.interval.ms", Kind.INT, "10000",
                                             "Standby status period.", check=p.at_least(1))


@section
class SnapshotSection:
    """Snapshots and the signals that drive incremental ones: mode, chunking, watermarks, signal channels."""

    read_only: bool = setting("read.only", Kind.BOOL, "false",
                              "Read-only incremental snapshots (pg_current_snapshot()).")
    mode: SnapshotMode = choice(
        "snapshot.mode", SnapshotMode, "initial", "Startup snapshot. 'never' is read as 'no_data'.",
        aliases={"never": "no_data"},
        unsupported={
            "always": "a snapshot on every start is not implemented; use initial, or send an "
                      "execute-snapshot signal for an incremental snapshot",
            "initial_only": "signaller always streams after the snapshot; use initial",
            "configuration_based": "snapshotter plug-ins are Java classes",
            "custom": "snapshotter plug-ins are Java classes",
            "exported": "removed from Debezium (it meant initial); use initial",
        })
    chunk_size: int = setting("incremental.snapshot.chunk.size", Kind.INT, "1024",
                              "Rows per incremental-snapshot chunk.", check=p.at_least(1))
    watermarking_strategy: WatermarkStrategy = choice("incremental.snapshot.watermarking.strategy",
                                                      WatermarkStrategy, "insert_insert",
                                                      "How window watermarks are written to the signal table.")
    signal_data_collection: TableId | None = setting("signal.data.collection", Kind.STR, "",
                                                     "Signal table 'schema.table'; always captured.",
                                                     parser=p.parse_table_id)
    signal_enabled_channels: tuple[SignalChannel, ...] = channel_list(
        "signal.enabled.channels", SignalChannel, "source", "Signal channels; 'http' is signaller's.",
        unsupported={"jmx": _JMX, "in-process": "the embedded-engine API has no meaning for a sidecar"})
    signal_poll_interval_ms: int = setting("signal.poll.interval.ms", Kind.INT, "5000", "Signal poll period.",
                                           check=p.at_least(1))
    signal_kafka_topic: str = setting("signal.kafka.topic", Kind.STR, None,
                                      "Signal topic; default '<topic.prefix>-signal'.", check=p.TOPIC_NAME)
    signal_kafka_bootstrap_servers: str = setting(
        "signal.kafka.bootstrap.servers", Kind.STR, None,
        "Signal topic brokers; default kafka.bootstrap.servers (Debezium requires it).")
    signal_kafka_group_id: str = setting("signal.kafka.groupId", Kind.STR, "kafka-signal",
                                         "Group used to commit signal offsets.")
    signal_kafka_poll_timeout_ms: int = setting("signal.kafka.poll.timeout.ms", Kind.INT, "0",
                                                "Signal consumer poll timeout (docs say 100).", check=p.at_least(0))
    signal_file: str = setting("signal.file", Kind.STR, "file-signals.txt",
                               "File of JSON signals, truncated after reading.")


@section
class NotificationSection:
    """Where notifications (snapshot progress, skipped records) go."""

    enabled_channels: tuple[NotificationChannel, ...] = channel_list(
        "notification.enabled.channels", NotificationChannel, "", "Notification channels.",
        unsupported={"jmx": _JMX})
    sink_topic_name: str | None = setting("notification.sink.topic.name", Kind.STR, None, "Sink channel topic.",
                                          check=p.TOPIC_NAME)


@section
class EventSection:
    """Which change events are published, with what extras, and what happens to one Kafka refuses."""

    tombstones_on_delete: bool = setting("tombstones.on.delete", Kind.BOOL, "true",
                                         "Follow each delete with a tombstone.")
    skipped_operations: frozenset[str] = setting("skipped.operations", Kind.STR, "t",
                                                 "Ops not published: c,u,d,t,r or none.",
                                                 parser=p.parse_skipped_operations)
    provide_transaction_metadata: bool = setting("provide.transaction.metadata", Kind.BOOL, "false",
                                                 "BEGIN/END events and transaction blocks.")
    failure_handling_mode: EventProcessingFailureHandlingMode = choice(
        "event.processing.failure.handling.mode", EventProcessingFailureHandlingMode, "fail",
        "A record Kafka refuses as too large: stop (fail), or leave it out with a log line, a notification "
        "and a metric (warn, skip).", aliases={"ignore": "skip"})
    skip_messages_without_change: bool = setting("skip.messages.without.change", Kind.BOOL, "false",
                                                 "Drop updates of excluded columns only.", check=p.not_true(NOT_YET))


@section
class TypeSection:
    """How column values are represented: the Debezium ``*.handling.mode`` converters and their kin."""

    decimal_handling_mode: DecimalHandlingMode = choice("decimal.handling.mode", DecimalHandlingMode, "precise",
                                                        "NUMERIC/DECIMAL representation.")
    time_precision_mode: TimePrecisionMode = choice(
        "time.precision.mode", TimePrecisionMode, "adaptive", "Temporal representation.",
        unsupported={mode: NOT_YET for mode in ("isostring", "microseconds", "nanoseconds", "structured")})
    binary_handling_mode: BinaryHandlingMode = choice("binary.handling.mode", BinaryHandlingMode, "bytes",
                                                      "BYTEA representation.")
    interval_handling_mode: IntervalHandlingMode = choice("interval.handling.mode", IntervalHandlingMode,
                                                          "numeric", "INTERVAL representation.")
    hstore_handling_mode: HStoreHandlingMode = choice("hstore.handling.mode", HStoreHandlingMode, "json",
                                                      "HSTORE representation.")
    money_fraction_digits: int = setting("money.fraction.digits", Kind.INT, "2", "Scale of precise MONEY.",
                                         check=p.at_least(0))
    schema_name_adjustment_mode: NameAdjustmentMode = choice("schema.name.adjustment.mode", NameAdjustmentMode,
                                                             "none", "Schema name adjustment (avro modes: "
                                                             "Avro converters only).")
    field_name_adjustment_mode: NameAdjustmentMode = choice("field.name.adjustment.mode", NameAdjustmentMode,
                                                            "none", "Field name adjustment (avro modes: "
                                                            "Avro converters only).")
    include_unknown_datatypes: bool = setting("include.unknown.datatypes", Kind.BOOL, "false",
                                              "Publish unknown types as bytes.")
    unavailable_value_placeholder: str = setting("unavailable.value.placeholder", Kind.STR,
                                                 "__debezium_unavailable_value",
                                                 "Stands in for unchanged TOAST values.")


@section
class TopicSection:
    """Topic names: data, heartbeat and transaction topics (Debezium's ``SchemaTopicNamingStrategy``)."""

    prefix: str = setting("topic.prefix", Kind.STR, None, "Logical server name, prefix of every topic.",
                          required=True, check=p.TOPIC_NAME)
    delimiter: str = setting("topic.delimiter", Kind.STR, ".", "Joins topic name parts.", check=p.TOPIC_NAME)
    heartbeat_prefix: str = setting("topic.heartbeat.prefix", Kind.STR, "__debezium-heartbeat",
                                    "Heartbeat topic prefix.", check=p.TOPIC_NAME)
    heartbeat_name: str | None = setting("topic.heartbeat.name", Kind.STR, None,
                                         "Full heartbeat topic name (overrides the prefix).", check=p.TOPIC_NAME)
    transaction: str = setting("topic.transaction", Kind.STR, "transaction", "Transaction topic suffix.",
                               check=p.TOPIC_NAME)
    naming_strategy: str = setting("topic.naming.strategy", Kind.STR, "io.debezium.schema.SchemaTopicNamingStrategy",
                                   "Topic naming.", check=p.one_of("io.debezium.schema.SchemaTopicNamingStrategy",
                                                                   reason="custom naming strategies are Java classes"))

    def topic_for(self, schema: str | TableLike, table: str | None = None) -> str:
        """The data topic ``<topic.prefix><delim><schema><delim><table>``, made a legal Kafka topic name.

        Accepts ``topic_for("public", "orders")`` or ``topic_for(table_id)``. Like Debezium's
        ``SchemaTopicNamingStrategy``, characters other than letters, digits, ``.``, ``_`` and ``-``
        become ``_`` and the name is cut to 249 characters.
        """
        if isinstance(schema, str):
            schema_name, table_name = schema, table
        else:
            schema_name, table_name = schema.schema, schema.table
        if table_name is None:
            msg = "topic_for needs a table name (or a TableId)"
            raise TypeError(msg)
        parts = (part for part in (self.prefix, schema_name, table_name) if part.strip())
        return sanitize_topic_name(self.delimiter.join(parts))

    @property
    def heartbeat_topic(self) -> str:
        """``topic.heartbeat.name``, else ``<topic.heartbeat.prefix><delim><topic.prefix>``."""
        if self.heartbeat_name:
            return self.heartbeat_name
        return self.delimiter.join((self.heartbeat_prefix, self.prefix))

    @property
    def transaction_topic(self) -> str:
        """``<topic.prefix><delim><topic.transaction>`` (used when provide.transaction.metadata=true)."""
        return self.delimiter.join((self.prefix, self.transaction))


@section
class StreamingSection:
    """The capture loop's pace: batches, queue, polling and heartbeats."""

    heartbeat_interval_ms: int = setting("heartbeat.interval.ms", Kind.INT, "0", "Heartbeat period; 0 disables.",
                                         check=p.at_least(0))
    max_batch_size: int = setting("max.batch.size", Kind.INT, "2048", "Events per batch.", check=p.at_least(1))
    max_queue_size: int = setting("max.queue.size", Kind.INT, "8192", "Queued events; > max.batch.size.",
                                  check=p.at_least(1))
    poll_interval_ms: int = setting("poll.interval.ms", Kind.INT, "500", "Wait when no events arrive.",
                                    check=p.at_least(1))


@section
class KafkaSection:
    """Kafka (worker-side settings: signaller produces directly) and topic creation."""

    bootstrap_servers: str = setting("kafka.bootstrap.servers", Kind.STR, "localhost:9092",
                                     "Brokers (Connect worker default).", check=p.NOT_BLANK,
                                     aliases=("bootstrap.servers",))
    security_protocol: str | None = setting("security.protocol", Kind.STR, None,
                                            "Kafka client security.protocol for every client.")
    topic_creation_default_partitions: int = setting("topic.creation.default.partitions", Kind.INT, "1",
                                                     "Partitions of new topics (-1: broker's).",
                                                     check=p.positive_or_broker_default)
    topic_creation_default_replication_factor: int = setting("topic.creation.default.replication.factor",
                                                             Kind.INT, "1", "Replicas of new topics (-1: broker's).",
                                                             check=p.positive_or_broker_default)


@section
class OffsetSection:
    """Where and how often connector offsets are committed (``offset.storage`` is signaller's own)."""

    storage: OffsetStorage = choice("offset.storage", OffsetStorage, "kafka",
                                    "Where offsets are committed (signaller's own).")
    file_filename: str | None = setting("offset.storage.file.filename", Kind.STR, None,
                                        "Offsets file (for offset.storage=file).")
    topic: str = setting("offset.storage.topic", Kind.STR, None, "Offsets topic; default '<topic.prefix>-offsets'.",
                         check=p.TOPIC_NAME, aliases=("offsets.storage.topic",))
    flush_interval_ms: int = setting("offset.flush.interval.ms", Kind.INT, "60000", "Offset commit period.",
                                     check=p.at_least(1))


@section
class HttpSection:
    """signaller's HTTP API (signals, status, metrics)."""

    host: str = setting("signaller.http.host", Kind.STR, "127.0.0.1", "HTTP API bind address.", check=p.NOT_BLANK)
    port: int = setting("signaller.http.port", Kind.INT, "8089", "HTTP API port (Connect's REST uses 8083).",
                        check=p.in_range(1, 65535))
    token: Secret | None = setting("signaller.http.token", Kind.SECRET, None,
                                   "Bearer token; required unless bound to loopback.")


@dataclass(frozen=True, kw_only=True, eq=False)
class Sections:
    """Every section, under the name components reach it by (``config.database``, ``config.topics``, ...).

    The order of the fields is the order of ``fields.PROPERTIES``.
    """

    connector: ConnectorSection
    database: DatabaseSection
    capture: CaptureSection
    replication: ReplicationSection
    snapshot: SnapshotSection
    notifications: NotificationSection
    events: EventSection
    types: TypeSection
    topics: TopicSection
    streaming: StreamingSection
    kafka: KafkaSection
    offsets: OffsetSection
    http: HttpSection
    binlog: BinlogSection


@dataclass(frozen=True, slots=True)
class Setting:
    """Where a supported property lives: ``config.<section>.<field>``."""

    section: str
    field: str
    prop: Prop

    def value_in(self, config: Sections) -> object:
        """The typed value of this property in ``config``."""
        return getattr(getattr(config, self.section), self.field)


def _settings() -> tuple[Setting, ...]:
    hints = get_type_hints(Sections)
    found: list[Setting] = []
    for part in fields(Sections):
        for item in fields(hints[part.name]):
            prop = property_of(item)
            if prop is None:
                msg = f"{part.name}.{item.name} declares no property"
                raise RuntimeError(msg)
            found.append(Setting(part.name, item.name, prop))
    return tuple(found)


SETTINGS: tuple[Setting, ...] = _settings()
"""Every supported property with its place, in declaration order."""

SETTING_BY_NAME: Mapping[str, Setting] = MappingProxyType({setting.prop.name: setting for setting in SETTINGS})
"""Where each supported property lives, by its declared name (aliases are resolved by ``names.canonical``)."""

SECTION_TYPES: Mapping[str, type[Any]] = {name: hint for name, hint in get_type_hints(Sections).items()}
"""Section name -> section class."""


def sanitize_topic_name(name: str) -> str:
    """Debezium's ``sanitizedTopicName``: illegal characters -> ``_``, at most 249 characters."""
    cleaned = re.sub(r"[^A-Za-z0-9._\-]", "_", name)[:_MAX_TOPIC_LENGTH]
    return {".": "_", "..": "__"}.get(cleaned, cleaned)


def _admits(name: str, include: Patterns, exclude: Patterns) -> bool:
    if include:
        return any(pattern.fullmatch(name) for pattern in include)
    return not any(pattern.fullmatch(name) for pattern in exclude)


def _is_builtin(schema: str, table: str) -> bool:
    """PostgreSQL's system tables as Debezium's ``SystemTablesPredicate`` sees them."""
    system_schema = schema.lower() in _SYSTEM_SCHEMAS or schema.startswith("pg_temp")
    return system_schema or table.lower() in _SYSTEM_TABLES


def _same_table(table_id: TableId, schema: str, table: str) -> bool:
    return table_id.schema.casefold() == schema.casefold() and table_id.table.casefold() == table.casefold()


def _libpq_quote(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace("'", "\\'")
    return f"'{escaped}'"
