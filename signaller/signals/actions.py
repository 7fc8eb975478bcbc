"""The signal actions, as a registry: one entry per signal type a user may send.

Each ``ActionEntry`` says how the action is built from a signal whose ``data`` passed the JSON Schema
(``build(signal_id, data)``, which may still refuse it with a ``SignalError``: a regular expression
that does not compile, which no JSON Schema keyword can state) and how it is applied
(``handle(handler, action)``: a method of the ``ActionHandler``, the snapshot engine). ``parse_action``
builds through ``ACTIONS[signal.type]``; the engine applies through ``apply_action`` (``entry_for(action)``). Adding an
action is one entry here, its ``data`` in ``signal.schema.json`` and its method on the engine.

The watermark types (``snapshot-window-open``/``-close``) are not actions of this registry: the
sidecar writes them itself and they reach the engine as ``WindowMarker``s, by position in the stream.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from signaller.errors import SignalError, SinkError, SourceError, is_transient
from signaller.patterns import ACCEPTED as _PATTERN_ACCEPTED
from signaller.patterns import PatternError, compile_pattern
from signaller.signals.model import (
    EXECUTE_SNAPSHOT,
    LOG,
    PAUSE_SNAPSHOT,
    RESUME_SNAPSHOT,
    STOP_SNAPSHOT,
    AdditionalCondition,
    ExecuteSnapshot,
    LogMessage,
    PauseSnapshot,
    ResumeSnapshot,
    Signal,
    SignalOutcome,
    SnapshotType,
    StopSnapshot,
)
from signaller.signals.values import show

_REGEX_ACCEPTED = _PATTERN_ACCEPTED + ' (case-sensitive), e.g. "public\\\\.orders"'
_CONDITION_REGEX_ACCEPTED = _PATTERN_ACCEPTED + ' (case-insensitive), e.g. "public\\\\.orders"'

A = TypeVar("A")
log = logging.getLogger("signaller.snapshot")


class ActionHandler(Protocol):
    """What applies the actions (the incremental snapshot engine).

    Each method applies one action or raises ``SignalError`` with the reason it is refused (the
    action then changed nothing); it is called on the capture loop's thread only.
    """

    def execute_snapshot(self, action: ExecuteSnapshot) -> None:
        """Queue the matched tables for an incremental snapshot, or run a blocking one."""
        ...

    def stop_snapshot(self, action: StopSnapshot) -> None:
        """Stop the snapshot of the matched tables (of every table without ``data-collections``)."""
        ...

    def pause_snapshot(self, action: PauseSnapshot) -> None:
        """Pause the running incremental snapshot."""
        ...

    def resume_snapshot(self, action: ResumeSnapshot) -> None:
        """Resume the paused incremental snapshot."""
        ...

    def log_message(self, action: LogMessage) -> None:
        """Write the message to the log."""
        ...


@dataclass(frozen=True)
class ActionEntry(Generic[A]):
    """One action: its type, how it is built from a validated signal, and how it is applied."""

    kind: type[A]
    build: Callable[[str, Mapping[str, Any]], A]
    handle: Callable[[ActionHandler, A], None]


def _execute_snapshot(signal_id: str, data: Mapping[str, Any]) -> ExecuteSnapshot:
    snapshot_type = _snapshot_type(data)
    collections = _collections(data.get("data-collections", ()), "data.data-collections", signal_id)
    conditions = tuple(
        AdditionalCondition(data_collection=item["data-collection"].strip(), filter=item["filter"])
        for item in data.get("additional-conditions", ())
    )
    for index, condition in enumerate(conditions):
        _check_regex(condition.data_collection, f"data.additional-conditions[{index}].data-collection",
                     signal_id, ignore_case=True)
    surrogate_key: str | None = data.get("surrogate-key")  # the schema refuses it for a blocking snapshot
    return ExecuteSnapshot(signal_id=signal_id, data_collections=collections, snapshot_type=snapshot_type,
                           additional_conditions=conditions, surrogate_key=surrogate_key)


def _stop_snapshot(signal_id: str, data: Mapping[str, Any]) -> StopSnapshot:
    collections = _collections(data.get("data-collections", ()), "data.data-collections", signal_id)
    return StopSnapshot(signal_id=signal_id, data_collections=collections, snapshot_type=_snapshot_type(data))


def _snapshot_type(data: Mapping[str, Any]) -> SnapshotType:
    return "blocking" if str(data.get("type", "incremental")).lower() == "blocking" else "incremental"


def _collections(items: Iterable[str], where: str, signal_id: str) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for index, item in enumerate(items):
        pattern = item.strip()
        _check_regex(pattern, f"{where}[{index}]", signal_id)
        seen.setdefault(pattern, None)
    return tuple(seen)


def _check_regex(pattern: str, where: str, signal_id: str, *, ignore_case: bool = False) -> None:
    """Raise ``SignalError`` naming ``where`` if ``pattern`` does not compile with RE2."""
    try:
        compile_pattern(pattern, ignore_case=ignore_case)
    except PatternError as exc:
        accepted = _CONDITION_REGEX_ACCEPTED if ignore_case else _REGEX_ACCEPTED
        raise SignalError(f"{where}: {show(pattern)} is not a valid regular expression ({exc.reason}); "
                          f"accepted: {accepted}", signal_id) from None


ACTIONS: Mapping[str, ActionEntry[Any]] = {
    EXECUTE_SNAPSHOT: ActionEntry(ExecuteSnapshot, _execute_snapshot,
                                  lambda handler, action: handler.execute_snapshot(action)),
    STOP_SNAPSHOT: ActionEntry(StopSnapshot, _stop_snapshot, lambda handler, action: handler.stop_snapshot(action)),
    PAUSE_SNAPSHOT: ActionEntry(PauseSnapshot, lambda signal_id, _data: PauseSnapshot(signal_id),
                                lambda handler, action: handler.pause_snapshot(action)),
    RESUME_SNAPSHOT: ActionEntry(ResumeSnapshot, lambda signal_id, _data: ResumeSnapshot(signal_id),
                                 lambda handler, action: handler.resume_snapshot(action)),
    LOG: ActionEntry(LogMessage, lambda signal_id, data: LogMessage(signal_id, data["message"]),
                     lambda handler, action: handler.log_message(action)),
}
"""Signal type -> its action, in the order the accepted types are listed."""

_BY_KIND: Mapping[type, ActionEntry[Any]] = {entry.kind: entry for entry in ACTIONS.values()}


def entry_for(action: object) -> ActionEntry[Any] | None:
    """The registry entry of ``action`` (by its type), None for anything that is not a user action."""
    return _BY_KIND.get(type(action))


def apply_action(handler: ActionHandler, signal: Signal, action: object) -> SignalOutcome:
    """Hand a parsed user signal's ``action`` to ``handler``; a rejection carries the reason and changes nothing.

    Raises only what says nothing about the signal: ``SinkError`` (Kafka failing while the action emits) and a
    transient ``SourceError`` (the database unreachable, restarting or the connection lost while the signal is
    checked, or a snapshot read in flight interrupted: ``is_transient``). The caller retries the session, which
    reads the signal again (the channels with positions) instead of rejecting a valid one. Otherwise a problem
    with the signal is a rejection with its reason; a database refusal (a terminal ``SourceError``) a rejection
    "could not check the signal against the database: ..."; anything unexpected a rejection naming the signal,
    with the traceback in the log. A rejection or a raise changes nothing."""
    try:
        entry = entry_for(action)
        if entry is None:
            raise SignalError(f"signal type {signal.type!r} cannot be sent by users", signal.id)
        entry.handle(handler, action)
    except SignalError as exc:
        return SignalOutcome(signal.id, False, exc.reason)
    except SourceError as exc:
        if is_transient(exc):
            raise
        return SignalOutcome(signal.id, False, f"could not check the signal against the database: {exc}")
    except SinkError:
        raise
    except Exception as exc:
        log.exception("signal %s (%s) could not be applied", signal.id, signal.type)
        return SignalOutcome(signal.id, False, f"signal {signal.id!r} ({signal.type}) could not be applied: "
                             f"internal error {type(exc).__name__}: {exc} (the sidecar logged the details)")
    return SignalOutcome(signal.id, True)
