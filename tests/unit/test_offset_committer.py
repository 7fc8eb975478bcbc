"""``runtime.committer.OffsetCommitter``: offsets stored off the loop's thread, in order, only the newest
of those waiting; ``durable`` says which; a store failure reaches the loop's thread; ``flush`` waits."""

from __future__ import annotations

import threading

import pytest

from signaller.errors import StateError, TransientError
from signaller.runtime.committer import OffsetCommitter
from signaller.state import Offsets

pytestmark = pytest.mark.unit


class SlowStore:
    """Stores each record once ``release`` lets it (one at a time); remembers what it stored, in order."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.stored: list[int] = []
        self.entered = threading.Semaphore(0)
        self.gate = threading.Semaphore(0)
        self.fail_at = fail_at

    def load(self) -> Offsets | None:
        return None

    def commit(self, offsets: Offsets) -> None:
        self.entered.release()
        assert self.gate.acquire(timeout=10)
        if offsets.lsn == self.fail_at:
            raise StateError(f"disk full at {offsets.lsn}")
        self.stored.append(offsets.lsn)

    def release(self) -> None:
        self.gate.release()

    def close(self) -> None:
        pass


def test_records_are_stored_off_the_callers_thread_in_order_the_newest_of_those_waiting() -> None:
    store, woken = SlowStore(), threading.Event()
    committer = OffsetCommitter(store, on_durable=woken.set)
    first = committer.submit(Offsets(100))
    assert store.entered.acquire(timeout=10)  # the thread is storing 100 (the caller did not wait for it)
    assert committer.durable == 0 and committer.busy
    committer.submit(Offsets(200))
    third = committer.submit(Offsets(300))  # replaces 200, not taken yet: only the newest position matters
    store.release()
    assert store.entered.acquire(timeout=10)
    assert woken.wait(10) and committer.durable >= first
    store.release()
    committer.flush(10)
    assert committer.durable == third and not committer.busy
    assert store.stored == [100, 300]
    committer.close()


def test_a_store_failure_is_raised_on_the_loops_thread_and_nothing_more_is_stored() -> None:
    store = SlowStore(fail_at=200)
    committer = OffsetCommitter(store)
    committer.submit(Offsets(100))
    store.release()
    committer.flush(10)
    committer.submit(Offsets(200))
    store.release()
    with pytest.raises(StateError, match="disk full at 200"):
        committer.flush(10)
    with pytest.raises(StateError):
        _ = committer.durable
    with pytest.raises(StateError):
        committer.submit(Offsets(300))
    assert store.stored == [100]
    committer.close()


def test_flush_gives_up_after_its_timeout_and_close_stores_what_was_handed_over() -> None:
    store = SlowStore()
    committer = OffsetCommitter(store)
    committer.submit(Offsets(100))
    with pytest.raises(TransientError, match="not stored within"):
        committer.flush(0.05)
    store.release()
    committer.close()
    assert store.stored == [100] and committer.durable == 1


def test_nothing_submitted_starts_no_thread_and_flushes_at_once() -> None:
    committer = OffsetCommitter(SlowStore())
    committer.flush(0.01)
    assert committer.durable == 0 and not committer.busy
    committer.close()
