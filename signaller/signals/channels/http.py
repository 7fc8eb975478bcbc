"""The ``http`` signal channel: the signals ``POST /signals`` queued on the API's control queue.

The HTTP API validates a signal (answering 4xx itself) and queues it with a future; the capture loop
reads this channel after every batch and, once the effects of what it accepted are in the stored
offsets, resolves the futures (``answers``) (so a crash after a 202 cannot lose an accepted signal).
The channel has no position (``stores_positions`` is False): a signal whose effect was not stored is
never answered 202, and the sender may send it again. A rejection is the sender's 4xx answer, not a
notification (``rejections_notified`` is False).

The control queue also carries ``PUT /snapshots/chunk-size`` requests, which are not signals: ``read``
sets them aside for ``take_chunk_sizes``.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Protocol

from signaller.errors import SignalError, SignalNotApplied
from signaller.signals.model import Signal, SignalOutcome


class ControlQueue(Protocol):
    """The API's queue to the capture loop (``snapshot.control.SidecarControl``)."""

    def drain(self) -> list[tuple[Signal | int, Future[SignalOutcome]]]:
        """Everything queued so far: signals and chunk sizes, each with the future its request waits on."""
        ...


class HttpSignalChannel:
    """The signals of ``control`` as a ``SignalChannelReader``; ``answers`` pairs their requests with outcomes."""

    name = "http"
    stores_positions = False
    rejections_notified = False

    def __init__(self, control: ControlQueue) -> None:
        self._control = control
        self._waiting: list[Future[SignalOutcome]] = []
        self._chunk_sizes: list[tuple[int, Future[SignalOutcome]]] = []

    def read(self) -> list[Signal | SignalError]:
        """The signals queued since the last call, in order; at once. Their futures wait for the caller, who
        resolves them (``answers``).

        Requests a previous ``read`` returned but nobody answered (the loop failed while applying them)
        are forgotten, as their senders time out: the sender of a signal may send it again.
        """
        signals: list[Signal | SignalError] = []
        self._waiting, self._chunk_sizes = [], []
        for item, future in self._control.drain():
            if isinstance(item, int):
                self._chunk_sizes.append((item, future))
            else:
                signals.append(item)
                self._waiting.append(future)
        return signals

    def take_chunk_sizes(self) -> list[tuple[int, Future[SignalOutcome]]]:
        """The chunk-size requests the last ``read`` set aside, each with its future."""
        requests, self._chunk_sizes = self._chunk_sizes, []
        return requests

    def answers(self, outcomes: list[SignalOutcome]) -> list[tuple[Future[SignalOutcome], SignalOutcome]]:
        """The requests of the signals the last ``read`` returned, each with its outcome, in order, for the
        caller to resolve later (the next ``read`` no longer knows them)."""
        waiting, self._waiting = self._waiting, []
        return list(zip(waiting, outcomes, strict=True))

    def fail_waiting(self, failure: BaseException) -> None:
        """Fail every request the last ``read`` returned and not yet answered, chunk-size requests included, with
        ``SignalNotApplied`` naming ``failure``. Call when the capture session fails while handling them: their
        effects were not stored (accepted HTTP signals are answered only once they are), so none took effect, and
        their senders get that answer at once instead of a timeout."""
        waiting, self._waiting = self._waiting, []
        sizes, self._chunk_sizes = self._chunk_sizes, []
        reason = (f"not applied: the capture session failed before the request's effect was stored "
                  f"({type(failure).__name__}: {failure}); the sidecar retries the session from its stored state: "
                  "send the request again")
        for future in [*waiting, *(future for _, future in sizes)]:
            if not future.done():
                future.set_exception(SignalNotApplied(reason))

    def close(self) -> None:
        """Nothing to release (the queue belongs to the API)."""
