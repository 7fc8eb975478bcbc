"""Every configuration property signaller knows, declared as data: one entry per property.

Names, defaults and accepted values are Debezium's (``PostgresConnectorConfig``,
``RelationalDatabaseConnectorConfig``, ``CommonConnectorConfig``, ``AbstractTopicNamingStrategy``,
``KafkaSignalChannel``), or Kafka Connect's for the worker-side settings a sidecar needs, or signaller's
own under ``signaller.``. Each property has a status:

* ``supported``: parsed, validated and exposed as a typed attribute of ``SignallerConfig`` (the
  attribute name is the property name in snake case: ``signal.kafka.groupId`` -> ``signal_kafka_group_id``).
* ``accepted``: a Debezium/Connect property that means nothing to a sidecar or is not implemented yet;
  it is ignored with a logged warning, so an existing connector configuration still loads.
* ``refused``: a Debezium property whose silent omission would change what is published (masking,
  transforms); setting it to anything but empty is an error that explains why.

Anything else is unknown and an error. Deliberate departures from Debezium's defaults are noted in the
property's doc: ``plugin.name`` defaults to ``pgoutput`` (Debezium: ``decoderbufs``, which signaller
cannot decode), and ``topic.creation.default.*`` default to 1 (Connect has no default).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from signaller.config import parsing as p
from signaller.config.values import (
    AutoCreateMode,
    BinaryHandlingMode,
    DecimalHandlingMode,
    EventProcessingFailureHandlingMode,
    HStoreHandlingMode,
    IntervalHandlingMode,
    NameAdjustmentMode,
    NotificationChannel,
    OffsetStorage,
    PluginName,
    SignalChannel,
    SnapshotMode,
    SslMode,
    TimePrecisionMode,
    WatermarkStrategy,
)


class Kind(StrEnum):
    """The shape of a property's value."""

    STR = "str"
    INT = "int"
    BOOL = "bool"
    ENUM = "enum"
    LIST = "list"
    REGEX_LIST = "regex-list"
    SECRET = "secret"


class Status(StrEnum):
    """What signaller does with a property (see the module docstring)."""

    SUPPORTED = "supported"
    ACCEPTED = "accepted"
    REFUSED = "refused"


_KIND_PARSERS: Mapping[Kind, p.Parser] = {
    Kind.STR: p.parse_str,
    Kind.INT: p.parse_int,
    Kind.BOOL: p.parse_bool,
    Kind.LIST: p.parse_list,
    Kind.REGEX_LIST: p.parse_regex_list,
    Kind.SECRET: p.parse_secret,
}


@dataclass(frozen=True, slots=True)
class Prop:
    """One property: its Debezium name, value shape, status, default (as text) and validation.

    ``default`` is the text a user would write (``None``: unset, or derived from other properties as
    ``doc`` says). ``parser`` overrides the kind's parser; ``check`` validates the parsed value.
    ``aliases`` are other names for the same property (Connect's worker name ``bootstrap.servers``).
    """

    name: str
    kind: Kind
    status: Status
    doc: str
    default: str | None = None
    required: bool = False
    parser: p.Parser | None = None
    check: p.Check | None = None
    aliases: tuple[str, ...] = ()

    @property
    def attr(self) -> str:
        """The ``SignallerConfig`` attribute: snake case of the name (``signaller.`` prefix kept)."""
        snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", self.name)
        return re.sub(r"[.\-]", "_", snake).lower()

    def parse(self, text: str) -> object:
        """The typed value of ``text``; raises ``parsing.Rejected`` naming what is accepted."""
        parser = self.parser or _KIND_PARSERS[self.kind]
        value = parser(text)
        if self.check is not None and value is not None:
            self.check(value)
        return value


@dataclass(frozen=True, slots=True)
class Family:
    """Properties sharing a prefix, e.g. ``producer.*`` passed through to the Kafka producer."""

    prefix: str
    status: Status
    doc: str


def supported(
    name: str,
    kind: Kind,
    default: str | None,
    doc: str,
    *,
    required: bool = False,
    parser: p.Parser | None = None,
    check: p.Check | None = None,
    aliases: tuple[str, ...] = (),
) -> Prop:
    """Declare a property signaller implements."""
    return Prop(name, kind, Status.SUPPORTED, doc, default, required, parser, check, aliases)


def enum(
    name: str,
    choices: type[StrEnum],
    default: str,
    doc: str,
    unsupported: Mapping[str, str] | None = None,
    aliases: Mapping[str, str] | None = None,
) -> Prop:
    """Declare an enum property; ``unsupported`` maps Debezium values signaller refuses to the reason."""
    parser = p.enum_parser(choices, unsupported or {}, aliases or {})
    return Prop(name, Kind.ENUM, Status.SUPPORTED, doc, default, parser=parser)


def channels(
    name: str, choices: type[StrEnum], default: str, doc: str, unsupported: Mapping[str, str]
) -> Prop:
    """Declare a comma-separated list of channel names."""
    parser = p.enum_list_parser(choices, unsupported)
    return Prop(name, Kind.LIST, Status.SUPPORTED, doc, default, parser=parser)


def accepted(reason: str, *names: str) -> tuple[Prop, ...]:
    """Declare Debezium/Connect properties that are ignored with a warning giving ``reason``."""
    return tuple(Prop(name, Kind.STR, Status.ACCEPTED, reason) for name in names)


def refused(reason: str, *names: str) -> tuple[Prop, ...]:
    """Declare Debezium properties that are an error when set, explaining ``reason``."""
    return tuple(Prop(name, Kind.STR, Status.REFUSED, reason) for name in names)


PG_CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
_AVRO_CONVERTERS = (
    "io.confluent.connect.avro.AvroConverter",
    "io.apicurio.registry.utils.converter.AvroConverter",
)


def _json_converter_only(value: object) -> None:
    if value == JSON_CONVERTER:
        return
    avro = " (Avro output is coming; until then use JSON)" if value in _AVRO_CONVERTERS else ""
    raise p.Rejected(f"{JSON_CONVERTER}{avro}")


_HOSTNAME = p.matches(r"[a-zA-Z0-9\-_.]+", "a host name or IP address (letters, digits, '-', '_' and '.')")
_SLOT_NAME = p.matches(r"[a-z0-9_]{1,63}", "lower-case letters, digits and '_', at most 63 characters")
_NOT_YET = "not implemented by signaller yet"
_JAVA_ONLY = "a Java/Kafka Connect runtime setting with no meaning for signaller"
_SNAPSHOT_TUNING = "initial-snapshot tuning of Debezium's Java snapshotter, not used by signaller"
_CHANGES_OUTPUT = "it changes the published events and signaller cannot apply it; apply it downstream"
_ADJUST_AVRO = {m: "schema name adjustment for Avro is not implemented yet" for m in ("avro", "avro_unicode")}
_JMX = "JMX is a Java facility; use http (signaller's REST channel), kafka, file or source"

PROPERTIES: tuple[Prop, ...] = (
    # --- Kafka Connect connector envelope -----------------------------------------------------------
    supported("connector.class", Kind.STR, PG_CONNECTOR, "Must name Debezium's PostgreSQL connector.",
              check=p.one_of(PG_CONNECTOR, reason="signaller implements Debezium's PostgreSQL connector")),
    *accepted("Kafka Connect's connector name; signaller runs one connector per process and uses the name "
              "only to key its offsets in a Kafka offsets topic, as Connect does", "name"),
    *accepted("Debezium's PostgreSQL connector always runs a single task", "tasks.max"),
    supported("key.converter", Kind.STR, JSON_CONVERTER, "Key format.", check=_json_converter_only),
    supported("value.converter", Kind.STR, JSON_CONVERTER, "Value format.", check=_json_converter_only),
    supported("key.converter.schemas.enable", Kind.BOOL, "true", "Wrap keys as {schema, payload}."),
    supported("value.converter.schemas.enable", Kind.BOOL, "true", "Wrap values as {schema, payload}."),
    *refused(f"Single Message Transforms: {_CHANGES_OUTPUT}", "transforms", "predicates"),
    *refused(f"Java plug-ins: {_CHANGES_OUTPUT}", "converters", "post.processors"),
    *accepted(_JAVA_ONLY, "header.converter", "config.action.reload", "exactly.once.support",
              "transaction.boundary", "transaction.boundary.interval.ms", "config.providers", "plugin.path",
              "group.id", "client.id", "config.storage.topic", "status.storage.topic", "listeners",
              "config.storage.replication.factor", "offset.storage.replication.factor",
              "status.storage.replication.factor", "offset.storage.partitions", "status.storage.partitions",
              "rest.port", "rest.host.name", "rest.advertised.host.name", "rest.advertised.port",
              "topic.creation.enable", "topic.creation.groups"),
    # --- PostgreSQL connection ------------------------------------------------------------------------
    supported("database.hostname", Kind.STR, None, "PostgreSQL host.", required=True, check=_HOSTNAME),
    supported("database.port", Kind.INT, "5432", "PostgreSQL port.", check=p.in_range(1, 65535)),
    supported("database.user", Kind.STR, None, "User with REPLICATION.", required=True, check=p.NOT_BLANK),
    supported("database.password", Kind.SECRET, None, "Password of database.user."),
    supported("database.dbname", Kind.STR, None, "Database to capture.", required=True, check=p.NOT_BLANK),
    enum("database.sslmode", SslMode, "prefer", "libpq sslmode."),
    supported("database.sslcert", Kind.STR, None, "Client certificate file (libpq sslcert)."),
    supported("database.sslkey", Kind.STR, None, "Client private key file (libpq sslkey)."),
    supported("database.sslpassword", Kind.SECRET, None, "Password of database.sslkey (libpq sslpassword)."),
    supported("database.sslrootcert", Kind.STR, None, "CA certificates file (libpq sslrootcert)."),
    supported("database.tcpKeepAlive", Kind.BOOL, "true", "TCP keep-alive probes (libpq keepalives)."),
    *accepted("a Java SSL socket factory; use database.sslmode, database.sslrootcert", "database.sslfactory"),
    *accepted(_NOT_YET, "database.initial.statements", "database.query.timeout.ms", "heartbeat.action.query",
              "signal.emit.failure.max.retries", "signal.emit.failure.backoff.ms",
              "replica.identity.autoset.values", "slot.failover", "slot.stream.params",
              "offset.mismatch.strategy", "lsn.flush.mode", "flush.lsn.source", "lsn.flush.timeout.ms",
              "lsn.flush.timeout.action", "xmin.fetch.interval.ms",
              "schema.refresh.mode", "message.prefix.include.list", "message.prefix.exclude.list",
              "retriable.restart.connector.wait.ms", "max.queue.size.in.bytes", "query.fetch.size",
              "event.converting.failure.handling.mode",
              "include.schema.comments", "guardrail.collections.max", "guardrail.collections.limit.action",
              "extended.headers.enabled", "topic.cache.size"),
    *accepted("removed in Debezium 2.0; topic.prefix replaces it", "database.server.name"),
    # --- Which tables and columns ---------------------------------------------------------------------
    supported("schema.include.list", Kind.REGEX_LIST, "", "Schemas to capture (regexes, full match)."),
    supported("schema.exclude.list", Kind.REGEX_LIST, "", "Schemas not to capture (regexes, full match)."),
    supported("table.include.list", Kind.REGEX_LIST, "", "Tables to capture: regexes on schema.table."),
    supported("table.exclude.list", Kind.REGEX_LIST, "", "Tables not to capture: regexes on schema.table."),
    supported("column.include.list", Kind.REGEX_LIST, "", "Columns to keep: regexes on schema.table.column."),
    supported("column.exclude.list", Kind.REGEX_LIST, "", "Columns to drop: regexes on schema.table.column."),
    supported("table.ignore.builtin", Kind.BOOL, "true", "Skip pg_catalog, information_schema, pg_temp*."),
    supported("message.key.columns", Kind.STR, "", "Custom keys: '<table regex>:<cols>;...'.",
              parser=p.parse_key_columns),
    *refused(f"column masking/truncation: {_CHANGES_OUTPUT}; ignoring it would publish clear values",
             "column.propagate.source.type", "datatype.propagate.source.type"),
    # --- Replication slot and publication -------------------------------------------------------------
    enum("plugin.name", PluginName, "pgoutput", "Logical decoding plugin. Debezium defaults to decoderbufs.",
         unsupported={"decoderbufs": "it needs a server extension and signaller decodes pgoutput only; "
                                     "set plugin.name=pgoutput (PostgreSQL 10+ has it built in)"}),
    supported("slot.name", Kind.STR, "debezium", "Replication slot.", check=_SLOT_NAME),
    supported("slot.drop.on.stop", Kind.BOOL, "false", "Drop the slot on orderly stop."),
    supported("slot.max.retries", Kind.INT, "6", "Attempts to acquire a busy slot.", check=p.at_least(0)),
    supported("slot.retry.delay.ms", Kind.INT, "10000", "Delay between slot attempts.", check=p.at_least(0)),
    supported("publication.name", Kind.STR, "dbz_publication", "pgoutput publication.", check=p.NOT_BLANK),
    enum("publication.autocreate.mode", AutoCreateMode, "all_tables", "How the publication is created."),
    supported("publish.via.partition.root", Kind.BOOL, "false", "Publish partitions via the root.",
              check=p.not_true("publishing through the partition root is not implemented yet")),
    supported("status.update.interval.ms", Kind.INT, "10000", "Standby status period.", check=p.at_least(1)),
    supported("read.only", Kind.BOOL, "false", "Read-only incremental snapshots (pg_current_snapshot())."),
    # --- Snapshots -------------------------------------------------------------------------------------
    enum("snapshot.mode", SnapshotMode, "initial", "Startup snapshot. 'never' is read as 'no_data'.",
         aliases={"never": "no_data"},
         unsupported={
             "always": "a snapshot on every start is not implemented; use initial, or send an "
                       "execute-snapshot signal for an incremental snapshot",
             "initial_only": "signaller always streams after the snapshot; use initial",
             "configuration_based": "snapshotter plug-ins are Java classes",
             "custom": "snapshotter plug-ins are Java classes",
             "exported": "removed from Debezium (it meant initial); use initial",
         }),
    supported("incremental.snapshot.chunk.size", Kind.INT, "1024", "Rows per incremental-snapshot chunk.",
              check=p.at_least(1)),
    enum("incremental.snapshot.watermarking.strategy", WatermarkStrategy, "insert_insert",
         "How window watermarks are written to the signal table."),
    *accepted(_SNAPSHOT_TUNING, "snapshot.isolation.mode", "snapshot.locking.mode",
              "snapshot.locking.mode.custom.name", "snapshot.query.mode", "snapshot.query.mode.custom.name",
              "snapshot.mode.custom.name", "snapshot.mode.configuration.based.snapshot.data",
              "snapshot.mode.configuration.based.snapshot.schema",
              "snapshot.mode.configuration.based.start.stream",
              "snapshot.mode.configuration.based.snapshot.on.schema.error",
              "snapshot.mode.configuration.based.snapshot.on.data.error", "snapshot.fetch.size",
              "snapshot.delay.ms", "streaming.delay.ms", "snapshot.max.threads",
              "snapshot.max.threads.multiplier",
              "snapshot.include.collection.list", "snapshot.select.statement.overrides",
              "snapshot.lock.timeout.ms", "snapshot.tables.order.by.row.count"),
    *accepted("applies to MySQL, MariaDB and SQL Server only", "incremental.snapshot.allow.schema.changes"),
    # --- Signals and notifications -------------------------------------------------------------------
    supported("signal.data.collection", Kind.STR, "", "Signal table 'schema.table'; always captured.",
              parser=p.parse_table_id),
    channels("signal.enabled.channels", SignalChannel, "source", "Signal channels; 'http' is signaller's.",
             unsupported={"jmx": _JMX, "in-process": "the embedded-engine API has no meaning for a sidecar"}),
    supported("signal.poll.interval.ms", Kind.INT, "5000", "Signal poll period.", check=p.at_least(1)),
    supported("signal.kafka.topic", Kind.STR, None, "Signal topic; default '<topic.prefix>-signal'.",
              check=p.TOPIC_NAME),
    supported("signal.kafka.bootstrap.servers", Kind.STR, None,
              "Signal topic brokers; default kafka.bootstrap.servers (Debezium requires it)."),
    supported("signal.kafka.groupId", Kind.STR, "kafka-signal", "Group used to commit signal offsets."),
    supported("signal.kafka.poll.timeout.ms", Kind.INT, "0", "Signal consumer poll timeout (docs say 100).",
              check=p.at_least(0)),
    supported("signal.file", Kind.STR, "file-signals.txt", "File of JSON signals, truncated after reading."),
    channels("notification.enabled.channels", NotificationChannel, "", "Notification channels.",
             unsupported={"jmx": _JMX}),
    supported("notification.sink.topic.name", Kind.STR, None, "Sink channel topic.", check=p.TOPIC_NAME),
    # --- Change events -----------------------------------------------------------------------------------
    supported("tombstones.on.delete", Kind.BOOL, "true", "Follow each delete with a tombstone."),
    enum("decimal.handling.mode", DecimalHandlingMode, "precise", "NUMERIC/DECIMAL representation."),
    enum("time.precision.mode", TimePrecisionMode, "adaptive", "Temporal representation.",
         unsupported={mode: _NOT_YET for mode in ("isostring", "microseconds", "nanoseconds", "structured")}),
    enum("binary.handling.mode", BinaryHandlingMode, "bytes", "BYTEA representation."),
    enum("interval.handling.mode", IntervalHandlingMode, "numeric", "INTERVAL representation."),
    enum("hstore.handling.mode", HStoreHandlingMode, "json", "HSTORE representation."),
    supported("money.fraction.digits", Kind.INT, "2", "Scale of precise MONEY.", check=p.at_least(0)),
    enum("schema.name.adjustment.mode", NameAdjustmentMode, "none", "Schema name adjustment.",
         unsupported=_ADJUST_AVRO),
    enum("field.name.adjustment.mode", NameAdjustmentMode, "none", "Field name adjustment.",
         unsupported=_ADJUST_AVRO),
    supported("include.unknown.datatypes", Kind.BOOL, "false", "Publish unknown types as bytes."),
    supported("unavailable.value.placeholder", Kind.STR, "__debezium_unavailable_value",
              "Stands in for unchanged TOAST values."),
    supported("skipped.operations", Kind.STR, "t", "Ops not published: c,u,d,t,r or none.",
              parser=p.parse_skipped_operations),
    supported("provide.transaction.metadata", Kind.BOOL, "false", "BEGIN/END events and transaction blocks."),
    enum("event.processing.failure.handling.mode", EventProcessingFailureHandlingMode, "fail",
         "A record Kafka refuses as too large: stop (fail), or leave it out with a log line, a notification "
         "and a metric (warn, skip).", aliases={"ignore": "skip"}),
    supported("skip.messages.without.change", Kind.BOOL, "false", "Drop updates of excluded columns only.",
              check=p.not_true(_NOT_YET)),
    *accepted(_JAVA_ONLY, "transaction.metadata.factory", "sourceinfo.struct.maker", "custom.metric.tags",
              "statistics.metrics.enabled", "connection.validation.timeout.ms",
              "executor.shutdown.timeout.ms"),
    # --- Topics, heartbeats, batching ---------------------------------------------------------------------
    supported("topic.prefix", Kind.STR, None, "Logical server name, prefix of every topic.", required=True,
              check=p.TOPIC_NAME),
    supported("topic.delimiter", Kind.STR, ".", "Joins topic name parts.", check=p.TOPIC_NAME),
    supported("topic.heartbeat.prefix", Kind.STR, "__debezium-heartbeat", "Heartbeat topic prefix.",
              check=p.TOPIC_NAME),
    supported("topic.heartbeat.name", Kind.STR, None, "Full heartbeat topic name (overrides the prefix).",
              check=p.TOPIC_NAME),
    supported("topic.transaction", Kind.STR, "transaction", "Transaction topic suffix.", check=p.TOPIC_NAME),
    supported("topic.naming.strategy", Kind.STR, "io.debezium.schema.SchemaTopicNamingStrategy",
              "Topic naming.", check=p.one_of("io.debezium.schema.SchemaTopicNamingStrategy",
                                              reason="custom naming strategies are Java classes")),
    supported("heartbeat.interval.ms", Kind.INT, "0", "Heartbeat period; 0 disables.", check=p.at_least(0)),
    supported("max.batch.size", Kind.INT, "2048", "Events per batch.", check=p.at_least(1)),
    supported("max.queue.size", Kind.INT, "8192", "Queued events; > max.batch.size.", check=p.at_least(1)),
    supported("poll.interval.ms", Kind.INT, "500", "Wait when no events arrive.", check=p.at_least(1)),
    # --- Kafka (worker-side settings: signaller produces directly) ------------------------------------
    supported("kafka.bootstrap.servers", Kind.STR, "localhost:9092", "Brokers (Connect worker default).",
              check=p.NOT_BLANK, aliases=("bootstrap.servers",)),
    supported("security.protocol", Kind.STR, None, "Kafka client security.protocol for every client."),
    supported("topic.creation.default.partitions", Kind.INT, "1", "Partitions of new topics (-1: broker's).",
              check=p.positive_or_broker_default),
    supported("topic.creation.default.replication.factor", Kind.INT, "1", "Replicas of new topics "
              "(-1: broker's).", check=p.positive_or_broker_default),
    enum("offset.storage", OffsetStorage, "kafka", "Where offsets are committed (signaller's own)."),
    supported("offset.storage.file.filename", Kind.STR, None, "Offsets file (for offset.storage=file)."),
    supported("offset.storage.topic", Kind.STR, None, "Offsets topic; default '<topic.prefix>-offsets'.",
              check=p.TOPIC_NAME, aliases=("offsets.storage.topic",)),
    supported("offset.flush.interval.ms", Kind.INT, "60000", "Offset commit period.", check=p.at_least(1)),
    # --- signaller's own ---------------------------------------------------------------------------------
    supported("signaller.http.host", Kind.STR, "127.0.0.1", "HTTP API bind address.", check=p.NOT_BLANK),
    supported("signaller.http.port", Kind.INT, "8089", "HTTP API port (Connect's REST uses 8083).",
              check=p.in_range(1, 65535)),
    supported("signaller.http.token", Kind.SECRET, None, "Bearer token; required unless bound to loopback."),
)

FAMILIES: tuple[Family, ...] = (
    Family("producer.", Status.SUPPORTED, "Kafka producer settings, prefix stripped (worker style)."),
    Family("producer.override.", Status.SUPPORTED, "Kafka producer settings, prefix stripped (connector)."),
    Family("signal.consumer.", Status.SUPPORTED, "Kafka signal consumer settings, prefix stripped."),
    Family("sasl.", Status.SUPPORTED, "Kafka client SASL settings for every client."),
    Family("ssl.", Status.SUPPORTED, "Kafka client TLS settings for every client."),
    Family("column.mask.", Status.REFUSED, f"column masking: {_CHANGES_OUTPUT}; ignoring it would publish "
                                           "clear values"),
    Family("column.truncate.", Status.REFUSED, f"column truncation: {_CHANGES_OUTPUT}"),
    *(Family(prefix, Status.ACCEPTED, _JAVA_ONLY) for prefix in (
        "consumer.", "consumer.override.", "admin.", "admin.override.", "key.converter.", "value.converter.",
        "header.converter.", "transforms.", "predicates.", "errors.", "internal.", "driver.",
        "openlineage.integration.", "topic.creation.", "config.providers.")),
    Family("snapshot.select.statement.overrides.", Status.ACCEPTED, _SNAPSHOT_TUNING),
    Family("snapshot.max.threads.multiplier.", Status.ACCEPTED, _SNAPSHOT_TUNING),
)
