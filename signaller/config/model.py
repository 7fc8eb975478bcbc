"""``SignallerConfig``: the one immutable, validated configuration, with Debezium-derived helpers.

Build it with ``signaller.config.load_config`` or ``config_from_mapping``; the constructor does not
validate. Every attribute is the typed value of the supported property of the same name in snake case
(``fields.Prop.attr``); derived defaults (``signal_kafka_topic``, ``offset_storage_topic``,
``signal_kafka_bootstrap_servers``) are already filled in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Protocol

from signaller.config.fields import PROPERTIES, Prop, Status
from signaller.config.names import canonical, declared, family_of
from signaller.config.values import (
    MASK,
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
    is_secret_name,
    shown,
)
from signaller.model.tables import TableId
from signaller.patterns import UserPattern

Patterns = tuple[UserPattern, ...]
ClientConfig = dict[str, str | int | bool]

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


@dataclass(frozen=True, kw_only=True, eq=False)
class SignallerConfig:
    """The validated configuration. Attributes are typed values of the same-named Debezium properties.

    ``raw`` maps each property that was set (aliases resolved) to its text, ``origins`` to where it
    came from; ``ignored_properties`` lists the accepted-but-ignored ones that were set. Secrets are
    ``Secret`` values and never appear in ``repr``/``str``/``to_display_dict``.
    """

    connector_class: str
    key_converter: str
    value_converter: str
    key_converter_schemas_enable: bool
    value_converter_schemas_enable: bool
    database_hostname: str
    database_port: int
    database_user: str
    database_password: Secret | None
    database_dbname: str
    database_sslmode: SslMode
    database_sslcert: str | None
    database_sslkey: str | None
    database_sslpassword: Secret | None
    database_sslrootcert: str | None
    database_tcp_keep_alive: bool
    schema_include_list: Patterns
    schema_exclude_list: Patterns
    table_include_list: Patterns
    table_exclude_list: Patterns
    column_include_list: Patterns
    column_exclude_list: Patterns
    table_ignore_builtin: bool
    message_key_columns: tuple[KeyColumns, ...]
    plugin_name: PluginName
    slot_name: str
    slot_drop_on_stop: bool
    slot_max_retries: int
    slot_retry_delay_ms: int
    publication_name: str
    publication_autocreate_mode: AutoCreateMode
    publish_via_partition_root: bool
    status_update_interval_ms: int
    read_only: bool
    snapshot_mode: SnapshotMode
    incremental_snapshot_chunk_size: int
    incremental_snapshot_watermarking_strategy: WatermarkStrategy
    signal_data_collection: TableId | None
    signal_enabled_channels: tuple[SignalChannel, ...]
    signal_poll_interval_ms: int
    signal_kafka_topic: str
    signal_kafka_bootstrap_servers: str
    signal_kafka_group_id: str
    signal_kafka_poll_timeout_ms: int
    signal_file: str
    notification_enabled_channels: tuple[NotificationChannel, ...]
    notification_sink_topic_name: str | None
    tombstones_on_delete: bool
    decimal_handling_mode: DecimalHandlingMode
    time_precision_mode: TimePrecisionMode
    binary_handling_mode: BinaryHandlingMode
    interval_handling_mode: IntervalHandlingMode
    hstore_handling_mode: HStoreHandlingMode
    money_fraction_digits: int
    schema_name_adjustment_mode: NameAdjustmentMode
    field_name_adjustment_mode: NameAdjustmentMode
    include_unknown_datatypes: bool
    unavailable_value_placeholder: str
    skipped_operations: frozenset[str]
    provide_transaction_metadata: bool
    event_processing_failure_handling_mode: EventProcessingFailureHandlingMode
    skip_messages_without_change: bool
    topic_prefix: str
    topic_delimiter: str
    topic_heartbeat_prefix: str
    topic_heartbeat_name: str | None
    topic_transaction: str
    topic_naming_strategy: str
    heartbeat_interval_ms: int
    max_batch_size: int
    max_queue_size: int
    poll_interval_ms: int
    kafka_bootstrap_servers: str
    security_protocol: str | None
    topic_creation_default_partitions: int
    topic_creation_default_replication_factor: int
    offset_storage: OffsetStorage
    offset_storage_file_filename: str | None
    offset_storage_topic: str
    offset_flush_interval_ms: int
    signaller_http_host: str
    signaller_http_port: int
    signaller_http_token: Secret | None
    raw: Mapping[str, str]
    origins: Mapping[str, str]
    ignored_properties: tuple[str, ...]

    # --- topics ---------------------------------------------------------------------------------------

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
        parts = (part for part in (self.topic_prefix, schema_name, table_name) if part.strip())
        return sanitize_topic_name(self.topic_delimiter.join(parts))

    @property
    def heartbeat_topic(self) -> str:
        """``topic.heartbeat.name``, else ``<topic.heartbeat.prefix><delim><topic.prefix>``."""
        if self.topic_heartbeat_name:
            return self.topic_heartbeat_name
        return self.topic_delimiter.join((self.topic_heartbeat_prefix, self.topic_prefix))

    @property
    def transaction_topic(self) -> str:
        """``<topic.prefix><delim><topic.transaction>`` (used when provide.transaction.metadata=true)."""
        return self.topic_delimiter.join((self.topic_prefix, self.topic_transaction))

    # --- filters ----------------------------------------------------------------------------------------

    def is_table_captured(self, schema: str, table: str) -> bool:
        """Whether changes of ``schema.table`` are captured (Debezium's ``RelationalTableFilters``).

        The signal table is always captured. Otherwise built-in tables are skipped (unless
        ``table.ignore.builtin=false``), then the schema lists and the table lists apply; every
        expression must match the whole name, case-insensitively.
        """
        signal_table = self.signal_data_collection
        if signal_table is not None and _same_table(signal_table, schema, table):
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

    # --- clients ----------------------------------------------------------------------------------------

    def libpq_dsn(self, **extra: str) -> str:
        """A libpq connection string, password included: pass it to the driver, never log it.

        ``extra`` adds or replaces keywords (e.g. ``replication="database"``).
        """
        params: dict[str, str | None] = {
            "host": self.database_hostname,
            "port": str(self.database_port),
            "dbname": self.database_dbname,
            "user": self.database_user,
            "password": self.database_password.reveal() if self.database_password else None,
            "sslmode": self.database_sslmode.value,
            "sslcert": self.database_sslcert,
            "sslkey": self.database_sslkey,
            "sslpassword": self.database_sslpassword.reveal() if self.database_sslpassword else None,
            "sslrootcert": self.database_sslrootcert,
            "keepalives": "1" if self.database_tcp_keep_alive else "0",
            "application_name": "signaller",
            **extra,
        }
        return " ".join(f"{key}={_libpq_quote(value)}" for key, value in params.items() if value is not None)

    def kafka_client_config(self) -> dict[str, str]:
        """Settings every Kafka client shares: brokers, ``security.protocol``, ``sasl.*`` and ``ssl.*``."""
        config = {"bootstrap.servers": self.kafka_bootstrap_servers}
        if self.security_protocol:
            config["security.protocol"] = self.security_protocol
        config.update(self._family("sasl.", strip=False))
        config.update(self._family("ssl.", strip=False))
        return config

    def producer_config(self) -> ClientConfig:
        """confluent-kafka producer settings: idempotent, ``acks=all``, lz4, 5 ms linger.

        Then the shared client settings, then ``producer.*`` and ``producer.override.*`` (prefix
        stripped) override, as Kafka Connect applies worker and per-connector producer settings.
        The Java producer's ``max.request.size`` becomes librdkafka's ``message.max.bytes``
        (unless that is set too): librdkafka refuses the Java name.
        """
        config: ClientConfig = {
            "enable.idempotence": True, "acks": "all", "linger.ms": 5, "compression.type": "lz4",
        }
        config.update(self.kafka_client_config())
        config.update(self._family("producer."))
        config.update(self._family("producer.override."))
        if "max.request.size" in config:  # the Java producer's name for librdkafka's message.max.bytes
            config.setdefault("message.max.bytes", config.pop("max.request.size"))
        return config

    def signal_consumer_config(self) -> ClientConfig:
        """confluent-kafka consumer settings for the Kafka signal channel (Debezium's defaults).

        ``signal.consumer.*`` (prefix stripped) overrides them.
        """
        config: ClientConfig = {**self.kafka_client_config()}
        config["bootstrap.servers"] = self.signal_kafka_bootstrap_servers
        config.update({"group.id": self.signal_kafka_group_id, "enable.auto.commit": True,
                       "auto.offset.reset": "earliest", "session.timeout.ms": 10000, "fetch.min.bytes": 1})
        config.update(self._family("signal.consumer."))
        return config

    def _family(self, prefix: str, strip: bool = True) -> dict[str, str]:
        """Properties set under exactly the family ``prefix`` (not a longer one), prefix stripped."""
        return {name.removeprefix(prefix) if strip else name: value for name, value in self.raw.items()
                if (family := family_of(name)) is not None and family.prefix == prefix}

    # --- raw access and display -----------------------------------------------------------------------

    def get(self, name: str, default: str | None = None) -> str | None:
        """The text of property ``name`` (or alias): as set, else the effective default, else ``default``.

        Secrets are returned in clear text; use ``to_display_dict`` for anything shown to people.
        """
        key = canonical(name)
        if key in self.raw:
            return self.raw[key]
        prop = declared(key)
        if prop is not None and prop.attr in _FIELD_NAMES:
            text = _text(getattr(self, prop.attr))
            return default if text is None else text
        return default

    def origin_of(self, name: str) -> str | None:
        """Where the value of ``name`` came from (``path:line``, ``env:VAR``, ...), or None if unset."""
        return self.origins.get(canonical(name))

    def to_display_dict(self) -> dict[str, str | None]:
        """Every effective setting by Debezium name, as text, secrets shown as ``********``."""
        display: dict[str, str | None] = {}
        for item in fields(self):
            prop = _PROP_BY_ATTR.get(item.name)
            if prop is not None:
                value = getattr(self, item.name)
                display[prop.name] = MASK if value is not None and is_secret_name(prop.name) \
                    else _text(value, masked=True)
        for name, value in self.raw.items():
            display.setdefault(name, str(shown(name, value)))
        return display

    def secret_values(self) -> tuple[str, ...]:
        """The clear text of every secret set (declared secrets and secret-looking names), for log redaction."""
        return tuple(sorted({value for name, value in self.raw.items() if value and is_secret_name(name)}))

    def __repr__(self) -> str:
        given = ", ".join(f"{name}={shown(name, value)!r}" for name, value in sorted(self.raw.items()))
        return f"SignallerConfig({given})"

    __str__ = __repr__


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


def _text(value: object, masked: bool = False) -> str | None:
    """A typed value back as property text (``Secret`` revealed unless ``masked``)."""
    if value is None:
        return None
    if isinstance(value, Secret):
        return MASK if masked else value.reveal()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, UserPattern):
        return value.text
    if isinstance(value, frozenset):
        return ",".join(sorted(str(item) for item in value))
    if isinstance(value, tuple):
        separator = ";" if value and isinstance(value[0], KeyColumns) else ","
        return separator.join(_text(item) or "" for item in value)
    return str(value)


_FIELD_NAMES = frozenset(item.name for item in fields(SignallerConfig))


_PROP_BY_ATTR: Mapping[str, Prop] = {
    prop.attr: prop for prop in PROPERTIES if prop.status is Status.SUPPORTED
}
