"""Value types a parsed configuration holds: secrets, Debezium's closed sets of modes, key-column rules.

The enums list only the values signaller implements. Debezium values signaller recognises but refuses
are declared next to each property in ``sections.py`` with the reason, so an error can explain them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from signaller.config.secrets import MASK as MASK  # re-exported
from signaller.config.secrets import is_secret_name as is_secret_name  # re-exported
from signaller.patterns import UserPattern


def shown(name: str, value: object) -> object:
    """``value`` as it may appear in logs and errors: ``MASK`` when ``name`` is secret, else unchanged."""
    return MASK if value is not None and (is_secret_name(name) or isinstance(value, Secret)) else value


@dataclass(frozen=True, slots=True)
class Secret:
    """A string that is never printed. ``reveal()`` is the only way to read it."""

    _value: str = field(repr=False)

    def reveal(self) -> str:
        """The secret in clear text: pass it to a driver, never to a log."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret({MASK!r})"

    def __str__(self) -> str:
        return MASK


class SslMode(StrEnum):
    """``database.sslmode``: libpq's ``sslmode`` (Debezium passes it to the JDBC driver)."""

    DISABLE = "disable"
    ALLOW = "allow"
    PREFER = "prefer"
    REQUIRE = "require"
    VERIFY_CA = "verify-ca"
    VERIFY_FULL = "verify-full"


class SnapshotMode(StrEnum):
    """``snapshot.mode`` values signaller implements (``never`` is read as ``no_data``)."""

    INITIAL = "initial"
    NO_DATA = "no_data"
    WHEN_NEEDED = "when_needed"


class PluginName(StrEnum):
    """``plugin.name``: signaller decodes pgoutput only."""

    PGOUTPUT = "pgoutput"


class AutoCreateMode(StrEnum):
    """``publication.autocreate.mode``."""

    ALL_TABLES = "all_tables"
    FILTERED = "filtered"
    DISABLED = "disabled"
    NO_TABLES = "no_tables"


class DecimalHandlingMode(StrEnum):
    """``decimal.handling.mode``."""

    PRECISE = "precise"
    DOUBLE = "double"
    STRING = "string"


class TimePrecisionMode(StrEnum):
    """``time.precision.mode`` values signaller implements."""

    ADAPTIVE = "adaptive"
    ADAPTIVE_TIME_MICROSECONDS = "adaptive_time_microseconds"
    CONNECT = "connect"


class BinaryHandlingMode(StrEnum):
    """``binary.handling.mode``."""

    BYTES = "bytes"
    BASE64 = "base64"
    BASE64_URL_SAFE = "base64-url-safe"
    HEX = "hex"


class IntervalHandlingMode(StrEnum):
    """``interval.handling.mode``."""

    NUMERIC = "numeric"
    STRING = "string"


class HStoreHandlingMode(StrEnum):
    """``hstore.handling.mode``."""

    JSON = "json"
    MAP = "map"


class NameAdjustmentMode(StrEnum):
    """``schema.name.adjustment.mode`` / ``field.name.adjustment.mode`` values signaller implements
    (``avro`` and ``avro_unicode`` with the Avro converters only)."""

    NONE = "none"
    AVRO = "avro"
    AVRO_UNICODE = "avro_unicode"


class WatermarkStrategy(StrEnum):
    """``incremental.snapshot.watermarking.strategy`` (Debezium compares case-insensitively)."""

    INSERT_INSERT = "insert_insert"
    INSERT_DELETE = "insert_delete"


class SignalChannel(StrEnum):
    """``signal.enabled.channels`` entries signaller implements; ``http`` is signaller's own."""

    SOURCE = "source"
    KAFKA = "kafka"
    FILE = "file"
    HTTP = "http"


class NotificationChannel(StrEnum):
    """``notification.enabled.channels`` entries signaller implements."""

    SINK = "sink"
    LOG = "log"


class EventProcessingFailureHandlingMode(StrEnum):
    """``event.processing.failure.handling.mode`` (Debezium's ``ignore`` is read as ``skip``)."""

    FAIL = "fail"
    WARN = "warn"
    SKIP = "skip"


class OffsetStorage(StrEnum):
    """``offset.storage`` (signaller's own): where connector offsets are committed."""

    FILE = "file"
    KAFKA = "kafka"


@dataclass(frozen=True, slots=True)
class KeyColumns:
    """A ``message.key.columns`` rule: tables whose ``schema.table`` matches ``table`` key on ``columns``."""

    table: UserPattern
    columns: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.table.text}:{','.join(self.columns)}"
