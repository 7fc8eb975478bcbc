"""signaller.config: loading a user's Debezium PostgreSQL connector configuration."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from signaller.config import (
    FAMILIES,
    MASK,
    PROPERTIES,
    ConfigErrors,
    DecimalHandlingMode,
    NotificationChannel,
    OffsetStorage,
    PluginName,
    Secret,
    SignalChannel,
    SignallerConfig,
    SnapshotMode,
    SslMode,
    Status,
    WatermarkStrategy,
    config_from_mapping,
    env_name,
    load_config,
    parse_properties,
)
from signaller.config.names import property_for_env
from signaller.config.sections import SETTINGS
from signaller.errors import ConfigError
from signaller.model.tables import TableId

pytestmark = pytest.mark.unit

PASSWORD = "pw-Zq8'x\\y"  # quote and backslash: exercises DSN quoting; must never be printed
TOKEN = "tok-9f2c-never-printed"

# Debezium's tutorial connector (debezium-examples tutorial/register-postgres.json), unchanged.
REGISTER_POSTGRES = {
    "name": "inventory-connector",
    "config": {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "tasks.max": "1",
        "database.hostname": "postgres",
        "database.port": "5432",
        "database.user": "postgres",
        "database.password": "postgres",
        "database.dbname": "postgres",
        "topic.prefix": "dbserver1",
        "schema.include.list": "inventory",
    },
}

BASE: dict[str, object] = {
    "topic.prefix": "pg1",
    "database.hostname": "db.internal",
    "database.user": "cdc",
    "database.dbname": "shop",
}
BASE_TEXT = "".join(f"{key}={value}\n" for key, value in BASE.items())


def config(**overrides: object) -> SignallerConfig:
    """A valid config: ``BASE`` plus overrides given with '_' for '.' (``slot_name="x"``)."""
    return config_from_mapping({**BASE, **{key.replace("_", "."): value for key, value in overrides.items()}})


def problems(build: Callable[[], object]) -> list[ConfigError]:
    """The individual errors ``build`` raises (it must raise ConfigErrors)."""
    with pytest.raises(ConfigErrors) as caught:
        build()
    assert isinstance(caught.value, ConfigError)
    return list(caught.value.errors)


def only_problem(properties: Mapping[str, object], env: Mapping[str, str] | None = None) -> ConfigError:
    found = problems(lambda: config_from_mapping({**BASE, **properties}, env=env))
    assert len(found) == 1, found
    return found[0]


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


# --- connector JSON ---------------------------------------------------------------------------------------


def test_debezium_tutorial_json_loads_unchanged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = write(tmp_path, "register-postgres.json", json.dumps(REGISTER_POSTGRES, indent=4))
    with caplog.at_level(logging.WARNING, logger="signaller.config"):
        cfg = load_config(path, {})
    assert (cfg.topics.prefix, cfg.database.hostname, cfg.database.port) == ("dbserver1", "postgres", 5432)
    assert cfg.database.user == "postgres" and cfg.database.dbname == "postgres"
    assert cfg.database.password == Secret("postgres")
    assert [p.text for p in cfg.capture.schema_include_list] == ["inventory"]
    assert cfg.replication.plugin_name is PluginName.PGOUTPUT  # Debezium would default to decoderbufs
    assert cfg.snapshot.mode is SnapshotMode.INITIAL
    assert (cfg.replication.slot_name, cfg.replication.publication_name) == ("debezium", "dbz_publication")
    assert set(cfg.ignored_properties) == {"tasks.max", "name"}
    assert "tasks.max" in caplog.text and "name" in caplog.text
    assert cfg.get("name") == "inventory-connector"
    assert cfg.origin_of("topic.prefix") == f"connector-json:{path}"
    assert cfg.topics.topic_for("inventory", "customers") == "dbserver1.inventory.customers"
    assert cfg.is_table_captured("inventory", "customers")
    assert not cfg.is_table_captured("public", "customers")


def test_inner_config_object_and_native_json_types(tmp_path: Path) -> None:
    inner = {**BASE, "database.port": 6543, "tombstones.on.delete": False, "slot.name": None,
             "table.include.list": ["public.a", "public.b"], "incremental.snapshot.chunk.size": 10}
    cfg = load_config(write(tmp_path, "inner.json", json.dumps(inner)), {})
    assert cfg.database.port == 6543 and cfg.events.tombstones_on_delete is False
    assert cfg.replication.slot_name == "debezium"  # null leaves the property unset
    assert [p.text for p in cfg.capture.table_include_list] == ["public.a", "public.b"]
    assert cfg.snapshot.chunk_size == 10


def test_json_content_is_detected_without_json_extension(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, "connector.conf", json.dumps(REGISTER_POSTGRES)), {})
    assert cfg.topics.prefix == "dbserver1"


def test_connector_class_must_be_a_connector_signaller_implements() -> None:
    # issue 16: the MariaDB and MySQL connectors are implemented; Oracle's is not.
    error = only_problem({"connector.class": "io.debezium.connector.oracle.OracleConnector"})
    assert error.key == "connector.class"
    assert error.value == "io.debezium.connector.oracle.OracleConnector"
    assert "io.debezium.connector.postgresql.PostgresConnector" in error.accepted
    assert "io.debezium.connector.mariadb.MariaDbConnector" in error.accepted


def test_json_objects_as_values_and_duplicate_keys_are_problems(tmp_path: Path) -> None:
    text = '{"topic.prefix": "a", "topic.prefix": "b", "database.hostname": {"x": 1}}'
    found = problems(lambda: load_config(write(tmp_path, "c.json", text), {}))
    assert {"topic.prefix", "database.hostname"} <= {e.key for e in found}


def test_unparseable_json_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.json", '{\n  "topic.prefix": "a",\n}')
    (error,) = problems(lambda: load_config(path, {}))
    assert error.origin is not None and error.origin.startswith(f"connector-json:{path}:3")


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    (error,) = problems(lambda: load_config(str(tmp_path / "absent.properties"), {}))
    assert "readable file" in error.accepted


# --- config providers -----------------------------------------------------------------------------------


def test_env_config_provider_is_resolved_from_env() -> None:
    cfg = config_from_mapping({**BASE, "database.password": "${env:PGPASS}", "slot.name": "s_${env:SUFFIX}"},
                              env={"PGPASS": PASSWORD, "SUFFIX": "x1"})
    assert cfg.database.password is not None and cfg.database.password.reveal() == PASSWORD
    assert cfg.replication.slot_name == "s_x1"
    assert cfg.origin_of("slot.name") == "mapping via ${env:SUFFIX}"


def test_missing_env_reference_and_other_providers_are_refused() -> None:
    found = problems(lambda: config_from_mapping(
        {**BASE, "database.password": "${file:/opt/pw.properties:pw}", "slot.name": "${env:NOPE}"}, env={}))
    by_key = {e.key: e for e in found}
    assert "'file' is not supported" in by_key["database.password"].accepted
    assert by_key["database.password"].value == MASK
    assert "NOPE to be set" in by_key["slot.name"].accepted


# --- .properties ------------------------------------------------------------------------------------------

PROPERTIES_TEXT = (
    "# comment line\n"
    "! another comment \\\n"
    "topic.prefix=pg1\n"
    "   database.hostname : db.internal\n"
    "database.user   cdc\n"
    "database.dbname=sh\\\n"
    "        op\n"
    "key\\=with\\:seps = v\n"
    "unicode=caf\\u00e9\\tend\n"
    "empty=\n"
    "slash=ends\\\\\\\\\r\n"
    "\n"
    "   \n"
    "spaces = keep trailing  \n"
)


def test_properties_parsing_follows_java_util_properties() -> None:
    entries, found = parse_properties(PROPERTIES_TEXT, "f.properties")
    assert found == []
    parsed = {key: value for key, value, _ in entries}
    assert parsed == {
        "topic.prefix": "pg1",
        "database.hostname": "db.internal",
        "database.user": "cdc",
        "database.dbname": "shop",
        "key=with:seps": "v",
        "unicode": "café\tend",
        "empty": "",
        "slash": "ends\\\\",
        "spaces": "keep trailing  ",
    }
    origins = {key: origin for key, _, origin in entries}
    assert origins["topic.prefix"] == "f.properties:3" and origins["database.dbname"] == "f.properties:6"


def test_properties_bad_unicode_escape_is_a_problem() -> None:
    _, found = parse_properties("topic.prefix=a\\u12G4\n", "f.properties")
    assert found[0].key == "topic.prefix" and found[0].origin == "f.properties:1"
    assert "four hexadecimal digits" in found[0].accepted


def test_load_properties_file(tmp_path: Path) -> None:
    text = BASE_TEXT + "bootstrap.servers=k1:9092,k2:9092\n"
    cfg = load_config(write(tmp_path, "signaller.properties", text), {})
    assert cfg.kafka.bootstrap_servers == "k1:9092,k2:9092"
    assert cfg.get("bootstrap.servers") == cfg.get("kafka.bootstrap.servers") == "k1:9092,k2:9092"
    assert cfg.origin_of("bootstrap.servers") == f"{tmp_path / 'signaller.properties'}:5"


def test_alias_and_name_with_different_values_in_one_file_is_a_problem(tmp_path: Path) -> None:
    text = BASE_TEXT + "bootstrap.servers=a:1\nkafka.bootstrap.servers=b:1\n"
    (error,) = problems(lambda: load_config(write(tmp_path, "c.properties", text), {}))
    assert error.key == "kafka.bootstrap.servers" and "bootstrap.servers" in error.accepted


# --- environment --------------------------------------------------------------------------------------------


def test_env_overrides_file_and_is_mapped_by_declared_names(tmp_path: Path) -> None:
    text = BASE_TEXT + "slot.name=from_file\nbootstrap.servers=f:9092\n"
    env = {
        "SIGNALLER_SLOT_NAME": "from_env",
        "SIGNALLER_KAFKA_BOOTSTRAP_SERVERS": "e:9092",
        "SIGNALLER_SIGNAL_KAFKA_GROUPID": "grp",
        "SIGNALLER_HTTP_PORT": "9999",
        "SIGNALLER_PRODUCER_LINGER_MS": "50",
        "SIGNALLER_TEST_PG_DSN": "ignored: a test gate, not a property",
        "PATH": "/usr/bin",
    }
    cfg = load_config(write(tmp_path, "c.properties", text), env)
    assert cfg.replication.slot_name == "from_env" and cfg.origin_of("slot.name") == "env:SIGNALLER_SLOT_NAME"
    assert cfg.kafka.bootstrap_servers == "e:9092"
    assert cfg.snapshot.signal_kafka_group_id == "grp" and cfg.http.port == 9999
    assert cfg.producer_config()["linger.ms"] == "50"


def test_env_only_configuration() -> None:
    env = {env_name(k): str(v) for k, v in BASE.items()}
    assert env["SIGNALLER_TOPIC_PREFIX"] == "pg1" and env["SIGNALLER_DATABASE_HOSTNAME"] == "db.internal"
    assert load_config(None, env).topics.prefix == "pg1"


def test_every_declared_name_round_trips_through_its_env_variable() -> None:
    for prop in PROPERTIES:
        for name in (prop.name, *prop.aliases):
            assert property_for_env(env_name(name)) == prop.name, name


def test_unknown_env_variable_names_the_variable_and_nearest_names() -> None:
    error = only_problem({}, env={"SIGNALLER_DATABASE_HOSTNAM": "x"})
    assert error.key == "SIGNALLER_DATABASE_HOSTNAM" and error.origin == "env:SIGNALLER_DATABASE_HOSTNAM"
    assert "SIGNALLER_DATABASE_HOSTNAME" in error.accepted


# --- bad input: every class names property, value, origin and what is accepted ------------------------------

BAD_VALUES = [
    ("database.port", "five", "an integer"),
    ("database.port", "70000", "from 1 to 65535"),
    ("tombstones.on.delete", "yes", "true or false"),
    ("database.sslmode", "strict", "disable, allow, prefer, require, verify-ca, verify-full"),
    ("plugin.name", "decoderbufs", "signaller decodes pgoutput only"),
    ("snapshot.mode", "always", "initial, no_data, when_needed"),
    ("snapshot.mode", "initial_only", "initial, no_data, when_needed"),
    ("snapshot.mode", "sometimes", "one of initial, no_data, when_needed"),
    ("time.precision.mode", "nanoseconds", "adaptive, adaptive_time_microseconds, connect"),
    ("table.include.list", "public.(orders", "does not compile"),
    ("topic.prefix", "bad prefix!", "legal Kafka topic name"),
    ("slot.name", "Slot-1", "lower-case letters, digits and '_'"),
    ("skipped.operations", "c,x", "c, u, d, t, r"),
    ("skipped.operations", "none,c", "'none' alone"),
    ("signal.data.collection", "debezium_signal", "schema.table"),
    ("message.key.columns", "public.orders", "'<schema.table regex>:<column>"),
    ("value.converter", "io.confluent.connect.protobuf.ProtobufConverter", "JSON or Avro"),
    ("value.converter", "io.confluent.connect.avro.AvroConverter", "does not mix JSON and Avro"),
    ("signal.enabled.channels", "source,jmx", "JMX is a Java facility"),
    ("notification.enabled.channels", "sink,telegram", "one of sink, log"),
    ("incremental.snapshot.chunk.size", "0", ">= 1"),
    ("topic.creation.default.partitions", "0", "-1 for the broker's default"),
    ("transforms", "unwrap", "Single Message Transforms"),
    ("column.mask.with.3.chars", "public.users.email", "publish clear values"),
    ("publish.via.partition.root", "true", "false"),
    ("kafka.bootstrap.servers", " ", "a non-empty value"),
]


@pytest.mark.parametrize(("name", "value", "accepted"), BAD_VALUES)
def test_bad_value_error_names_property_value_origin_accepted(name: str, value: str, accepted: str) -> None:
    error = only_problem({name: value})
    assert (error.key, error.value, error.origin) == (name, value, "mapping")
    assert accepted in error.accepted
    assert name in str(error) and value in str(error) and "mapping" in str(error) and accepted in str(error)


def test_unknown_property_is_named_with_suggestions_and_its_value_masked() -> None:
    """An unknown name's value never helps to explain the name (and a misspelt name may hold a secret)."""
    error = only_problem({"database.hostnme": "db"})
    assert (error.key, error.value, error.origin) == ("database.hostnme", MASK, "mapping")
    assert "did you mean 'database.hostname'" in error.accepted
    assert "database.hostnme" in str(error) and "mapping" in str(error)


@pytest.mark.parametrize(("connector_class", "named"), [
    (None, "Debezium's PostgreSQL connector"),
    ("io.debezium.connector.mariadb.MariaDbConnector", "Debezium's MariaDB connector"),
    ("io.debezium.connector.mysql.MySqlConnector", "Debezium's MySQL connector"),
])
def test_unknown_property_message_names_the_configured_connector(connector_class: str | None, named: str) -> None:
    # A binlog connector also needs a signal table or read.only (a problem of its own): given here.
    given = {} if connector_class is None else {"connector.class": connector_class, "read.only": "true"}
    error = only_problem({**given, "database.hostnme": "db"})
    assert f"a property known to signaller or {named} (" in error.accepted
    assert "PostgreSQL" not in error.accepted or connector_class is None


def test_binlog_schema_history_properties_are_read_and_the_others_accepted(caplog: pytest.LogCaptureFixture) -> None:
    """Debezium's MariaDB/MySQL schema history properties load: the topic, its Kafka and the captured-DDL filters
    are read; the others are ignored with a warning naming what signaller uses instead."""
    history = {"schema.history.internal.kafka.bootstrap.servers": "kafka:9092",
               "schema.history.internal.kafka.topic": "schema-changes.inventory",
               "schema.history.internal.store.only.captured.databases.ddl": "true",
               "schema.history.internal.store.only.captured.tables.ddl": "true",
               "schema.history.internal.skip.unparseable.ddl": "false"}
    with caplog.at_level(logging.WARNING, logger="signaller.config"):
        cfg = config_from_mapping({**BASE, "connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
                                   "signal.data.collection": "inventory.debezium_signal", **history})
    binlog = cfg.binlog
    assert (binlog.history_topic, binlog.history_bootstrap_servers) == ("schema-changes.inventory", "kafka:9092")
    assert binlog.history_only_captured_tables and binlog.history_only_captured_databases
    assert cfg.ignored_properties == ("schema.history.internal.skip.unparseable.ddl",)
    warned = [r.getMessage() for r in caplog.records if "skip.unparseable.ddl" in r.getMessage()]
    assert warned and "schema.history.internal.kafka.topic" in warned[0], warned


@pytest.mark.parametrize("connector_class", ["io.debezium.connector.mariadb.MariaDbConnector",
                                             "io.debezium.connector.mysql.MySqlConnector"])
def test_binlog_connectors_refuse_adaptive_time_precision(connector_class: str) -> None:
    """As Debezium's binlog connectors ("The 'adaptive' time.precision.mode is no longer supported"); their two
    modes load, and PostgreSQL keeps adaptive."""
    binlog = {"connector.class": connector_class, "signal.data.collection": "inventory.debezium_signal"}
    error = only_problem({**binlog, "time.precision.mode": "adaptive"})
    assert (error.key, error.value) == ("time.precision.mode", "adaptive"), error
    assert "adaptive_time_microseconds or connect" in error.accepted and connector_class in error.accepted
    for mode in ("adaptive_time_microseconds", "connect"):
        assert config_from_mapping({**BASE, **binlog, "time.precision.mode": mode}).types.time_precision_mode == mode
    assert config(time_precision_mode="adaptive").types.time_precision_mode == "adaptive"


def test_missing_required_properties_are_all_reported() -> None:
    found = problems(lambda: config_from_mapping({"tasks.max": "1"}))
    assert {e.key for e in found} == {"topic.prefix", "database.hostname", "database.user", "database.dbname"}
    assert all(e.origin == "(not set)" and "required" in e.accepted for e in found)


def test_all_problems_are_reported_at_once_with_their_origins(tmp_path: Path) -> None:
    path = write(tmp_path, "c.properties", "topic.prefix=pg1\ndatabase.port=x\nslot.nam=s\n")
    found = problems(lambda: load_config(path, {"SIGNALLER_MAX_BATCH_SIZE": "-3"}))
    origins = {e.key: e.origin for e in found}
    assert origins["database.port"] == f"{path}:2" and origins["slot.nam"] == f"{path}:3"
    assert origins["max.batch.size"] == "env:SIGNALLER_MAX_BATCH_SIZE"
    assert {"database.hostname", "database.user", "database.dbname"} <= set(origins)
    with pytest.raises(ConfigErrors, match=r"^5 configuration problems:\n  - invalid configuration"):
        load_config(path, {})


def test_cross_property_rules() -> None:
    assert only_problem({"max.queue.size": "100", "max.batch.size": "100"}).key == "max.queue.size"
    assert only_problem({"notification.enabled.channels": "sink"}).key == "notification.sink.topic.name"
    assert only_problem({"offset.storage": "file"}).key == "offset.storage.file.filename"
    cfg = config(notification_enabled_channels="sink,log", notification_sink_topic_name="pg1.notifications",
                 offset_storage="FILE", offset_storage_file_filename="/var/lib/signaller/offsets")
    assert cfg.notifications.enabled_channels == (NotificationChannel.SINK, NotificationChannel.LOG)
    assert cfg.offsets.storage is OffsetStorage.FILE


@pytest.mark.parametrize("kind", ["schema", "table", "column"])
def test_include_and_exclude_lists_are_mutually_exclusive(kind: str) -> None:
    error = only_problem({f"{kind}.include.list": "a.*", f"{kind}.exclude.list": "b.*"})
    assert (error.key, error.value) == (f"{kind}.exclude.list", "b.*")
    assert f"{kind}.include.list is already specified" in error.accepted


# --- secrets ---------------------------------------------------------------------------------------------


def test_secrets_never_appear_in_repr_str_display_or_errors(caplog: pytest.LogCaptureFixture) -> None:
    secret_props = {
        "database.password": PASSWORD,
        "signaller.http.token": TOKEN,
        "producer.sasl.jaas.config": f'PlainLoginModule required username="u" password="{PASSWORD}";',
        "errors.retry.password": PASSWORD,  # accepted and ignored: logged masked
    }
    with caplog.at_level(logging.WARNING):
        cfg = config_from_mapping({**BASE, **secret_props})
    shown = [repr(cfg), str(cfg), json.dumps(cfg.to_display_dict()), repr(cfg.database.password), caplog.text]
    for text in shown:
        assert PASSWORD not in text and TOKEN not in text
    assert cfg.to_display_dict()["database.password"] == MASK
    assert cfg.to_display_dict()["producer.sasl.jaas.config"] == MASK

    found = problems(lambda: config_from_mapping(
        {**BASE, **secret_props, "database.passwrd": PASSWORD, "database.port": "x"}))
    for error in found:
        assert PASSWORD not in str(error) and TOKEN not in str(error) and PASSWORD not in repr(error.value)
    assert {e.key: e.value for e in found}["database.passwrd"] == MASK


def test_libpq_dsn_quotes_values_and_includes_password() -> None:
    cfg = config(database_password=PASSWORD, database_sslmode="verify-full", database_sslrootcert="/ca.pem")
    dsn = cfg.database.libpq_dsn(replication="database")
    assert "password='pw-Zq8\\'x\\\\y'" in dsn
    assert "host='db.internal'" in dsn and "port='5432'" in dsn and "dbname='shop'" in dsn
    assert "sslmode='verify-full'" in dsn and "sslrootcert='/ca.pem'" in dsn
    assert "replication='database'" in dsn
    assert cfg.database.sslmode is SslMode.VERIFY_FULL


# --- HTTP API token -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "signaller.example.com", "::"])
def test_token_required_when_http_host_is_not_loopback(host: str) -> None:
    error = only_problem({"signaller.http.host": host})
    assert error.key == "signaller.http.token" and host in error.accepted
    empty_token = only_problem({"signaller.http.host": host, "signaller.http.token": ""})
    assert empty_token.key == "signaller.http.token"
    assert config(signaller_http_host=host, signaller_http_token=TOKEN).http.token == Secret(TOKEN)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "::1"])
def test_no_token_needed_on_loopback(host: str) -> None:
    cfg = config(signaller_http_host=host)
    assert cfg.http.token is None and cfg.http.port == 8089


# --- filters ---------------------------------------------------------------------------------------------


def test_table_lists_full_match_schema_dot_table_case_insensitively() -> None:
    cfg = config(table_include_list=r"public\.orders,inv.*\.item_\d+")
    assert cfg.is_table_captured("public", "orders")
    assert cfg.is_table_captured("PUBLIC", "Orders")
    assert not cfg.is_table_captured("public", "orders_archive")  # no prefix matching
    assert not cfg.is_table_captured("xpublic", "orders")  # no suffix matching
    assert cfg.is_table_captured("inventory", "item_42")
    assert not cfg.is_table_captured("inventory", "item_x")


def test_exclude_lists_and_schema_lists() -> None:
    cfg = config(table_exclude_list=r"public\.audit_.*", schema_exclude_list="staging")
    assert cfg.is_table_captured("public", "orders")
    assert not cfg.is_table_captured("public", "audit_log")
    assert not cfg.is_table_captured("staging", "orders")
    assert not cfg.is_table_captured("pg_catalog", "pg_class")  # built-in tables are skipped
    assert config(table_ignore_builtin="false").is_table_captured("pg_catalog", "pg_class")


def test_signal_table_is_always_captured() -> None:
    cfg = config(table_include_list=r"public\.orders", signal_data_collection="ops.debezium_signal")
    assert cfg.snapshot.signal_data_collection == TableId("ops", "debezium_signal")
    assert cfg.is_table_captured("ops", "debezium_signal")
    assert not cfg.is_table_captured("ops", "other")


def test_column_lists_full_match_schema_table_column() -> None:
    cfg = config(column_exclude_list=r"public\.users\.(email|ssn)")
    assert not cfg.capture.is_column_captured("public", "users", "email")
    assert cfg.capture.is_column_captured("public", "users", "email_verified")
    only = config(column_include_list=r"public\.users\.id,public\.users\.name")
    assert only.capture.is_column_captured("public", "users", "id")
    assert not only.capture.is_column_captured("public", "users", "email")


def test_regex_list_honours_escaped_commas() -> None:
    cfg = config(table_include_list=r"public\.t_\d{1\,3},public.x")
    assert [p.text for p in cfg.capture.table_include_list] == [r"public\.t_\d{1,3}", "public.x"]
    assert cfg.is_table_captured("public", "t_123") and not cfg.is_table_captured("public", "t_1234")


def test_message_key_columns() -> None:
    cfg = config(message_key_columns="public.orders:id,region;inv.*:sku")
    assert cfg.capture.key_columns_for("public", "orders") == ("id", "region")
    assert cfg.capture.key_columns_for("inventory", "items") == ("sku",)
    assert cfg.capture.key_columns_for("public", "users") is None


# --- topics and clients -------------------------------------------------------------------------------------


def test_topic_names_follow_debezium() -> None:
    cfg = config()
    assert cfg.topics.topic_for("public", "orders") == "pg1.public.orders"
    assert cfg.topics.topic_for(TableId("public", "order lines")) == "pg1.public.order_lines"
    assert cfg.topics.topic_for("public", "café") == "pg1.public.caf_"
    assert cfg.topics.heartbeat_topic == "__debezium-heartbeat.pg1"
    assert cfg.topics.transaction_topic == "pg1.transaction"
    assert cfg.snapshot.signal_kafka_topic == "pg1-signal" and cfg.offsets.topic == "pg1-offsets"
    custom = config(topic_delimiter="_", topic_heartbeat_name="hb", topic_transaction="tx",
                    signal_kafka_topic="sig")
    assert custom.topics.topic_for("s", "t") == "pg1_s_t" and custom.topics.heartbeat_topic == "hb"
    assert custom.topics.transaction_topic == "pg1_tx" and custom.snapshot.signal_kafka_topic == "sig"
    assert len(cfg.topics.topic_for("public", "t" * 300)) == 249


def test_producer_config_defaults_and_pass_through() -> None:
    cfg = config(kafka_bootstrap_servers="k:9092", security_protocol="SASL_SSL", sasl_mechanism="PLAIN",
                 producer_linger_ms="20", producer_override_linger_ms="30", producer_batch_size="65536")
    producer = cfg.producer_config()
    assert producer["bootstrap.servers"] == "k:9092" and producer["acks"] == "all"
    assert producer["enable.idempotence"] is True and producer["compression.type"] == "lz4"
    assert producer["linger.ms"] == "30"  # producer.override.* beats producer.*
    assert producer["batch.size"] == "65536"
    assert producer["security.protocol"] == "SASL_SSL" and producer["sasl.mechanism"] == "PLAIN"
    assert config().producer_config()["linger.ms"] == 5


def test_signal_consumer_config() -> None:
    cfg = config(signal_enabled_channels="source,kafka,http", signal_consumer_max_poll_records="10")
    assert cfg.snapshot.signal_enabled_channels == (SignalChannel.SOURCE, SignalChannel.KAFKA, SignalChannel.HTTP)
    consumer = cfg.signal_consumer_config()
    assert consumer["bootstrap.servers"] == "localhost:9092" and consumer["group.id"] == "kafka-signal"
    assert consumer["auto.offset.reset"] == "earliest" and consumer["max.poll.records"] == "10"


# --- declarations -------------------------------------------------------------------------------------------

DEBEZIUM_DEFAULTS = {
    "database.port": "5432",
    "database.sslmode": "prefer",
    "slot.name": "debezium",
    "slot.drop.on.stop": "false",
    "publication.name": "dbz_publication",
    "publication.autocreate.mode": "all_tables",
    "tombstones.on.delete": "true",
    "decimal.handling.mode": "precise",
    "time.precision.mode": "adaptive",
    "binary.handling.mode": "bytes",
    "interval.handling.mode": "numeric",
    "heartbeat.interval.ms": "0",
    "topic.heartbeat.prefix": "__debezium-heartbeat",
    "provide.transaction.metadata": "false",
    "topic.transaction": "transaction",
    "topic.delimiter": ".",
    "snapshot.mode": "initial",
    "incremental.snapshot.chunk.size": "1024",
    "incremental.snapshot.watermarking.strategy": "insert_insert",
    "signal.enabled.channels": "source",
    "signal.kafka.groupId": "kafka-signal",
    "signal.file": "file-signals.txt",
    "signal.poll.interval.ms": "5000",
    "read.only": "false",
    "max.batch.size": "2048",
    "max.queue.size": "8192",
    "poll.interval.ms": "500",
    "status.update.interval.ms": "10000",
    "skipped.operations": "t",
    "include.unknown.datatypes": "false",
    "unavailable.value.placeholder": "__debezium_unavailable_value",
    "key.converter.schemas.enable": "true",
    "value.converter.schemas.enable": "true",
}


def test_defaults_are_debeziums() -> None:
    cfg = config()
    assert {name: cfg.get(name) for name in DEBEZIUM_DEFAULTS} == DEBEZIUM_DEFAULTS
    assert cfg.events.skipped_operations == frozenset({"t"})
    assert cfg.types.decimal_handling_mode is DecimalHandlingMode.PRECISE


def test_supported_declarations_are_exactly_the_section_fields() -> None:
    bookkeeping = {"raw", "origins", "ignored_properties"}
    sections = {f.name for f in dataclasses.fields(SignallerConfig)} - bookkeeping
    assert {setting.section for setting in SETTINGS} == sections
    assert [p.name for p in PROPERTIES if p.status is Status.SUPPORTED] == [s.prop.name for s in SETTINGS]


def test_declarations_are_well_formed() -> None:
    names = [name for p in PROPERTIES for name in (p.name, *p.aliases)]
    assert len(names) == len(set(names))
    assert all(p.doc for p in PROPERTIES) and all(f.doc for f in FAMILIES)
    for prop in PROPERTIES:
        if prop.status is Status.SUPPORTED and prop.default is not None:
            prop.parse(prop.default)  # every default is itself valid
        assert re.fullmatch(r"[a-z][a-zA-Z0-9.\-]*", prop.name), prop.name


def test_enum_values_are_case_insensitive_and_never_means_no_data(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        cfg = config(snapshot_mode="NEVER", incremental_snapshot_watermarking_strategy="INSERT_DELETE")
    assert cfg.snapshot.mode is SnapshotMode.NO_DATA and "no_data" in caplog.text
    assert cfg.snapshot.watermarking_strategy is WatermarkStrategy.INSERT_DELETE
    assert config(skipped_operations="none").events.skipped_operations == frozenset()


def test_get_returns_raw_text_defaults_and_fallback() -> None:
    cfg = config(slot_name="s1", producer_acks="1")
    assert cfg.get("slot.name") == "s1" and cfg.get("producer.acks") == "1"
    assert cfg.get("signal.kafka.topic") == "pg1-signal"
    assert cfg.get("database.password") is None and cfg.get("no.such", "dflt") == "dflt"
