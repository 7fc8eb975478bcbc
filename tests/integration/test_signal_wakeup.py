"""A signal sent through the HTTP API is taken by the capture loop at once, however long the loop
would otherwise wait for a quiet log (``poll.interval.ms``): the API wakes the log reader. And what a
snapshot needs from Kafka before its first READ (its table's topic) is made ready off the loop, as soon
as the snapshot is accepted."""

from __future__ import annotations

import time

import pytest

from tests.integration.capture_helpers import CaptureEnv
from tests.integration.snapshot_helpers import Notifications, SnapshotTables, snapshot_config, start

pytestmark = pytest.mark.integration

QUIET_WAIT_MS = 20_000


def test_an_api_signal_is_taken_at_once_on_a_quiet_log(capture: CaptureEnv) -> None:
    tables = SnapshotTables(capture, {"int": 30, "comp": 0, "text": 0})
    car = capture.sidecar(snapshot_config(capture, [tables.names["int"]], signal_table=None, extra={
        "poll.interval.ms": str(QUIET_WAIT_MS), "heartbeat.interval.ms": "0"}))
    api = start(car)
    notes = Notifications(capture)
    time.sleep(1.0)  # nothing is written: the loop settles into its wait for the log
    for attempt in range(3):
        started = time.monotonic()
        api.accepted("execute-snapshot", {"data-collections": [tables.pattern("int")]}, f"wake-{attempt}")
        answered_s = time.monotonic() - started
        # without the wake-up the answer comes when the loop's wait ends: up to 20 s later
        assert answered_s < 5, f"the loop took {answered_s:.1f}s to take the signal\n{car.log_tail()}"
        notes.wait(lambda n, a=attempt: n["type"] == "COMPLETED" and n["id"] == f"wake-{a}", 60,
                   "the snapshot", car.log_tail)
        time.sleep(0.5)


def test_an_accepted_snapshot_makes_its_tables_topic_ready_before_any_read(capture: CaptureEnv) -> None:
    tables = SnapshotTables(capture, {"int": 30, "comp": 0, "text": 0})
    car = capture.sidecar(snapshot_config(capture, [tables.names["int"]], signal_table=None))
    api = start(car)
    notes = Notifications(capture)
    reader = capture.reader(tables.topic("int"))
    assert not reader._assign(), "nothing was sent to the table's topic yet"
    pattern = tables.pattern("int")
    api.accepted("execute-snapshot", {"data-collections": [pattern], "additional-conditions": [
        {"data-collection": pattern, "filter": "id < 0"}]}, "no-rows")  # no row matches: no READ at all
    notes.wait(lambda n: n["type"] == "COMPLETED" and n["id"] == "no-rows", 60, "the snapshot", car.log_tail)
    deadline = time.monotonic() + 10
    while not reader._assign() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert reader._assign(), f"the topic of the snapshotted table was not made ready\n{car.log_tail()}"
    assert reader.read_available(1.0) == [], "a snapshot with no matching row sent a record"


def test_an_accepted_signal_that_changes_nothing_stored_is_answered_at_once(capture: CaptureEnv) -> None:
    tables = SnapshotTables(capture, {"int": 1, "comp": 0, "text": 0})
    car = capture.sidecar(snapshot_config(capture, [tables.names["int"]], signal_table=None))
    api = start(car)
    for attempt in range(3):  # a log signal: accepted, and nothing in the offsets changes
        started = time.monotonic()
        api.accepted("log", {"message": f"hello {attempt}"}, f"log-{attempt}")
        answered_s = time.monotonic() - started
        assert answered_s < 5, f"the API took {answered_s:.1f}s to answer\n{car.log_tail()}"

