"""HTTP answers wait for their effects to be stored, not the capture loop
(``SnapshotCoordinator._serve_http``): an accepted request is answered after a store of offsets that
includes it (``committed``, once Kafka acknowledged everything sent up to it: ``commit_due``); a
rejected one at once; meanwhile the loop only shortens its wait for the log. ``committed(through)`` is
what the capture loop calls once the offset committer made a record durable that was handed to it when
the checkpoint had taken ``through`` groups."""

from __future__ import annotations

from typing import Any

import pytest

from signaller.config import config_from_mapping
from signaller.errors import SignalNotApplied, TransientSourceError
from signaller.runtime.capture import CaptureStats
from signaller.runtime.checkpoint import Checkpoint
from signaller.runtime.dispatch import EventDispatcher
from signaller.runtime.snapshots import READ_WAIT_S, SnapshotCoordinator
from signaller.signals.model import Signal, SignalOutcome
from signaller.snapshot.control import SidecarControl
from signaller.sources.postgres.source import postgres_transaction_id
from tests.unit.test_event_dispatch import RecordingSink
from tests.unit.test_streaming_fast_path import BASE

pytestmark = pytest.mark.unit


class Untouched:
    """A chunk reader or schema provider these requests never need."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"{name} was used")


def coordinator() -> tuple[SnapshotCoordinator, SidecarControl, Checkpoint]:
    config = config_from_mapping({**BASE, "snapshot.mode": "no_data"})
    checkpoint, control = Checkpoint(), SidecarControl()
    dispatcher = EventDispatcher(config, RecordingSink(), checkpoint, CaptureStats(),  # type: ignore[arg-type]
                                 transaction_id=postgres_transaction_id)
    snapshots = SnapshotCoordinator(config, Untouched(), Untouched(), dispatcher, checkpoint,  # type: ignore[arg-type]
                                    control, compile_filter=lambda table, _f: table)
    return snapshots, control, checkpoint


def store(snapshots: SnapshotCoordinator, checkpoint: Checkpoint) -> None:
    """What the loop does at a commit: the committable offsets, handed to the store and made durable."""
    checkpoint.committable()
    snapshots.committed(checkpoint.taken)


def in_flight_transaction(checkpoint: Checkpoint, end_lsn: int) -> Any:
    """A streamed transaction whose one record Kafka has not acknowledged yet: its delivery callback."""
    group = checkpoint.begin()
    group.pending += 1
    checkpoint.close_group(end_lsn)
    return group.on_delivery


def test_an_accepted_request_is_answered_after_the_store_that_includes_it_and_the_loop_goes_on() -> None:
    snapshots, control, checkpoint = coordinator()
    deliver = in_flight_transaction(checkpoint, 100)
    answer = control.set_chunk_size(4096)
    snapshots.tick()
    assert not answer.done()  # the effect is applied, its record of it not yet storable
    assert snapshots.engine.chunk_size == 4096 and snapshots.answers_waiting
    assert snapshots.poll_timeout(0.5) == READ_WAIT_S  # the loop keeps looking at deliveries meanwhile
    assert not snapshots.commit_due()
    store(snapshots, checkpoint)  # a store of offsets before the transaction was acknowledged: not enough
    assert not answer.done()
    deliver(None, "record")
    assert snapshots.commit_due()
    stored = checkpoint.committable()
    assert stored.position == 100 and stored.snapshot is not None and stored.snapshot.chunk_size == 4096
    store(snapshots, checkpoint)
    assert answer.result(0).accepted and not snapshots.answers_waiting
    assert snapshots.poll_timeout(0.5) == 0.5


def test_later_records_never_hold_back_an_answer_and_answers_keep_their_order() -> None:
    snapshots, control, checkpoint = coordinator()
    first_tx = in_flight_transaction(checkpoint, 100)
    first = control.set_chunk_size(2048)
    snapshots.tick()
    second_tx = in_flight_transaction(checkpoint, 200)
    second = control.set_chunk_size(8192)
    snapshots.tick()
    first_tx(None, "record")
    assert snapshots.commit_due()
    store(snapshots, checkpoint)
    assert first.result(0).accepted and not second.done()
    second_tx(None, "record")
    store(snapshots, checkpoint)
    assert second.result(0).accepted


def test_a_rejected_request_is_answered_at_once_and_a_failed_delivery_never_answers() -> None:
    snapshots, control, checkpoint = coordinator()
    deliver = in_flight_transaction(checkpoint, 100)
    rejected = control.set_chunk_size(0)
    snapshots.tick()
    outcome = rejected.result(0)
    assert not outcome.accepted and "1..1000000" in (outcome.reason or "")
    accepted = control.set_chunk_size(512)
    snapshots.tick()
    deliver("broker down", "record")  # nothing after it is ever stored: the sender times out and may resend
    assert not snapshots.commit_due()
    store(snapshots, checkpoint)
    assert not accepted.done()


def test_an_answer_waits_for_the_store_that_holds_it_not_a_later_acknowledgement() -> None:
    snapshots, control, checkpoint = coordinator()
    deliver = in_flight_transaction(checkpoint, 100)
    checkpoint.committable()
    handed_over = checkpoint.taken  # a record the committer is storing: from before the request
    answer = control.set_chunk_size(1024)
    snapshots.tick()
    deliver(None, "record")
    assert snapshots.commit_due()
    snapshots.committed(handed_over)  # that earlier record became durable: it does not hold the request
    assert not answer.done()
    store(snapshots, checkpoint)
    assert answer.result(0).accepted



def test_requests_met_by_an_infrastructure_failure_are_answered_not_applied_and_the_failure_propagates() -> None:
    """The database connection is lost while the second of three HTTP requests is checked: the failure propagates
    (the loop retries the session), and every request of that read, the accepted first one and the chunk size
    too, is answered at once with ``SignalNotApplied``: none of their effects can be stored any more."""
    snapshots, control, _ = coordinator()
    applied: list[str] = []

    def apply(signal: Signal, action: object) -> SignalOutcome:
        if signal.id == "lost":
            raise TransientSourceError("server closed the connection unexpectedly")
        applied.append(signal.id)
        return SignalOutcome(signal.id, True)

    snapshots.engine.apply = apply  # type: ignore[method-assign]
    first = control.submit(Signal("first", "log", {"message": "a"}, "http"))
    lost = control.submit(Signal("lost", "log", {"message": "b"}, "http"))
    third = control.submit(Signal("third", "log", {"message": "c"}, "http"))
    size = control.set_chunk_size(2048)
    with pytest.raises(TransientSourceError):
        snapshots.tick()
    assert applied == ["first"]
    for future in (first, lost, third, size):
        error = future.exception(0)
        assert isinstance(error, SignalNotApplied)
        assert str(error).startswith("not applied: the capture session failed before the request's effect was stored "
                                     "(TransientSourceError: server closed the connection unexpectedly)")
    assert not snapshots.answers_waiting

    # A later request is served as ever.
    again = control.submit(Signal("again", "log", {"message": "d"}, "http"))
    snapshots.tick()
    assert applied == ["first", "again"] and not again.done() and snapshots.answers_waiting
