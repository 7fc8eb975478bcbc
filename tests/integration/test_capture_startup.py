"""Start-up: bad configurations are refused at once with a message a person can act on (and no
password), and a real Debezium connector JSON starts the sidecar unchanged."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.integration.capture_helpers import CaptureEnv, Sidecar

pytestmark = pytest.mark.integration


def _line_naming(output: str, needle: str) -> str:
    lines = [line for line in output.splitlines() if needle in line]
    assert lines, f"no line names {needle!r}:\n{output}"
    return lines[0]


REFUSALS: dict[str, tuple[dict[str, Any], str, str, str]] = {
    # case: (properties, property, value as shown, what is accepted)
    # An unknown property's value is masked: it may be a misspelt secret, and the name alone explains the problem.
    "unknown property": ({"database.hostnme": "db.example"}, "database.hostnme", "'********'",
                         "did you mean 'database.hostname'"),
    "bad enum value": ({"decimal.handling.mode": "fast"}, "decimal.handling.mode", "'fast'",
                       "one of precise, double, string"),
    "decoderbufs": ({"plugin.name": "decoderbufs"}, "plugin.name", "'decoderbufs'", "set plugin.name=pgoutput"),
    # (issue 16: the MariaDB/MySQL connectors are implemented; Oracle's is not)
    "wrong connector.class": ({"connector.class": "io.debezium.connector.oracle.OracleConnector"}, "connector.class",
                              "'io.debezium.connector.oracle.OracleConnector'",
                              "io.debezium.connector.postgresql.PostgresConnector"),
    "misspelt secret": ({"database.passwrd": "{password}"}, "database.passwrd", "'********'",
                        "did you mean 'database.password'"),
    "markup-like value": ({"decimal.handling.mode": "[/fast]"}, "decimal.handling.mode", "'[/fast]'",
                          "one of precise, double, string"),
}


def test_bad_configurations_are_refused_quickly_naming_property_value_and_accepted(capture: CaptureEnv) -> None:
    password = f"pw-{capture.suffix}-Zq9!"
    cars: dict[str, Sidecar] = {}
    started = time.monotonic()
    for index, (case, (properties, *_)) in enumerate(REFUSALS.items()):
        filled = {k: (password if v == "{password}" else v) for k, v in properties.items()}
        config = capture.connector_config(extra={**filled, "database.password": password})
        cars[case] = capture.sidecar(config, label=f"refused-{index}").start()
    for case, car in cars.items():
        code = car.wait_exit(20)
        _properties, prop, shown, accepted = REFUSALS[case]
        output = car.log_text()
        assert code != 0, f"{case}: exit code {code}\n{output}"
        line = _line_naming(output, f"{prop}={shown}")
        assert accepted in line, f"{case}: {line!r} does not say what is accepted ({accepted!r})"
        assert password not in output, f"{case}: the password was printed"
        assert "Traceback" not in output, f"{case}:\n{output}"
    assert time.monotonic() - started < 20, "refusing a bad configuration took too long"
    # Refused before touching PostgreSQL: no slot, no publication.
    assert capture.sql("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (capture.slot,)) == []
    assert capture.sql("SELECT 1 FROM pg_publication WHERE pubname = %s", (capture.publication,)) == []


def test_a_real_debezium_connector_json_starts_unchanged_and_captures_an_insert(capture: CaptureEnv) -> None:
    t = capture.table
    capture.create_table("id integer PRIMARY KEY, first_name varchar(255) NOT NULL, email text")
    # The shape of Debezium's tutorial register-postgres.json (plus the Kafka brokers a sidecar needs,
    # and this test's own slot and publication names); offsets go to Kafka, the default.
    connector = {
        "name": "inventory-connector",
        "config": {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "tasks.max": "1",
            "database.hostname": "127.0.0.1",
            "database.port": str(capture.stack.pg_port),
            "database.user": capture.stack.pg_user,
            "database.password": capture.stack.pg_password,
            "database.dbname": capture.stack.pg_db,
            "topic.prefix": capture.prefix,
            "table.include.list": f"public.{t}",
            "plugin.name": "pgoutput",
            "slot.name": capture.slot,
            "publication.name": capture.publication,
            "bootstrap.servers": capture.stack.bootstrap_servers,
        },
    }
    car = capture.sidecar(connector, label="debezium")
    assert json.loads(car.config_path.read_text()) == connector
    capture.start_streaming(car)
    capture.sql(f"INSERT INTO {t} VALUES (1001, 'Sally', 'sally@example.com')")
    # snapshot.mode is Debezium's default (initial): the table may also be read by the snapshot ("r"),
    # but the insert itself must be streamed as a create.
    records = capture.reader().wait_for(lambda rs: any(r.op == "c" for r in rs), 30, "the create event",
                                        describe=car.log_tail)
    creates = [r for r in records if r.op == "c"]
    assert len(creates) == 1
    assert all(r.op in ("c", "r") for r in records), [r.op for r in records]
    event = creates[0]
    assert event.key_payload == {"id": 1001}
    assert event.payload["after"] == {"id": 1001, "first_name": "Sally", "email": "sally@example.com"}
    assert event.payload["source"]["name"] == capture.prefix
    assert event.value["schema"]["name"] == f"{capture.prefix}.public.{t}.Envelope"
    ignored = [r["msg"] for r in car.log_records() if r.get("level") == "warning" and "ignoring" in r["msg"]]
    assert any("tasks.max" in msg for msg in ignored) and any(msg.startswith("ignoring name (") for msg in ignored)
    assert car.stop() == 0, car.log_tail()
    # Offsets went to Kafka (the default store) under Kafka Connect's key: [connector name, {server: prefix}],
    # so a Debezium connect-offsets record and signaller's are interchangeable.
    stored = capture.reader(f"{capture.prefix}-offsets").wait_for_count(1, 15)
    keys = {json.dumps(r.key, separators=(",", ":")) for r in stored}
    assert keys == {json.dumps(["inventory-connector", {"server": capture.prefix}], separators=(",", ":"))}
    assert stored[-1].value["lsn"] > event.payload["source"]["lsn"]
