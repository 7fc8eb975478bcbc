"""Checkpointing: Kafka's delivery acknowledgements turned into what the runtime may commit, a
log position and the snapshot state as of that position.

Records are grouped by what makes a position committable together: a streamed transaction, a
heartbeat, or an ad-hoc group of snapshot records and state changes. A group is *acknowledged*
when it is closed (its end position is known) and every record of it, and of every earlier group,
was delivered. :meth:`Checkpoint.committable` is the end position of the newest acknowledged group
and the snapshot state of the newest acknowledged group that carried one: the only values the
runtime may store as its offsets and confirm to PostgreSQL. Positions only advance past records
Kafka acknowledged; once a delivery failed nothing after it is ever acknowledged (the committable
stays where it was, and the runtime restarts from the stored offsets).

Call order (one thread, the capture loop's): :meth:`Checkpoint.current` (opens a group if none is
open) → ``sink.send(..., group.on_delivery)``, then ``group.pending += 1`` when the sink produced
the record → :meth:`Checkpoint.close_group` with the group's end position → delivery reports (from
the sink's ``poll``/``flush``) → :meth:`Checkpoint.committable`. Nothing here survives a restart:
a new session starts with an empty checkpoint at the stored offsets.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from signaller.snapshot.state import SnapshotState

DeliveryFailed = Callable[[Any, Any], None]
"""Told of each failed delivery: ``(error, message)`` as the sink's delivery report gave them."""


@dataclass(frozen=True, slots=True)
class Committable:
    """What may be stored and confirmed: everything up to ``position`` is in Kafka, and
    ``snapshot`` (None until a group carried one) is the snapshot state as of it."""

    position: int
    snapshot: SnapshotState | None


class AckGroup:
    """The records of one group awaiting delivery; its ``on_delivery`` is the sink's delivery
    callback for each of them (one bound method per group, not one per record)."""

    __slots__ = ("_checkpoint", "begun_at", "closed", "end_lsn", "on_delivery", "pending", "state")

    def __init__(self, checkpoint: Checkpoint) -> None:
        self.begun_at = time.monotonic()
        """When the group was begun (``time.monotonic()``): its records were produced after this."""
        self.pending = 0
        """Records produced and not yet acknowledged: the producer adds one per record it produced."""
        self.closed = False
        self.end_lsn = 0
        self.state: SnapshotState | None = None
        self._checkpoint = checkpoint
        self.on_delivery = self._delivered

    def _delivered(self, err: Any, msg: Any) -> None:
        self.pending -= 1
        if err is not None:
            self._checkpoint.delivery_failed(err, msg)


class Checkpoint:
    """Groups of produced records and the committable position they add up to. Not thread-safe.

    ``on_failure`` is told of every failed delivery (the sink, which turns it into the error it
    raises from ``raise_if_failed``).
    """

    def __init__(self, on_failure: DeliveryFailed | None = None) -> None:
        self._groups: deque[AckGroup] = deque()
        self._current: AckGroup | None = None
        self._position = 0
        self._snapshot: SnapshotState | None = None
        self._failed = False
        self._on_failure = on_failure
        self._begun = 0
        self._taken = 0

    def begin(self) -> AckGroup:
        """Start a group; records sent until :meth:`close_group` belong to it."""
        group = self._current = AckGroup(self)
        self._groups.append(group)
        self._begun += 1
        return group

    def ticket(self) -> int:
        """A ticket for everything sent so far (call it with no group open): :meth:`acknowledged` says when
        Kafka acknowledged all of it and :meth:`committable` took it in."""
        return self._begun

    @property
    def taken(self) -> int:
        """How many groups :meth:`committable` took in so far: a ticket up to this is in its value."""
        return self._taken

    def acknowledged(self, ticket: int) -> bool:
        """Whether every group begun before ``ticket`` was taken into :meth:`committable` (which this calls):
        a commit of its value from now on stores their effects."""
        self.committable()
        return self._taken >= ticket

    def current(self) -> AckGroup:
        """The open group, starting one if none is open."""
        group = self._current
        return group if group is not None else self.begin()

    def has_open_group(self) -> bool:
        """Whether a group was begun and not yet closed (records sent now join it)."""
        return self._current is not None

    def close_group(self, end_lsn: int, state: SnapshotState | None = None) -> None:
        """The current group (an empty one if none is open) is complete: once delivered, ``end_lsn``
        becomes the committable position and ``state`` (if given: the snapshot state as of the
        group's end) the committable snapshot state."""
        group = self.current()
        group.end_lsn = end_lsn
        group.state = state
        group.closed = True
        self._current = None

    def delivery_failed(self, err: Any, msg: Any) -> None:
        """A record was not delivered: nothing after it is ever acknowledged."""
        self._failed = True
        if self._on_failure is not None:
            self._on_failure(err, msg)

    def committable(self) -> Committable:
        """The newest position all of whose records, and all earlier ones, Kafka acknowledged, and
        the snapshot state of the newest acknowledged group that carried one."""
        groups = self._groups
        while not self._failed and groups and groups[0].closed and groups[0].pending == 0:
            group = groups.popleft()
            self._taken += 1
            self._position = max(self._position, group.end_lsn)
            if group.state is not None:
                self._snapshot = group.state
        return Committable(self._position, self._snapshot)

    def in_flight(self) -> int:
        """The records produced and not yet acknowledged by Kafka."""
        return sum(g.pending for g in self._groups)

    def oldest_unacknowledged_s(self, now: float) -> float:
        """How long the oldest group still waiting for a delivery report has been waiting (since it was
        begun), 0.0 if no record is unacknowledged: a record in flight for long means Kafka is not
        acknowledging; a busy stream always has some records in flight, each for a short time."""
        for group in self._groups:
            if group.pending:
                return now - group.begun_at
        return 0.0

    def settled(self) -> bool:
        """Nothing to commit or acknowledge: no open group and no group left (every closed group
        delivered and taken by :meth:`committable`)."""
        return self._current is None and not self._groups

    def idle(self) -> bool:
        """No open group and nothing waiting for delivery."""
        return self._current is None and not any(g.pending or not g.closed for g in self._groups)

    def drain(self, timeout_s: float, serve: Callable[[float], object]) -> None:
        """Wait up to ``timeout_s`` for outstanding deliveries, serving delivery reports with
        ``serve(seconds)`` (the sink's ``flush``) at most a second at a time."""
        deadline = time.monotonic() + timeout_s
        while self.in_flight() and time.monotonic() < deadline:
            serve(min(1.0, max(0.0, deadline - time.monotonic())))
