"""signaller's configuration: a user's Debezium PostgreSQL connector configuration, plus a few extras.

Sources (later wins): a file (Kafka Connect connector JSON, or Java ``.properties``), then
``SIGNALLER_<NAME>`` environment variables. Property names, defaults and accepted values are Debezium's.
Each supported property is declared once, as a field of a typed section (``sections.py``);
``fields.PROPERTIES`` is the whole table, with the accepted-and-ignored and refused ones. The result is
one immutable ``SignallerConfig`` composed of frozen sections; components take the section they need::

    config = load_config("register-postgres.json", os.environ)
    config.topics.topic_for("public", "orders")    # 'dbserver1.public.orders'
    psycopg2.connect(config.database.libpq_dsn())
    config.snapshot.chunk_size                     # incremental.snapshot.chunk.size

Bad input raises ``ConfigErrors`` (a ``signaller.errors.ConfigError``) listing every problem.
"""

from signaller.config.build import build_config, is_loopback
from signaller.config.fields import FAMILIES, PROPERTIES, Family, Kind, Prop, Status
from signaller.config.loading import config_from_mapping, load_config
from signaller.config.model import SignallerConfig, sanitize_topic_name
from signaller.config.names import env_name
from signaller.config.problems import ConfigErrors
from signaller.config.sections import (
    CaptureSection,
    ConnectorSection,
    DatabaseSection,
    EventSection,
    HttpSection,
    KafkaSection,
    NotificationSection,
    OffsetSection,
    ReplicationSection,
    SnapshotSection,
    StreamingSection,
    TopicSection,
    TypeSection,
)
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
    "CaptureSection",
    "ConfigErrors",
    "ConnectorSection",
    "DatabaseSection",
    "DecimalHandlingMode",
    "EventSection",
    "Family",
    "HStoreHandlingMode",
    "HttpSection",
    "IntervalHandlingMode",
    "KafkaSection",
    "KeyColumns",
    "Kind",
    "NameAdjustmentMode",
    "NotificationChannel",
    "NotificationSection",
    "OffsetSection",
    "OffsetStorage",
    "PluginName",
    "Prop",
    "ReplicationSection",
    "Secret",
    "SignalChannel",
    "SignallerConfig",
    "SnapshotMode",
    "SnapshotSection",
    "SslMode",
    "Status",
    "StreamingSection",
    "TimePrecisionMode",
    "TopicSection",
    "TypeSection",
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
