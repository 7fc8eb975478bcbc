"""``runtime.heap.session_objects_frozen``: what exists when the session's stream starts is out of the
collector's sight while it runs, and back in it afterwards (a finished session's cycles are collected)."""

from __future__ import annotations

import gc
import weakref

import pytest

from signaller.runtime.heap import session_objects_frozen

pytestmark = pytest.mark.unit


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def cycle() -> weakref.ref[Node]:
    """A two-object reference cycle nothing else refers to: only the cyclic collector frees it."""
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_objects_of_the_session_are_frozen_while_it_runs_and_collected_after() -> None:
    a, b = Node(), Node()
    a.other, b.other = b, a
    alive = weakref.ref(a)
    with session_objects_frozen():
        assert gc.get_freeze_count() > 0
        del a, b  # the session's objects become cyclic garbage while frozen
        gc.collect()
        assert alive() is not None  # a collection during the session does not walk (nor free) them
        later = cycle()  # made during the session: collected as usual
        gc.collect()
        assert later() is None
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert alive() is None  # unfrozen when the session ended: collected


def test_the_objects_are_unfrozen_when_the_session_fails() -> None:
    with pytest.raises(RuntimeError), session_objects_frozen():
        raise RuntimeError("the session failed")
    assert gc.get_freeze_count() == 0
