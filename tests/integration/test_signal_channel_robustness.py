"""No signal on any channel can stop the sidecar or make it loop on restart; the status follows every answer.

A running sidecar (subprocess, real PostgreSQL and Kafka) is fed, through its file and Kafka signal
channels, signals that made applying raise, lines and records too large to be a signal, and records
that are not signals at all. Each is answered with a ``REJECTED`` notification, later signals are
still applied, the sidecar keeps streaming, and after a kill -9 and a restart nothing already answered
is read again (its channel position was stored with the answer). Last, ``GET /snapshots`` shows the
effect of a ``POST /signals`` and of a ``PUT /snapshots/chunk-size`` as soon as they are answered,
even with a long ``offset.flush.interval.ms``. And a signal that meets the database ending the sidecar's
connections is not rejected: the session is retried and the signal applied (file, Kafka, signal table), or,
over HTTP, answered 503 "not applied" at once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.capture_helpers import CaptureEnv, Sidecar, wait_until
from tests.integration.snapshot_helpers import (
    Api,
    Notifications,
    SnapshotTables,
    create_signal_table,
    snapshot_config,
    start,
    stored_offsets,
    sync_point,
)
from tests.integration.test_signal_handling import Channels, channels_config, log_has

pytestmark = pytest.mark.integration

MIB = 1024 * 1024


def log_signal(signal_id: str, message: str = "hello") -> str:
    return json.dumps({"id": signal_id, "type": "log", "data": {"message": message}})


def accepted(car: Sidecar, signal_id: str, channel: str) -> Callable[[], bool]:
    message = f"signal {signal_id} from {channel} accepted"
    return lambda: log_has(car, lambda record: record.get("msg") == message)


def rejections(notes: Notifications, channel: str) -> list[dict[str, Any]]:
    return [n for n in notes.of("REJECTED", aggregate="Signal") if n["additional_data"]["channel"] == channel]


def stored_position(capture: CaptureEnv, channel: str) -> Any:
    return ((stored_offsets(capture).get("snapshot") or {}).get("channel_positions") or {}).get(channel)


def assert_streams(capture: CaptureEnv, car: Sidecar, tables: SnapshotTables, key: int) -> None:
    """The sidecar is alive and an insert made now reaches its topic."""
    assert car.alive(), f"the sidecar exited with {car.returncode}\n{car.log_tail()}"
    capture.sql(f"INSERT INTO {tables.names['int']} VALUES ({key}, 'still streaming', 1)")
    reader = capture.reader(tables.topic("int"))
    reader.wait_for(lambda records: any(r.op == "c" and r.payload["after"]["id"] == key
                                        for r in records if not r.tombstone), 30,
                    f"the insert of key {key} on the topic", car.log_tail)


def restart(capture: CaptureEnv, car: Sidecar) -> Api:
    car.kill()
    capture.wait_slot_inactive(car.slot)
    return start(car)


@dataclass
class Rig:
    """A running sidecar with the source, Kafka and file channels, and what the tests use of it."""

    tables: SnapshotTables
    car: Sidecar
    notes: Notifications
    channels: Channels
    signal_file: Path


@pytest.fixture
def rig(capture: CaptureEnv) -> Rig:
    tables = SnapshotTables(capture, {"int": 20, "comp": 0, "text": 0})
    signal_table = create_signal_table(capture)
    signal_file = capture.workdir / "signals.txt"
    topic = f"{capture.prefix}-signal"
    # The signal topic takes records up to 4 MiB, so that a record over the 1 MiB signal limit can be sent.
    admin = AdminClient({"bootstrap.servers": capture.stack.bootstrap_servers})
    for future in admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1,
                                                config={"max.message.bytes": str(4 * MIB)})]).values():
        future.result(30)
    car = capture.sidecar(channels_config(capture, tables.names["int"], signal_table, signal_file))
    start(car)
    return Rig(tables, car, Notifications(capture), Channels(capture, car, signal_table, signal_file), signal_file)


def test_a_signal_that_fails_to_apply_is_rejected_once_and_never_read_again(capture: CaptureEnv, rig: Rig) -> None:
    tables, car, notes, channels, signal_file = rig.tables, rig.car, rig.notes, rig.channels, rig.signal_file
    # A blocking snapshot whose additional condition's data-collection is not a regular expression: it
    # escaped the engine as re.error and stopped the sidecar, again after every restart.
    data = {"type": "blocking", "data-collections": [tables.pattern("int")],
            "additional-conditions": [{"data-collection": "(", "filter": "id > 0"}]}
    channels.file(json.dumps({"id": "poison-file", "type": "execute-snapshot", "data": data}))
    channels.file(log_signal("after-poison"))
    channels.source("poison-source", "execute-snapshot", json.dumps(data))

    for signal_id in ("poison-file", "poison-source"):
        notes.wait(lambda n, i=signal_id: n["type"] == "REJECTED" and n["id"] == i, 30, f"{signal_id} to be rejected",
                   car.log_tail)
    wait_until(accepted(car, "after-poison", "file"), 30, "the signal after the poison one", describe=car.log_tail)
    assert_streams(capture, car, tables, 500001)
    sync_point(capture, car, f"INSERT INTO {tables.names['int']} VALUES (500002, 'sync', 0)")
    wait_until(lambda: stored_position(capture, "file") == [signal_file.stat().st_ino, signal_file.stat().st_size],
               30, "the file position to be stored", describe=lambda: str(stored_offsets(capture)))

    restart(capture, car)
    channels.file(log_signal("after-restart"))
    wait_until(accepted(car, "after-restart", "file"), 30, "a new file signal after the restart",
               describe=car.log_tail)
    assert_streams(capture, car, tables, 500003)
    assert [n["id"] for n in rejections(notes, "file")] == ["poison-file"], "the poison line was read again"
    assert [n["id"] for n in rejections(notes, "source")] == ["poison-source"], "the poison row was read again"
    assert car.runs == 2


def test_an_over_long_file_line_is_skipped_and_the_next_signal_applied(
        capture: CaptureEnv, rig: Rig) -> None:
    tables, car, notes, channels, signal_file = rig.tables, rig.car, rig.notes, rig.channels, rig.signal_file
    channels.file(log_signal("too-long", "x" * (5 * MIB)))
    channels.file(log_signal("after-long"))

    wait_until(accepted(car, "after-long", "file"), 60, "the signal after the 5 MiB line", describe=car.log_tail)
    [rejected] = rejections(notes, "file")
    reason = rejected["additional_data"]["reason"]
    assert str(signal_file) in reason and "at byte offset 0" in reason, reason
    assert f"limit of {MIB} bytes" in reason, reason
    assert not accepted(car, "too-long", "file")()
    assert_streams(capture, car, tables, 500013)


def test_bad_kafka_records_are_rejected_and_not_read_again_after_a_restart(
        capture: CaptureEnv, rig: Rig) -> None:
    tables, car, notes, channels = rig.tables, rig.car, rig.notes, rig.channels
    key = capture.prefix.encode()
    channels.kafka(log_signal("kafka-good-0").encode())  # offset 0
    producer = Producer({"bootstrap.servers": capture.stack.bootstrap_servers, "message.max.bytes": 4 * MIB})
    bad = [b"{not json", b"\xff\xfe\x00garbage", b"null", None,
           log_signal("kafka-huge", "y" * (2 * MIB)).encode()]  # offsets 1..5; None is a tombstone (skipped)
    for value in bad:
        producer.produce(channels.topic, key=key, value=value)
    assert producer.flush(30) == 0

    wait_until(accepted(car, "kafka-good-0", "kafka"), 30, "the good Kafka signal", describe=car.log_tail)
    wait_until(lambda: len(rejections(notes, "kafka")) >= 4, 30, "4 REJECTED notifications from kafka",
               describe=car.log_tail)
    reasons = [n["additional_data"]["reason"] for n in rejections(notes, "kafka")]
    expected = [("offset 1:", "not valid JSON"), ("offset 2:", "not UTF-8"), ("offset 3:", "got null"),
                ("offset 5:", f"larger than the limit of {MIB} bytes")]
    assert len(reasons) == 4, reasons
    for reason, (where, what) in zip(reasons, expected, strict=True):
        assert where in reason and what in reason, (where, what, reason)
    assert not accepted(car, "kafka-huge", "kafka")()
    assert_streams(capture, car, tables, 500004)
    wait_until(lambda: stored_position(capture, "kafka") == 5, 30, "the Kafka position after the last record",
               describe=lambda: str(stored_offsets(capture)))

    restart(capture, car)
    channels.kafka(log_signal("kafka-after-restart").encode())
    wait_until(accepted(car, "kafka-after-restart", "kafka"), 30, "a Kafka signal after the restart",
               describe=car.log_tail)
    assert_streams(capture, car, tables, 500005)
    assert len(rejections(notes, "kafka")) == 4, "a bad record was read again after the restart"
    assert sum(accepted_line.endswith("kafka-good-0 from kafka accepted") for accepted_line in
               (str(r.get("msg")) for r in car.log_records())) == 1


def test_status_shows_every_answered_request_at_once(capture: CaptureEnv) -> None:
    tables = SnapshotTables(capture, {"int": 300, "comp": 0, "text": 0})
    config = snapshot_config(capture, [tables.names["int"]], signal_table=None, chunk_size=10,
                             offset_flush_interval_ms="60000")
    car = capture.sidecar(config)
    api = start(car)
    assert api.snapshots()["chunk_size"] == 10

    api.accepted("execute-snapshot", {"data-collections": [tables.pattern("int")]}, "status-1")
    body = api.snapshots()
    assert body["running"] or body["tables"], f"GET /snapshots right after the 202: {body}"
    assert [t["table"] for t in body["tables"]] == [tables.qualified("int")], body

    answer = api.chunk_size(25)
    assert (answer.status_code, answer.json()) == (200, {"chunk_size": 25})
    assert api.snapshots()["chunk_size"] == 25
    api.wait_idle(60)
    assert car.alive()


def end_sidecar_queries(capture: CaptureEnv) -> int:
    """End every client session of the test database but the test's own (the sidecar's schema, snapshot and
    watermark connections; its replication connection is a walsender and stays), as a server restart would; how
    many were ended."""
    rows = capture.sql(
        "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity WHERE backend_type = 'client backend' "
        "AND datname = current_database() AND pid <> pg_backend_pid()")
    return int(rows[0][0])


@pytest.mark.parametrize("channel", ["file", "source", "kafka"])
def test_a_signal_checked_while_the_database_connection_is_gone_is_applied_not_rejected(
    capture: CaptureEnv, rig: Rig, channel: str,
) -> None:
    """The database ends the sidecar's query connections (a restart, a failover, an idle-session killer) just
    before an ``execute-snapshot`` arrives: checking it against the database fails with a lost connection. That
    says nothing about the signal: the session is retried and the file channel delivers the signal again, which
    is then applied and runs to the end. It used to be answered ``REJECTED`` ("could not check the signal against
    the database"), and the user had to send it again. The Kafka and file channels read it again from their
    stored positions, the signal table's row comes again with the log the retried session streams."""
    tables, car, notes, channels = rig.tables, rig.car, rig.notes, rig.channels
    execute = {"data-collections": [tables.pattern("int")], "type": "incremental"}
    api = Api(car)
    # The sidecar's query connections exist and have been used: an accepted snapshot checked its table.
    channels.send(channel, "warm", "execute-snapshot", execute, api)
    notes.wait(lambda n: n["type"] == "COMPLETED" and n["id"] == "warm", 60, "the first snapshot", car.log_tail)
    assert end_sidecar_queries(capture) >= 1

    channels.send(channel, "after-loss", "execute-snapshot", execute, api)
    notes.wait(lambda n: n["type"] in ("COMPLETED", "REJECTED") and n["id"] == "after-loss", 90,
               "the signal sent after the connections were ended to be answered", car.log_tail)
    assert [n["id"] for n in rejections(notes, channel)] == [], car.log_tail()
    assert any(n["type"] == "COMPLETED" and n["id"] == "after-loss" for n in notes.all())
    capture.reader(tables.topic("int")).wait_for(
        lambda records: len([r for r in records if not r.tombstone and r.op == "r"]) >= 2 * 20, 30,
        "the READ events of both snapshots of the table's 20 rows", car.log_tail)
    assert car.alive() and car.runs == 1
    assert_streams(capture, car, tables, 500101)


def test_an_http_signal_met_by_a_lost_database_connection_is_answered_503_not_applied(
    capture: CaptureEnv, rig: Rig,
) -> None:
    """The HTTP channel has no position to read a signal again from: the sender is answered at once with 503 and
    a reason saying the signal was not applied (not a rejection, not a 30 s timeout), and the same request sent
    again is accepted and runs."""
    tables, car, notes = rig.tables, rig.car, rig.notes
    api = Api(car)
    execute = {"data-collections": [tables.pattern("int")], "type": "incremental"}
    api.accepted("execute-snapshot", execute, "http-warm")
    notes.wait(lambda n: n["type"] == "COMPLETED" and n["id"] == "http-warm", 60, "the first snapshot", car.log_tail)
    assert end_sidecar_queries(capture) >= 1

    response = api.signal("execute-snapshot", execute, "http-after-loss")
    assert response.status_code == 503, response.text
    body = response.json()
    assert body["id"] == "http-after-loss"
    assert body["error"].startswith("not applied: the capture session failed before the request's effect was stored")
    assert "send the request again" in body["error"]
    assert not any(n["id"] == "http-after-loss" for n in notes.all())

    api.wait_healthy()
    api.accepted("execute-snapshot", execute, "http-after-loss")
    notes.wait(lambda n: n["type"] == "COMPLETED" and n["id"] == "http-after-loss", 60, "the signal sent again",
               car.log_tail)
    assert car.alive() and car.runs == 1
