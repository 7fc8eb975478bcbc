"""The snapshot's pace follows the stream: gentle while it carries changes, full speed once it is quiet."""

from __future__ import annotations

import pytest

from signaller.runtime.snapshot_pace import QUIET, QUIET_AFTER_S, SHARED, PaceKeeper
from tests.unit.test_deferred_answers import coordinator
from tests.unit.test_event_dispatch import changes_of

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_session_without_changes_is_quiet() -> None:
    keeper = PaceKeeper(Clock())
    assert keeper.pace(0) is QUIET


def test_a_change_makes_the_stream_busy_until_it_has_been_quiet_for_a_while() -> None:
    clock = Clock()
    keeper = PaceKeeper(clock)
    assert keeper.pace(1) is SHARED
    clock.now += QUIET_AFTER_S * 0.9
    assert keeper.pace(1) is SHARED
    clock.now += QUIET_AFTER_S * 0.2
    assert keeper.pace(1) is QUIET
    assert keeper.pace(5) is SHARED  # changes again: busy at once
    clock.now += QUIET_AFTER_S * 0.9
    assert keeper.pace(6) is SHARED  # each change starts the quiet period anew
    clock.now += QUIET_AFTER_S * 0.9
    assert keeper.pace(6) is SHARED
    clock.now += QUIET_AFTER_S * 0.2
    assert keeper.pace(6) is QUIET


def test_the_quiet_pace_fetches_and_queues_more_than_the_shared_one() -> None:
    assert SHARED.fetch.rows < QUIET.fetch.rows and SHARED.fetch.ahead < QUIET.fetch.ahead
    assert SHARED.queued_records < QUIET.queued_records
    for pace in (SHARED, QUIET):
        assert pace.fetch.ahead >= pace.fetch.rows  # a slice is fetched while at least one slice waits


def test_the_coordinator_sets_the_engines_pace_from_the_streamed_changes() -> None:
    snapshots, _control, _checkpoint = coordinator()
    clock = Clock()
    snapshots._pace = PaceKeeper(clock)
    snapshots._emit_slices()  # what tick does while a window's READs are fetched or emitted
    assert snapshots.engine.fetch_pace == QUIET.fetch
    change = changes_of("defaults")[0]
    snapshots.on_change(change)
    snapshots._emit_slices()
    assert snapshots.engine.fetch_pace == SHARED.fetch
    clock.now += QUIET_AFTER_S * 1.1
    snapshots._emit_slices()
    assert snapshots.engine.fetch_pace == QUIET.fetch
