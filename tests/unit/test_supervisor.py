"""The supervisor's stop and retry rules, with fake sessions (no services)."""

from __future__ import annotations

import threading

import pytest

from signaller.errors import TerminalSourceError, TransientSourceError
from signaller.runtime import supervisor as supervisor_module
from signaller.runtime.supervisor import Supervisor

pytestmark = pytest.mark.unit


class LoopingSession:
    """Runs until ``stop()``, like the capture loop."""

    def __init__(self) -> None:
        self.stopped = threading.Event()
        self.ran = False

    def stop(self) -> None:
        self.stopped.set()

    def run(self) -> None:
        self.ran = True
        assert self.stopped.wait(5), "run() was never stopped"


def test_a_stop_while_the_session_is_being_built_is_not_lost() -> None:
    holder: list[Supervisor] = []
    session = LoopingSession()

    def factory() -> LoopingSession:
        holder[0].stop()  # SIGTERM arrives while the session is constructed
        return session

    sup = Supervisor(factory)
    holder.append(sup)
    assert sup.run() == 0
    assert not session.ran


def test_transient_errors_are_retried_and_terminal_ones_stop_with_1(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(supervisor_module, "INITIAL_BACKOFF_S", 0.01)
    failures = [TransientSourceError("slot in use"), TransientSourceError("slot in use"),
                TerminalSourceError("wal_level is replica")]
    attempts: list[int] = []

    class Failing:
        def run(self) -> None:
            attempts.append(1)
            raise failures[len(attempts) - 1]

    assert Supervisor(Failing).run() == 1
    assert len(attempts) == 3
