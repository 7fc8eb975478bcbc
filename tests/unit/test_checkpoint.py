"""Checkpointing (``runtime.checkpoint``): delivery acknowledgements turned into the committable
(position, snapshot state). Positions only advance past groups that are closed and fully
delivered, in order; a group's snapshot state comes with its position; after a failed delivery
nothing is ever acknowledged again."""

from __future__ import annotations

from typing import Any

import pytest

from signaller.runtime.checkpoint import Checkpoint, Committable
from signaller.snapshot.state import SnapshotState

pytestmark = pytest.mark.unit


def produce(checkpoint: Checkpoint, records: int = 1) -> list[Any]:
    """``records`` records produced into the current group: their delivery callbacks."""
    group = checkpoint.current()
    group.pending += records
    return [group.on_delivery] * records


def test_a_group_is_committable_once_closed_and_delivered() -> None:
    checkpoint = Checkpoint()
    checkpoint.begin()
    acks = produce(checkpoint, 2)
    assert checkpoint.committable() == Committable(0, None)
    checkpoint.close_group(100)
    acks[0](None, "m")
    assert checkpoint.committable().position == 0 and checkpoint.in_flight() == 1
    acks[1](None, "m")
    assert checkpoint.committable() == Committable(100, None)
    assert checkpoint.idle()


def test_positions_advance_in_order_and_never_past_an_undelivered_group() -> None:
    checkpoint = Checkpoint()
    checkpoint.begin()
    first = produce(checkpoint)
    checkpoint.close_group(100)
    checkpoint.begin()
    second = produce(checkpoint)
    checkpoint.close_group(200)
    second[0](None, "m")
    assert checkpoint.committable().position == 0  # the earlier group is still in flight
    first[0](None, "m")
    assert checkpoint.committable().position == 200


def test_an_open_group_holds_back_later_ones_and_empty_groups_count() -> None:
    checkpoint = Checkpoint()
    produce(checkpoint)  # opens a group
    assert checkpoint.has_open_group()
    checkpoint.close_group(10)
    assert not checkpoint.has_open_group()
    checkpoint.close_group(20)  # no open group: an empty one is closed at once
    assert checkpoint.committable().position == 0
    assert checkpoint.in_flight() == 1 and not checkpoint.idle()


def test_the_snapshot_state_of_the_newest_acknowledged_group_that_carried_one() -> None:
    checkpoint = Checkpoint()
    one, two = SnapshotState(), SnapshotState(chunk_size=7)
    checkpoint.close_group(10, one)
    checkpoint.close_group(20)
    assert checkpoint.committable() == Committable(20, one)
    checkpoint.begin()
    ack = produce(checkpoint)
    checkpoint.close_group(30, two)
    assert checkpoint.committable().snapshot is one
    ack[0](None, "m")
    assert checkpoint.committable() == Committable(30, two)


def test_nothing_after_a_failed_delivery_is_acknowledged() -> None:
    failures: list[tuple[Any, Any]] = []
    checkpoint = Checkpoint(on_failure=lambda err, msg: failures.append((err, msg)))
    checkpoint.close_group(10)
    assert checkpoint.committable().position == 10
    checkpoint.begin()
    acks = produce(checkpoint, 2)
    checkpoint.close_group(20)
    acks[0]("broker said no", "message")
    acks[1](None, "message")
    checkpoint.close_group(30)
    assert failures == [("broker said no", "message")]
    assert checkpoint.committable().position == 10


def test_drain_serves_delivery_reports_until_nothing_is_in_flight() -> None:
    checkpoint = Checkpoint()
    acks = produce(checkpoint, 3)
    checkpoint.close_group(5)
    served: list[float] = []

    def serve(timeout_s: float) -> None:
        served.append(timeout_s)
        acks.pop()(None, "m")

    checkpoint.drain(10, serve)
    assert len(served) == 3 and all(0 < t <= 1.0 for t in served)
    assert checkpoint.committable().position == 5
    checkpoint.drain(10, serve)  # nothing in flight: returns at once
    assert len(served) == 3


def test_the_stall_age_is_the_oldest_unacknowledged_groups_not_any_record_in_flight() -> None:
    """A record just sent (a heartbeat) is in flight but not stalled; the age is that of the oldest group still
    waiting for a delivery report, and 0 once everything is acknowledged."""
    checkpoint = Checkpoint()
    old = checkpoint.begin()
    old.pending += 1
    checkpoint.close_group(10)
    fresh = checkpoint.begin()
    fresh.pending += 1
    checkpoint.close_group(20)
    now = old.begun_at + 30.0
    assert checkpoint.oldest_unacknowledged_s(now) == 30.0
    old.on_delivery(None, None)
    assert checkpoint.oldest_unacknowledged_s(now) == now - fresh.begun_at
    fresh.on_delivery(None, None)
    assert checkpoint.oldest_unacknowledged_s(now) == 0.0
    assert checkpoint.committable().position == 20


def test_settled_only_when_every_group_is_delivered_and_taken() -> None:
    checkpoint = Checkpoint()
    assert checkpoint.settled()
    checkpoint.begin()
    assert not checkpoint.settled()  # an open group
    acks = produce(checkpoint)
    checkpoint.close_group(100)
    assert not checkpoint.settled()  # in flight
    acks[0](None, "m")
    assert not checkpoint.settled()  # delivered, its position not yet taken for a commit
    assert checkpoint.committable().position == 100
    assert checkpoint.settled()


@pytest.mark.parametrize(("timeout_s", "until_flush_s", "settled", "expected"), [
    (0.5, 0.05, True, 0.5),     # nothing to flush: the whole poll interval
    (0.5, 0.05, False, 0.05),   # records or a position wait: wake for the flush
    (0.002, 0.05, False, 0.002),  # a snapshot's shorter wait still wins
    (0.5, -0.01, False, 0.0),   # the flush is overdue: do not wait at all
])
def test_the_loop_never_sleeps_past_a_due_flush_with_work_pending(
        timeout_s: float, until_flush_s: float, settled: bool, expected: float) -> None:
    from signaller.runtime.capture import wait_for_log

    assert wait_for_log(timeout_s, until_flush_s, settled) == pytest.approx(expected)


def test_a_ticket_is_acknowledged_once_every_group_before_it_is_taken_not_later_ones() -> None:
    checkpoint = Checkpoint()
    checkpoint.begin()
    first = produce(checkpoint, 2)
    checkpoint.close_group(100)
    checkpoint.begin()
    second = produce(checkpoint)
    checkpoint.close_group(200, SnapshotState())
    ticket = checkpoint.ticket()
    checkpoint.begin()  # sent after the ticket: never holds it back
    later = produce(checkpoint)
    checkpoint.close_group(300)
    second[0](None, "m")
    first[0](None, "m")
    assert not checkpoint.acknowledged(ticket)  # one record of the first group is still in flight
    first[1](None, "m")
    assert checkpoint.acknowledged(ticket)
    assert checkpoint.committable() == Committable(200, SnapshotState())  # what a commit now stores
    later[0](None, "m")
    assert checkpoint.acknowledged(ticket) and checkpoint.committable().position == 300


def test_a_ticket_with_nothing_sent_is_acknowledged_at_once_and_never_after_a_failure() -> None:
    assert Checkpoint().acknowledged(Checkpoint().ticket())
    checkpoint = Checkpoint()
    checkpoint.begin()
    acks = produce(checkpoint)
    checkpoint.close_group(100)
    acks[0]("broker down", "m")
    assert not checkpoint.acknowledged(checkpoint.ticket())
