"""Signals through every channel of a running sidecar (subprocess, real PostgreSQL and Kafka).

* An incremental snapshot can be started from the signal table (``source``), the Kafka signal topic,
  the signal file and the HTTP API; after a kill -9 and restart, Kafka and file signals already
  applied are not applied again.
* Every class of invalid signal, on every channel, is answered (HTTP: 4xx with the reason; the
  other channels: a log line and a ``Signal``/``REJECTED`` notification with the reason) and never
  stops the sidecar: it keeps streaming afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.capture_helpers import CaptureEnv, Sidecar, wait_until
from tests.integration.snapshot_helpers import (
    Api,
    Notifications,
    SnapshotTables,
    check_notification_fields,
    create_signal_table,
    read_to_end,
    reads,
    snapshot_config,
    start,
    stored_offsets,
    sync_point,
)
from tests.kafka_helpers import produce

pytestmark = pytest.mark.integration

ROWS = 200


def channels_config(capture: CaptureEnv, table: str, signal_table: str, signal_file: Path) -> dict[str, Any]:
    return snapshot_config(capture, [table], signal_table=signal_table, chunk_size=50, extra={
        "signal.enabled.channels": "source,kafka,file",
        "signal.kafka.topic": f"{capture.prefix}-signal",
        "signal.file": str(signal_file),
    })


class Channels:
    """Sends one signal through a named channel of ``car``."""

    def __init__(self, capture: CaptureEnv, car: Sidecar, signal_table: str, signal_file: Path) -> None:
        self.capture, self.car = capture, car
        self.signal_table, self.signal_file = signal_table, signal_file
        self.topic = car.config["config"]["signal.kafka.topic"]

    def source(self, signal_id: str, signal_type: str, data: str | None) -> None:
        self.capture.sql(f"INSERT INTO {self.signal_table} VALUES (%s, %s, %s)", (signal_id, signal_type, data))

    def kafka(self, value: bytes) -> None:
        produce(self.capture.stack.bootstrap_servers, self.topic, [(self.capture.prefix.encode(), value)])

    def file(self, line: str) -> None:
        with self.signal_file.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")

    def send(self, channel: str, signal_id: str, signal_type: str, data: dict[str, Any], api: Api) -> None:
        if channel == "source":
            self.source(signal_id, signal_type, json.dumps(data))
        elif channel == "kafka":
            self.kafka(json.dumps({"id": signal_id, "type": signal_type, "data": data}).encode())
        elif channel == "file":
            self.file(json.dumps({"id": signal_id, "type": signal_type, "data": data}))
        else:
            api.accepted(signal_type, data, signal_id)


def log_has(car: Sidecar, predicate: Callable[[dict[str, Any]], bool]) -> bool:
    return any(predicate(record) for record in car.log_records())


def test_every_channel_starts_a_snapshot_and_restarts_apply_nothing_twice(capture: CaptureEnv) -> None:
    tables = SnapshotTables(capture, {"int": ROWS, "comp": 0, "text": 0})
    table = tables.names["int"]
    signal_table = create_signal_table(capture)
    signal_file = capture.workdir / "signals.txt"
    car = capture.sidecar(channels_config(capture, table, signal_table, signal_file))
    api = start(car)
    notes = Notifications(capture)
    channels = Channels(capture, car, signal_table, signal_file)
    reader = capture.reader(tables.topic("int"))
    execute = {"data-collections": [tables.pattern("int")], "type": "incremental"}

    for number, channel in enumerate(("source", "kafka", "file", "http"), start=1):
        signal_id = f"{channel}-{number}"
        channels.send(channel, signal_id, "execute-snapshot", execute, api)
        started = notes.wait(lambda n, i=signal_id: n["type"] == "STARTED" and n["id"] == i, 30,
                             f"the snapshot started by the {channel} channel", car.log_tail)
        check_notification_fields(started, capture.prefix)
        assert started["additional_data"]["data_collections"] == tables.qualified("int")
        notes.wait(lambda n, i=signal_id: n["type"] == "COMPLETED" and n["id"] == i, 60,
                   f"the snapshot started by the {channel} channel to complete", car.log_tail)
        reader.wait_for(lambda records, n=number: len(reads(records)) >= n * ROWS, 30,
                        f"{number * ROWS} READs", car.log_tail)
        assert log_has(car, lambda r, i=signal_id, c=channel: r.get("msg") == f"signal {i} from {c} accepted")

    # The positions of the applied Kafka and file signals are stored with the offsets...
    def positions() -> dict[str, Any] | None:
        stored = (stored_offsets(capture).get("snapshot") or {}).get("channel_positions") or {}
        return stored if stored.get("kafka") == 0 and stored.get("file", [0, 0])[1] == signal_file.stat().st_size \
            else None

    wait_until(positions, 20, "the channel positions to be stored", describe=lambda: str(stored_offsets(capture)))
    sync_point(capture, car, f"INSERT INTO {table} VALUES (1000001, 'sync', 0)")

    # ... so after kill -9 and a restart, neither is read again: the channels resume after them.
    car.kill()
    capture.wait_slot_inactive(car.slot)
    api = start(car)
    channels.kafka(json.dumps({"id": "kafka-after", "type": "log", "data": {"message": "after"}}).encode())
    channels.file(json.dumps({"id": "file-after", "type": "log", "data": {"message": "after"}}))
    for signal_id, channel in (("kafka-after", "kafka"), ("file-after", "file")):
        message = f"signal {signal_id} from {channel} accepted"
        wait_until(lambda m=message: log_has(car, lambda r: r.get("msg") == m), 30,
                   f"the {channel} channel to read a new signal after the restart", describe=car.log_tail)
    sync_point(capture, car, f"INSERT INTO {table} VALUES (1000002, 'sync', 0)")
    assert sorted(n["id"] for n in notes.of("STARTED")) == ["file-3", "http-4", "kafka-2", "source-1"]
    assert len(reads(read_to_end(reader))) == 4 * ROWS, "a snapshot ran again after the restart"
    accepted = [r["msg"] for r in car.log_records() if str(r.get("msg", "")).endswith("accepted")]
    assert sum("kafka-2" in m for m in accepted) == 1 and sum("file-3" in m for m in accepted) == 1, accepted
    assert not api.snapshots()["running"]


def envelope(signal_id: str, signal_type: str, data: str) -> str:
    """A signal as JSON text, with ``data`` inserted verbatim (it may be invalid on purpose)."""
    return f'{{"id": {json.dumps(signal_id)}, "type": {json.dumps(signal_type)}, "data": {data}}}'


def _execute(table_pattern: str, condition: str | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"data-collections": [table_pattern]}
    if condition is not None:
        data["additional-conditions"] = [{"data-collection": table_pattern, "filter": condition}]
    return data


def test_invalid_signals_on_every_channel_are_answered_and_streaming_goes_on(capture: CaptureEnv) -> None:
    tables = SnapshotTables(capture, {"int": 20, "comp": 0, "text": 0})
    table = tables.names["int"]
    pattern = tables.pattern("int")
    signal_table = create_signal_table(capture)
    signal_file = capture.workdir / "signals.txt"
    car = capture.sidecar(channels_config(capture, table, signal_table, signal_file))
    api = start(car)
    notes = Notifications(capture)
    channels = Channels(capture, car, signal_table, signal_file)

    # (case, signal id, type, data as JSON text, what the reason says)
    cases: list[tuple[str, str, str, str, str]] = [
        ("bad-json", "bad-json", "execute-snapshot", "{not json", "not valid JSON"),
        ("unknown-type", "unknown-type", "explode-snapshot", "{}", "is not a signal type"),
        ("unknown-table", "unknown-table", "execute-snapshot",
         json.dumps(_execute(f"public\\.no_such_table_{capture.suffix}")), "matches no captured table"),
        ("data-not-object", "data-not-object", "execute-snapshot", "[1, 2]", "expected a JSON object"),
        ("unsafe-filter", "unsafe-filter", "execute-snapshot",
         json.dumps(_execute(pattern, f"id > 0; drop table {table}")), "statement separator ';'"),
        ("subquery", "subquery", "execute-snapshot",
         json.dumps(_execute(pattern, f"id IN (SELECT id FROM {table})")), "subqueries are not accepted"),
        ("unknown-column", "unknown-column", "execute-snapshot",
         json.dumps(_execute(pattern, "no_such_column > 1")), "unknown column 'no_such_column'"),
    ]

    # HTTP: answered at once, 4xx with the reason.
    for case, signal_id, signal_type, data, reason in cases:
        if case == "bad-json":
            response = api.client.post("/signals", content=b'{"id": "bad-json", "type": ',
                                       headers={"content-type": "application/json"})
        else:
            response = api.client.post("/signals", content=envelope(f"http-{signal_id}", signal_type, data).encode(),
                                       headers={"content-type": "application/json"})
        assert 400 <= response.status_code < 500, (case, response.status_code, response.text)
        assert reason in response.json()["error"], (case, response.text)

    # The other channels: the same signals, as each channel carries them.
    for case, signal_id, signal_type, data, _ in cases:
        channels.source(f"source-{signal_id}", signal_type, data)
        if case == "bad-json":
            channels.kafka(b"{not json")
            channels.file("{not json")
            continue
        channels.kafka(envelope(f"kafka-{signal_id}", signal_type, data).encode())
        channels.file(envelope(f"file-{signal_id}", signal_type, data))

    def rejections() -> list[dict[str, Any]]:
        return notes.of("REJECTED", aggregate="Signal")

    wait_until(lambda: len(rejections()) >= 3 * len(cases), 60, f"{3 * len(cases)} REJECTED notifications",
               describe=lambda: f"{[(n['id'], n['additional_data']) for n in rejections()]}\n{car.log_tail()}")
    by_channel: dict[str, list[dict[str, Any]]] = {}
    for notification in rejections():
        check_notification_fields(notification, capture.prefix)
        by_channel.setdefault(notification["additional_data"]["channel"], []).append(notification)
    assert sorted(by_channel) == ["file", "kafka", "source"]
    for channel, notifications in by_channel.items():
        assert len(notifications) == len(cases), (channel, notifications)
        for (case, signal_id, _, _, reason), notification in zip(cases, notifications, strict=True):
            assert reason in notification["additional_data"]["reason"], (channel, case, notification)
            if case != "bad-json" or channel == "source":
                assert notification["id"] == f"{channel}-{signal_id}", (channel, case, notification)
    warnings = [r for r in car.log_records() if r.get("level") == "warning" and "rejected" in str(r.get("msg"))]
    for channel in ("source", "kafka", "file"):
        assert sum(f"from {channel} rejected" in r["msg"] for r in warnings) == len(cases), (channel, warnings)

    # Nothing was run, nothing was dropped, and the sidecar still streams.
    assert car.alive() and not notes.of("STARTED")
    assert capture.sql(f"SELECT count(*) FROM {table}") == [(20,)]
    capture.sql(f"INSERT INTO {table} VALUES (424242, 'still streaming', 1)")
    reader = capture.reader(tables.topic("int"))
    reader.wait_for(lambda records: any(r.op == "c" and r.payload["after"]["id"] == 424242 for r in records
                                        if not r.tombstone), 30, "the insert after the invalid signals", car.log_tail)
    assert api.healthy()
