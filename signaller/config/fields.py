"""The property table: every configuration property signaller knows, each declared once.

Supported properties are declared as fields of the typed sections in ``sections.py`` (name, type, default,
doc, validation, secret flag, accepted values); this module adds the Debezium/Connect properties signaller
only accepts (ignored with a logged warning, so an existing connector configuration still loads) or
refuses (an error when set: ignoring them would change what is published), and the prefix families.
``PROPERTIES`` is derived: the supported ones in section order, then the accepted and refused ones.
Anything else is unknown and an error. See ``declare.Status`` for what each status means.
"""

from __future__ import annotations

from signaller.config.declare import Family, Kind, Prop, Status, accepted, refused
from signaller.config.sections import NOT_YET, SETTINGS

__all__ = ["FAMILIES", "PROPERTIES", "UNSUPPORTED", "Family", "Kind", "Prop", "Status"]

_JAVA_ONLY = "a Java/Kafka Connect runtime setting with no meaning for signaller"
_SNAPSHOT_TUNING = "initial-snapshot tuning of Debezium's Java snapshotter, not used by signaller"
_SCHEMA_HISTORY = ("a schema history setting of Debezium's binlog connectors that signaller does not use (its "
                   "history is schema.history.internal.kafka.topic on schema.history.internal.kafka.bootstrap."
                   "servers; it follows every DDL statement it can parse and stops at one it cannot)")
_CHANGES_OUTPUT = "it changes the published events and signaller cannot apply it; apply it downstream"

UNSUPPORTED: tuple[Prop, ...] = (
    # --- Kafka Connect connector envelope -----------------------------------------------------------
    *accepted("Kafka Connect's connector name; signaller runs one connector per process and uses the name "
              "only to key its offsets in a Kafka offsets topic, as Connect does", "name"),
    *accepted("Debezium's PostgreSQL, MariaDB and MySQL connectors always run a single task", "tasks.max"),
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
    *accepted("a Java SSL socket factory; use database.sslmode, database.sslrootcert", "database.sslfactory"),
    *accepted(NOT_YET, "database.initial.statements", "database.query.timeout.ms", "heartbeat.action.query",
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
    *refused(f"column masking/truncation: {_CHANGES_OUTPUT}; ignoring it would publish clear values",
             "column.propagate.source.type", "datatype.propagate.source.type"),
    # --- Snapshots -------------------------------------------------------------------------------------
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
    # --- Change events -----------------------------------------------------------------------------------
    *accepted(_JAVA_ONLY, "transaction.metadata.factory", "sourceinfo.struct.maker", "custom.metric.tags",
              "statistics.metrics.enabled", "connection.validation.timeout.ms",
              "executor.shutdown.timeout.ms"),
)
"""The properties signaller accepts (and ignores) or refuses: declared here, as they have no section field."""

PROPERTIES: tuple[Prop, ...] = (*(setting.prop for setting in SETTINGS), *UNSUPPORTED)
"""Every declared property: the supported ones (from the sections, in order), then ``UNSUPPORTED``."""

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
    Family("schema.history.internal.", Status.ACCEPTED, _SCHEMA_HISTORY),
    Family("snapshot.select.statement.overrides.", Status.ACCEPTED, _SNAPSHOT_TUNING),
    Family("snapshot.max.threads.multiplier.", Status.ACCEPTED, _SNAPSHOT_TUNING),
)
"""Prefix families: members are passed through (supported), ignored (accepted) or refused."""
