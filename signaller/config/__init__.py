"""signaller's configuration: a user's Debezium PostgreSQL connector configuration, plus a few extras.

Sources (later wins): a file (Kafka Connect connector JSON, or Java ``.properties``), then
``SIGNALLER_<NAME>`` environment variables. Property names, defaults and accepted values are Debezium's;
``fields.PROPERTIES`` declares every one with its status (supported / accepted-and-ignored / refused).
The result is one immutable ``SignallerConfig`` with typed attributes and Debezium-derived helpers::

    config = load_config("register-postgres.json", os.environ)
    config.topic_for("public", "orders")        # 'dbserver1.public.orders'
    psycopg2.connect(config.libpq_dsn())

Bad input raises ``ConfigErrors`` (a ``signaller.errors.ConfigError``) listing every problem.
"""

from signaller.config.build import build_config, is_loopback
from signaller.config.fields import FAMILIES, PROPERTIES, Family, Kind, Prop, Status
from signaller.config.loading import config_from_mapping, load_config
from signaller.config.model import SignallerConfig, sanitize_topic_name
from signaller.config.names import env_name
from signaller.config.problems import ConfigErrors
from signaller.config.sources import parse_properties
from signaller.config.values import (
    MASK,
    AutoCreateMode,
    BinaryHandlingMode,
    DecimalHandlingMode,
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
)

__all__ = [
    "FAMILIES",
    "MASK",
    "PROPERTIES",
    "AutoCreateMode",
    "BinaryHandlingMode",
    "ConfigErrors",
    "DecimalHandlingMode",
    "Family",
    "HStoreHandlingMode",
    "IntervalHandlingMode",
    "KeyColumns",
    "Kind",
    "NameAdjustmentMode",
    "NotificationChannel",
    "OffsetStorage",
    "PluginName",
    "Prop",
    "Secret",
    "SignalChannel",
    "SignallerConfig",
    "SnapshotMode",
    "SslMode",
    "Status",
    "TimePrecisionMode",
    "WatermarkStrategy",
    "build_config",
    "config_from_mapping",
    "env_name",
    "is_loopback",
    "is_secret_name",
    "load_config",
    "parse_properties",
    "sanitize_topic_name",
]
