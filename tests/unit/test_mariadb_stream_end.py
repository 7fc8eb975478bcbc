"""The MariaDB log reader's stream end (``MariaDbLogReader.stream_end``/``last_commit``): what a heartbeat may
commit. The binlog thread queues whole transactions and notes points with nothing to send; the stream end may
move past a queued transaction only once ``poll`` handed it out, or a heartbeat would store an offset after a
transaction not yet sent (lost to a crash at that moment)."""

from __future__ import annotations

from typing import Any

import pytest

from signaller.sources.base import TransactionBegin, TransactionCommit
from signaller.sources.mariadb.positions import GtidSet, Resume, position
from signaller.sources.mariadb.reader import MariaDbLogReader

pytestmark = pytest.mark.unit

FILE = "mariadb-bin.000003"


def reader_at(pos: int) -> MariaDbLogReader:
    """A reader as ``open`` leaves it at ``FILE``:``pos``, without a binlog connection (the thread's side is
    driven by hand below)."""
    reader = MariaDbLogReader(None, None, None, None)  # type: ignore[arg-type]  # unused by the paths under test
    start = Resume(FILE, pos, GtidSet.parse(""))
    reader._handed_end = start.position
    reader._pass_mark = (0, start.position)
    return reader


def transaction(end: int) -> list[Any]:
    return [TransactionBegin(1, end, 0, None, end - 10), TransactionCommit(1, end, end, 0)]


def test_a_passed_point_after_a_queued_transaction_waits_until_poll_hands_it_out() -> None:
    reader = reader_at(100)
    start = position(FILE, 100)
    tx_end = position(FILE, 200)
    reader._hand_over(transaction(tx_end), tx_end)  # the thread queues a captured transaction ...
    reader._passed(Resume(FILE, 300, GtidSet.parse("")))  # ... and reads past a foreign one
    assert reader.stream_end == start  # nothing handed out yet: a heartbeat must not commit past it
    assert reader.last_commit is None
    items = reader.poll(100, 0.0)
    assert [type(item) for item in items] == [TransactionBegin, TransactionCommit]
    assert reader.stream_end == position(FILE, 300)
    assert reader.last_commit == tx_end


def test_a_passed_point_with_nothing_queued_moves_the_stream_end_at_once() -> None:
    reader = reader_at(100)
    reader._passed(Resume(FILE, 150, GtidSet.parse("")))
    assert reader.stream_end == position(FILE, 150)
    tx_end = position(FILE, 200)
    reader._hand_over(transaction(tx_end), tx_end)
    assert reader.stream_end == position(FILE, 150)
    reader.poll(1, 0.0)
    assert reader.stream_end == tx_end
