"""``SignallerConfig``: the one immutable, validated configuration, composed of typed sections.

Build it with ``signaller.config.load_config`` or ``config_from_mapping``; the constructor does not
validate. Each section (``config.database``, ``config.snapshot``, ``config.topics``, ...; see
``sections.py``) holds the typed values of its properties; derived defaults (``signal.kafka.topic``,
``offset.storage.topic``, ``signal.kafka.bootstrap.servers``) are already filled in. This class adds
what spans sections or needs the text as given: the Kafka client settings (with the pass-through
``producer.*``/``sasl.*``/``ssl.*`` families), raw access by Debezium name, provenance and display.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from signaller.config.names import canonical, family_of
from signaller.config.sections import SETTING_BY_NAME, SETTINGS, Sections
from signaller.config.sections import sanitize_topic_name as sanitize_topic_name  # re-exported
from signaller.config.values import MASK, KeyColumns, Secret, is_secret_name, shown
from signaller.patterns import UserPattern

ClientConfig = dict[str, str | int | bool]
PRODUCER_DEFAULTS: ClientConfig = {"enable.idempotence": True, "acks": "all", "linger.ms": 5, "compression.type": "lz4"}
"""The sidecar's producer settings before the shared client and ``producer.*`` settings (see
``SignallerConfig.producer_config``)."""


@dataclass(frozen=True, kw_only=True, eq=False)
class SignallerConfig(Sections):
    """The validated configuration: one typed section per concern (see ``Sections``), plus provenance.

    ``raw`` maps each property that was set (aliases resolved) to its text, ``origins`` to where it
    came from; ``ignored_properties`` lists the accepted-but-ignored ones that were set. Secrets are
    ``Secret`` values and never appear in ``repr``/``str``/``to_display_dict``.
    """

    raw: Mapping[str, str]
    origins: Mapping[str, str]
    ignored_properties: tuple[str, ...]

    def is_table_captured(self, schema: str, table: str) -> bool:
        """Whether changes of ``schema.table`` are captured: the capture lists, and the signal table always.

        See ``CaptureSection.is_table_captured``; the signal table is ``signal.data.collection``.
        """
        return self.capture.is_table_captured(schema, table, always=self.snapshot.signal_data_collection)

    # --- Kafka clients ---------------------------------------------------------------------------------

    def kafka_client_config(self) -> dict[str, str]:
        """Settings every Kafka client shares: brokers, ``security.protocol``, ``sasl.*`` and ``ssl.*``."""
        config = {"bootstrap.servers": self.kafka.bootstrap_servers}
        if self.kafka.security_protocol:
            config["security.protocol"] = self.kafka.security_protocol
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
        config: ClientConfig = {**PRODUCER_DEFAULTS}
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
        config["bootstrap.servers"] = self.snapshot.signal_kafka_bootstrap_servers
        config.update({"group.id": self.snapshot.signal_kafka_group_id, "enable.auto.commit": True,
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
        setting = SETTING_BY_NAME.get(key)
        if setting is not None:
            text = _text(setting.value_in(self))
            return default if text is None else text
        return default

    def origin_of(self, name: str) -> str | None:
        """Where the value of ``name`` came from (``path:line``, ``env:VAR``, ...), or None if unset."""
        return self.origins.get(canonical(name))

    def to_display_dict(self) -> dict[str, str | None]:
        """Every effective setting by Debezium name, as text, secrets shown as ``********``."""
        display: dict[str, str | None] = {}
        for setting in SETTINGS:
            value, name = setting.value_in(self), setting.prop.name
            display[name] = MASK if value is not None and is_secret_name(name) else _text(value, masked=True)
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
