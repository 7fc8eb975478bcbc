"""Turning merged property text into a validated ``SignallerConfig``, reporting every problem at once."""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from signaller.config.binlog import BINLOG_CONNECTORS, MARIADB_CONNECTOR, MYSQL_CONNECTOR
from signaller.config.fields import PROPERTIES, Kind, Prop, Status
from signaller.config.model import SignallerConfig
from signaller.config.names import declared, family_of, suggestions
from signaller.config.parsing import Rejected
from signaller.config.problems import problem, raise_if_any
from signaller.config.secrets import clip, printable
from signaller.config.sections import AVRO_CONVERTERS, PG_CONNECTOR, SECTION_TYPES, SETTINGS
from signaller.config.sources import Layer, RawValue
from signaller.config.values import NotificationChannel, OffsetStorage, Secret
from signaller.errors import ConfigError

log = logging.getLogger("signaller.config")

NOT_SET = "(not set)"
"""The origin reported for a required property that was given nowhere."""


@dataclass(slots=True)
class _Build:
    """Work in progress: typed values by property name, ignored names, problems found so far."""

    layer: Layer
    values: dict[str, object] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    problems: list[ConfigError] = field(default_factory=list)

    def origin(self, name: str) -> str:
        raw = self.layer.values.get(name)
        return raw.origin if raw is not None else NOT_SET

    def text(self, name: str) -> str | None:
        raw = self.layer.values.get(name)
        return raw.text if raw is not None else None


def build_config(layer: Layer) -> SignallerConfig:
    """Validate ``layer`` (already merged, aliases resolved) into a ``SignallerConfig``.

    Raises ``ConfigErrors`` listing every problem: those the readers found, unknown and refused
    properties, values that do not parse, missing required properties and cross-property rules.
    Accepted-but-ignored properties are logged as warnings and listed in ``ignored_properties``.
    """
    build = _Build(layer, problems=list(layer.problems))
    for name, raw in layer.values.items():
        _classify(build, name, raw)
    for prop in PROPERTIES:
        given = prop.name in layer.values  # given but invalid: already reported, no default
        if prop.status is Status.SUPPORTED and prop.name not in build.values and not given:
            _apply_default(build, prop)
    _derive_defaults(build.values)
    for rule in _CROSS_CHECKS:
        rule(build)
    raise_if_any(build.problems)
    return SignallerConfig(
        **_sections(build.values),
        raw=MappingProxyType({name: raw.text for name, raw in layer.values.items()}),
        origins=MappingProxyType({name: raw.origin for name, raw in layer.values.items()}),
        ignored_properties=tuple(build.ignored),
    )


def _sections(values: Mapping[str, object]) -> dict[str, Any]:
    """Each section built from the typed values of its properties (every parser returns its field's type;
    a unit test checks them)."""
    by_section: dict[str, dict[str, object]] = {name: {} for name in SECTION_TYPES}
    for setting in SETTINGS:
        by_section[setting.section][setting.field] = values[setting.prop.name]
    return {name: SECTION_TYPES[name](**given) for name, given in by_section.items()}


def _classify(build: _Build, name: str, raw: RawValue) -> None:
    """Parse a supported property, note an accepted one, refuse a refused one, report an unknown one."""
    prop = declared(name)
    if prop is not None and prop.status is Status.SUPPORTED:
        _parse(build, prop, raw)
        return
    family = family_of(name)
    source = prop or family
    status, reason = (source.status, source.doc) if source is not None else (None, "")
    if status is Status.ACCEPTED:
        # the value is never logged: it is not used, and may be a secret under any name
        log.warning("ignoring %s (from %s): %s", printable(clip(raw.written)), printable(raw.origin), reason)
        build.ignored.append(name)
    elif status is Status.REFUSED and raw.text.strip():
        build.problems.append(problem(raw.written, raw.text, f"unset or empty: {reason}", raw.origin))
    elif status is None:
        connector = connector_label(build.text("connector.class"))
        build.problems.append(problem(raw.written, raw.text, _unknown(name, connector), raw.origin))


_CONNECTOR_LABELS: Mapping[str, str] = MappingProxyType({
    PG_CONNECTOR: "Debezium's PostgreSQL connector",
    MARIADB_CONNECTOR: "Debezium's MariaDB connector",
    MYSQL_CONNECTOR: "Debezium's MySQL connector",
})


def connector_label(connector_class: str | None) -> str:
    """How messages name the configured connector: ``Debezium's MariaDB connector`` for
    ``io.debezium.connector.mariadb.MariaDbConnector``; the PostgreSQL one when ``connector.class`` is unset
    (its default); Debezium's connectors in general for a class signaller does not implement."""
    if connector_class is None or not connector_class.strip():
        return _CONNECTOR_LABELS[PG_CONNECTOR]
    return _CONNECTOR_LABELS.get(connector_class.strip(), "Debezium's connectors")


def _unknown(name: str, connector: str) -> str:
    near = suggestions(name)
    hint = f"did you mean {' or '.join(repr(n) for n in near)}?" if near else "see signaller.config.fields"
    return f"a property known to signaller or {connector} ({clip(name)!r} is unknown; {hint})"


def _parse(build: _Build, prop: Prop, raw: RawValue) -> None:
    try:
        value = prop.parse(raw.text)
    except Rejected as rejected:
        build.problems.append(problem(raw.written, raw.text, rejected.accepted, raw.origin))
        return
    build.values[prop.name] = _blank_is_unset(prop, value)
    if prop.name == "snapshot.mode" and raw.text.strip().lower() == "never":
        log.warning("snapshot.mode=never (from %s) is read as no_data, Debezium's newer name",
                    printable(raw.origin))


def _blank_is_unset(prop: Prop, value: object) -> object:
    """An empty text or secret for an optional property means unset."""
    if prop.default is None and prop.kind in (Kind.STR, Kind.SECRET):
        text = value.reveal() if isinstance(value, Secret) else value
        return None if text == "" else value
    return value


def _apply_default(build: _Build, prop: Prop) -> None:
    if prop.required:
        accepted = f"a value: {prop.name} is required ({prop.doc})"
        build.problems.append(problem(prop.name, None, accepted, NOT_SET))
        return
    build.values[prop.name] = None if prop.default is None else prop.parse(prop.default)


def _derive_defaults(values: dict[str, object]) -> None:
    """Defaults that depend on other properties, as Debezium/signaller define them."""
    prefix = values.get("topic.prefix") or ""
    if values.get("signal.kafka.topic") is None:
        values["signal.kafka.topic"] = f"{prefix}-signal"
    if values.get("offset.storage.topic") is None:
        values["offset.storage.topic"] = f"{prefix}-offsets"
    if values.get("signal.kafka.bootstrap.servers") is None:
        values["signal.kafka.bootstrap.servers"] = values.get("kafka.bootstrap.servers")


# --- rules across properties ---------------------------------------------------------------------------


def _exclusive_lists(build: _Build) -> None:
    """Debezium refuses an include list and an exclude list of the same kind together."""
    for kind in ("schema", "table", "column"):
        include, exclude = f"{kind}.include.list", f"{kind}.exclude.list"
        if (build.text(include) or "").strip() and (build.text(exclude) or "").strip():
            accepted = f"no {exclude} when {include} is already specified (use one or the other)"
            build.problems.append(problem(exclude, build.text(exclude), accepted, build.origin(exclude)))


def _queue_larger_than_batch(build: _Build) -> None:
    queue, batch = build.values.get("max.queue.size"), build.values.get("max.batch.size")
    if isinstance(queue, int) and isinstance(batch, int) and queue <= batch:
        accepted = f"an integer larger than max.batch.size ({batch})"
        build.problems.append(problem("max.queue.size", queue, accepted, build.origin("max.queue.size")))


def _sink_needs_topic(build: _Build) -> None:
    channels = build.values.get("notification.enabled.channels")
    if isinstance(channels, tuple) and NotificationChannel.SINK in channels \
            and not build.values.get("notification.sink.topic.name"):
        accepted = "a topic name: required when notification.enabled.channels includes sink"
        build.problems.append(problem("notification.sink.topic.name", None, accepted, NOT_SET))


def _file_storage_needs_filename(build: _Build) -> None:
    file_storage = build.values.get("offset.storage") is OffsetStorage.FILE
    if file_storage and not build.values.get("offset.storage.file.filename"):
        accepted = "a file path: required when offset.storage=file"
        build.problems.append(problem("offset.storage.file.filename", None, accepted, NOT_SET))


def _token_unless_loopback(build: _Build) -> None:
    """The HTTP API accepts signals; off loopback it must demand a bearer token."""
    host = build.values.get("signaller.http.host")
    if isinstance(host, str) and not is_loopback(host) and build.values.get("signaller.http.token") is None:
        accepted = (f"a bearer token: required because signaller.http.host={host!r} is not a loopback "
                    f"address (set signaller.http.token, or bind to 127.0.0.1)")
        origin = build.origin("signaller.http.host")
        build.problems.append(problem("signaller.http.token", None, accepted, origin))


def _converters_agree(build: _Build) -> None:
    """Key and value are both JSON or both Avro, each Avro converter names its registry, and the avro name
    adjustment modes come with the Avro converters (the JSON path does not adjust names)."""
    key, value = build.values.get("key.converter"), build.values.get("value.converter")
    if not isinstance(key, str) or not isinstance(value, str):
        return
    if (key in AVRO_CONVERTERS) != (value in AVRO_CONVERTERS):
        accepted = f"the same format as key.converter ({key}): signaller does not mix JSON and Avro yet"
        build.problems.append(problem("value.converter", value, accepted, build.origin("value.converter")))
        return
    for side, converter in (("key", key), ("value", value)):
        url = f"{side}.converter.schema.registry.url"
        if converter in AVRO_CONVERTERS and not build.values.get(url):
            accepted = f"the schema registry's URL (Confluent API): required with {side}.converter={converter}"
            build.problems.append(problem(url, None, accepted, NOT_SET))
        user_info = f"{side}.converter.basic.auth.user.info"
        if build.values.get(f"{side}.converter.basic.auth.credentials.source") == "USER_INFO" \
                and build.values.get(user_info) is None:
            accepted = f"user:password: required when {side}.converter.basic.auth.credentials.source=USER_INFO"
            build.problems.append(problem(user_info, None, accepted, NOT_SET))
    if value not in AVRO_CONVERTERS:
        for name in ("schema.name.adjustment.mode", "field.name.adjustment.mode"):
            mode = build.values.get(name)
            if mode is not None and str(mode) != "none":
                accepted = f"none (the {mode} mode is implemented with the Avro converters only)"
                build.problems.append(problem(name, str(mode), accepted, build.origin(name)))


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses (``127.0.0.0/8``, ``::1``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _postgres_needs_dbname(build: _Build) -> None:
    """``database.dbname`` is required by the PostgreSQL connector only (the binlog connectors capture every
    database their lists admit)."""
    if build.values.get("connector.class", PG_CONNECTOR) == PG_CONNECTOR and not build.values.get("database.dbname"):
        accepted = "a value: database.dbname is required (Database to capture.)"
        build.problems.append(problem("database.dbname", None, accepted, NOT_SET))


def _binlog_watermarks_need_signal_table(build: _Build) -> None:
    """The binlog connectors write their snapshot watermarks as rows of the signal table (MariaDB has no
    transactional log message): without ``signal.data.collection`` only ``read.only=true`` snapshots work."""
    if build.values.get("connector.class") in BINLOG_CONNECTORS and not build.values.get("signal.data.collection") \
            and build.values.get("read.only") is not True:
        accepted = ("a table <database>.<table> with columns id, type, data: required with "
                    f"connector.class={build.values.get('connector.class')} unless read.only=true (incremental "
                    "snapshots write their watermarks into it)")
        build.problems.append(problem("signal.data.collection", None, accepted, NOT_SET))


def _binlog_refuses_adaptive_precision(build: _Build) -> None:
    """Debezium's binlog connectors refuse ``time.precision.mode=adaptive`` ("The 'adaptive' time.precision.mode
    is no longer supported"); their default, when the property is unset, is ``adaptive_time_microseconds``."""
    text = build.text("time.precision.mode")
    if build.values.get("connector.class") in BINLOG_CONNECTORS and text is not None \
            and text.strip().lower() == "adaptive":
        accepted = (f"adaptive_time_microseconds or connect (connector.class={build.values.get('connector.class')} "
                    "no longer supports adaptive, as Debezium's binlog connectors)")
        build.problems.append(problem("time.precision.mode", text, accepted, build.origin("time.precision.mode")))


_CROSS_CHECKS: tuple[Callable[[_Build], None], ...] = (
    _postgres_needs_dbname,
    _binlog_watermarks_need_signal_table,
    _binlog_refuses_adaptive_precision,
    _exclusive_lists,
    _queue_larger_than_batch,
    _sink_needs_topic,
    _file_storage_needs_filename,
    _token_unless_loopback,
    _converters_agree,
)

DEFAULTS: Mapping[str, str | None] = MappingProxyType({prop.name: prop.default for prop in PROPERTIES})
"""Declared defaults by property name, as text (None: unset or derived)."""
