"""Waking a log reader's wait from another thread (``signaller.sources.waker``) and the control
queue that does it when a signal is submitted (``SidecarControl.wake_with``)."""

from __future__ import annotations

import select
import threading
import time

import pytest

from signaller.signals.model import Signal
from signaller.snapshot.control import SidecarControl
from signaller.sources.waker import Waker

pytestmark = pytest.mark.unit


def test_a_wake_from_another_thread_ends_a_select_at_once() -> None:
    waker = Waker()
    threading.Timer(0.05, waker.wake).start()
    started = time.monotonic()
    ready, _, _ = select.select([waker], [], [], 10)
    assert ready == [waker] and time.monotonic() - started < 5
    assert waker.clear()
    assert not waker.clear()  # consumed
    assert select.select([waker], [], [], 0)[0] == []


def test_waking_never_blocks_and_is_harmless_after_close() -> None:
    waker = Waker()
    for _ in range(200_000):  # far more than a socket buffer holds
        waker.wake()
    assert waker.clear()
    waker.close()
    waker.wake()
    assert not waker.clear()


def test_control_wakes_the_loop_for_every_queued_request() -> None:
    control = SidecarControl()
    woken: list[int] = []
    control.submit(Signal("s1", "log", {"message": "x"}, "http"))  # no loop yet: nothing to wake
    control.wake_with(lambda: woken.append(1))
    control.submit(Signal("s2", "log", {"message": "y"}, "http"))
    control.set_chunk_size(10)
    assert woken == [1, 1]
    control.wake_with(None)
    control.submit(Signal("s3", "log", {"message": "z"}, "http"))
    assert woken == [1, 1]
    assert len(control.drain()) == 4
