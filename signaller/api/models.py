"""The models of the HTTP API's bodies: they document the API (OpenAPI at /openapi.json, /docs) and the
answers are built from them; and the conversions from the capture loop's ``SidecarStatus`` to them.

The request body of ``POST /signals`` has no model here: it is the signal JSON Schema
(``signaller/signals/signal.schema.json``), from which ``signaller.api.openapi`` derives its components.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from signaller.api.bodies import MAX_CHUNK_SIZE
from signaller.model.positions import format_lsn
from signaller.snapshot.control import SidecarStatus, TableProgress, TableState


class SignalAccepted(BaseModel):
    """The capture loop accepted (and applied) the signal."""

    id: str
    status: Literal["accepted"] = "accepted"



class TableProgressBody(BaseModel):
    """One table of the incremental snapshot."""

    table: str = Field(description="'schema.table'")
    state: TableState
    rows_emitted: int
    estimated_rows: int | None = Field(description="PostgreSQL's estimate (pg_class.reltuples), null if unknown.")
    progress: float | None = Field(description="rows_emitted / estimated_rows clipped to [0, 1]; null without "
                                               "an estimate.")
    chunk_from: str | None = Field(description="Current chunk's exclusive lower key bound, as text.")
    chunk_to: str | None = Field(description="Current chunk's inclusive upper key bound, as text.")
    maximum_key: str | None
    status: str | None = Field(description="TABLE_SCAN_COMPLETED status: SUCCEEDED, EMPTY, NO_PRIMARY_KEY...")
    started_at: str | None = Field(description="ISO 8601, UTC.")
    ended_at: str | None = Field(description="ISO 8601, UTC.")
    correlation_id: str | None = Field(description="Id of the execute-snapshot signal that queued the table.")
    filter: str | None


class SnapshotsBody(BaseModel):
    """The incremental snapshot as a whole and each of its tables."""

    running: bool
    paused: bool
    chunk_size: int
    correlation_id: str | None
    tables: list[TableProgressBody]


class ChunkSize(BaseModel):
    """``incremental.snapshot.chunk.size``: rows per chunk, applied from the next chunk."""

    model_config = ConfigDict(extra="forbid")

    chunk_size: int = Field(strict=True, ge=1, le=MAX_CHUNK_SIZE)


HealthStatus = Literal["ok", "starting", "error"]


class HealthBody(BaseModel):
    """Liveness and readiness, without details: ``ok`` (200) while streaming, else ``starting`` or ``error`` (503)."""

    model_config = ConfigDict(extra="forbid")

    status: HealthStatus


class HealthDetails(BaseModel):
    """``/health`` with the details that may name the database (behind the token)."""

    status: HealthStatus
    streaming: bool
    committed_lsn: str = Field(description="PostgreSQL's text form, e.g. '0/16B3748'.")
    events: int
    last_error: str | None = Field(description="The capture session's last error, null while none.")




def progress_of(rows_emitted: int, estimated_rows: int | None) -> float | None:
    """``rows_emitted / estimated_rows`` clipped to [0, 1]; None when there is no positive estimate."""
    if estimated_rows is None or estimated_rows <= 0:
        return None
    return min(1.0, max(0.0, rows_emitted / estimated_rows))


def iso_utc(epoch_seconds: float | None) -> str | None:
    """Epoch seconds as ISO 8601 in UTC with milliseconds (``2026-08-22T10:00:00.123Z``); None stays None."""
    if epoch_seconds is None:
        return None
    moment = datetime.fromtimestamp(epoch_seconds, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def table_body(table: TableProgress) -> TableProgressBody:
    """One ``TableProgress`` as ``GET /snapshots`` reports it."""
    return TableProgressBody(
        table=table.table, state=table.state, rows_emitted=table.rows_emitted, estimated_rows=table.estimated_rows,
        progress=progress_of(table.rows_emitted, table.estimated_rows), chunk_from=table.chunk_from,
        chunk_to=table.chunk_to, maximum_key=table.maximum_key, status=table.status,
        started_at=iso_utc(table.started_at), ended_at=iso_utc(table.ended_at),
        correlation_id=table.correlation_id, filter=table.filter,
    )


def snapshots_body(status: SidecarStatus) -> SnapshotsBody:
    """The ``GET /snapshots`` answer for ``status``."""
    return SnapshotsBody(running=status.running, paused=status.paused, chunk_size=status.chunk_size,
                         correlation_id=status.correlation_id, tables=[table_body(t) for t in status.tables])


def health_status(status: SidecarStatus) -> HealthStatus:
    """``ok`` while streaming; otherwise ``error`` if the loop published an error, else ``starting``."""
    return "ok" if status.streaming else "error" if status.last_error else "starting"


def health_details(status: SidecarStatus) -> HealthDetails:
    """The ``GET /health/details`` answer for ``status``."""
    return HealthDetails(status=health_status(status), streaming=status.streaming,
                         committed_lsn=format_lsn(status.committed_lsn), events=status.events,
                         last_error=status.last_error)


DOC_ONLY_MODELS: tuple[type[BaseModel], ...] = (ChunkSize,)
"""Request bodies read by hand (for exact reasons and limits) and described by a model, added to the OpenAPI
components (the signal's are derived from its JSON Schema by ``signaller.api.openapi``)."""
