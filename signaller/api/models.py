"""The models of the HTTP API's bodies: they document the API (OpenAPI at /openapi.json, /docs) and the
answers are built from them; and the conversions from the capture loop's ``SidecarStatus`` to them.

The request models of ``POST /signals`` mirror ``signal.schema.json`` plus the parser's own checks
(regular expressions compile; surrogate-key only for incremental snapshots), so that a body is valid
for the OpenAPI document exactly when the server accepts it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel
from pydantic.json_schema import SkipJsonSchema

from signaller.api.bodies import MAX_CHUNK_SIZE
from signaller.model.positions import format_lsn
from signaller.snapshot.control import SidecarStatus, TableProgress, TableState

_NOT_BLANK = "[^\\s\\x1c-\\x1f]"
"""Has a character that is not whitespace (Python's ``str.isspace``, which the parser uses, also counts
``\\x1c``-``\\x1f``; ECMA and Rust regular expressions do not, hence the explicit range)."""
_INCREMENTAL = "^[Ii][Nn][Cc][Rr][Ee][Mm][Ee][Nn][Tt][Aa][Ll]$"
_BLOCKING = "^[Bb][Ll][Oo][Cc][Kk][Ii][Nn][Gg]$"
_SNAPSHOT_TYPE = "^([Ii][Nn][Cc][Rr][Ee][Mm][Ee][Nn][Tt][Aa][Ll]|[Bb][Ll][Oo][Cc][Kk][Ii][Nn][Gg])$"
_SNAPSHOT_TYPE_DOC = "'incremental' (the default) or 'blocking', in any letter case."
_COLLECTION_DOC = "Regular expressions full-matched against 'schema.table' (case-sensitive)."
TABLE_PATTERN_FORMAT = "table-pattern"
"""The ``format`` of regular expressions over 'schema.table': compiled as the signal parser compiles
it (leading and trailing whitespace trimmed). Not JSON Schema's ``regex`` (ECMA-262 syntax: it
refuses a lone ``{``, which RE2 and Python accept); no JSON Schema keyword can state "compiles", so
the format carries it, beside the ``pattern`` that states "not blank"."""
_REGEX = {"format": TABLE_PATTERN_FORMAT}

Regex = Annotated[str, Field(min_length=1, pattern=_NOT_BLANK, json_schema_extra=_REGEX,
                             description="A non-blank regular expression (RE2 syntax: Java/Python without "
                                         "backreferences or lookaround), at most 4096 characters once trimmed, "
                                         "full-matched against 'schema.table'.")]
"""A user's regular expression: non-blank and compilable (the parser refuses others with 422)."""
NonBlank = Annotated[str, Field(min_length=1, pattern=_NOT_BLANK)]


def _no_default(schema: dict[str, Any]) -> None:
    """Optional but not nullable: the document shows no ``default: null`` (null is refused)."""
    schema.pop("default", None)


class AdditionalCondition(BaseModel):
    """One entry of ``additional-conditions`` of an incremental ``execute-snapshot``."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    data_collection: Regex = Field(
        alias="data-collection",
        description="Regular expression full-matched against 'schema.table', case-insensitively.",
        examples=["public\\.orders"],
    )
    filter: str = Field(
        min_length=1, pattern=_NOT_BLANK,
        description="A boolean SQL expression over the table's columns, ANDed into the chunk queries.",
        examples=["color = 'blue' AND qty > 10"],
    )


class BlockingCondition(BaseModel):
    """One entry of ``additional-conditions`` of a blocking ``execute-snapshot``."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    data_collection: Regex = Field(
        alias="data-collection",
        description="Regular expression full-matched against 'schema.table', case-insensitively (a table id "
                    "such as 'public.orders' matches itself).")
    filter: str = Field(min_length=1, pattern=_NOT_BLANK,
                        description="A boolean SQL expression over the table's columns.")


class ExecuteSnapshotData(BaseModel):
    """``data`` of an incremental ``execute-snapshot`` (``type`` absent or 'incremental')."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    data_collections: list[Regex] = Field(
        alias="data-collections", min_length=1, description=_COLLECTION_DOC, examples=[["public\\.orders"]])
    type: str = Field("incremental", pattern=_INCREMENTAL, description=_SNAPSHOT_TYPE_DOC)
    additional_conditions: list[AdditionalCondition] = Field(
        default_factory=list, alias="additional-conditions",
        description="Per-table filters: for each table, the first whose data-collection matches applies.")
    surrogate_key: NonBlank | SkipJsonSchema[None] = Field(
        None, alias="surrogate-key", json_schema_extra=_no_default,
        description="One unique column used instead of the primary key.")


class BlockingSnapshotData(BaseModel):
    """``data`` of a blocking ``execute-snapshot`` (``type`` 'blocking'; no ``surrogate-key``)."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    data_collections: list[Regex] = Field(alias="data-collections", min_length=1, description=_COLLECTION_DOC)
    type: str = Field(pattern=_BLOCKING, description="'blocking', in any letter case.")
    additional_conditions: list[BlockingCondition] = Field(
        default_factory=list, alias="additional-conditions",
        description="Per-table filters: the first entry naming the table applies.")


class StopSnapshotData(BaseModel):
    """``data`` of ``stop-snapshot``: absent or empty ``data-collections`` stops everything."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    data_collections: list[Regex] = Field(default_factory=list, alias="data-collections", description=_COLLECTION_DOC)
    type: str = Field("incremental", pattern=_SNAPSHOT_TYPE, description=_SNAPSHOT_TYPE_DOC)


class LogData(BaseModel):
    """``data`` of ``log``: ``message`` is required; other keys are ignored."""

    message: str = Field(description="Written to the sidecar's log at INFO ('{}' becomes the current offsets).")


class _Signal(BaseModel):
    """What every signal has: ``id``, ``type``, ``data``, and the ignored ``additionalData``."""

    model_config = ConfigDict(populate_by_name=True)

    id: str = Field(min_length=1, pattern=_NOT_BLANK,
                    description="Chosen by the sender (usually a UUID); for execute-snapshot it becomes the "
                                "notification correlation id.")
    additional_data: dict[str, Any] = Field(
        default_factory=dict, alias="additionalData", description="Read by Debezium's file channel; ignored.")


class ExecuteSnapshotSignal(_Signal):
    """Start an incremental or blocking snapshot of the tables ``data.data-collections`` matches."""

    type: Literal["execute-snapshot"]
    data: ExecuteSnapshotData | BlockingSnapshotData


class StopSnapshotSignal(_Signal):
    """Stop the snapshot of the matched tables (of every table without ``data-collections``)."""

    type: Literal["stop-snapshot"]
    data: StopSnapshotData


class PauseSnapshotSignal(_Signal):
    """Pause the incremental snapshot; ``data`` is any object (``{}``)."""

    type: Literal["pause-snapshot"]
    data: dict[str, Any]


class ResumeSnapshotSignal(_Signal):
    """Resume a paused incremental snapshot; ``data`` is any object (``{}``)."""

    type: Literal["resume-snapshot"]
    data: dict[str, Any]


class LogSignal(_Signal):
    """Write ``data.message`` to the sidecar's log."""

    type: Literal["log"]
    data: LogData


class SignalRequest(RootModel[Annotated[
    ExecuteSnapshotSignal | StopSnapshotSignal | PauseSnapshotSignal | ResumeSnapshotSignal | LogSignal,
    Field(discriminator="type"),
]]):
    """A Debezium signal, as ``schemas/signal.schema.json`` describes it; ``data`` depends on ``type``
    (case-sensitive) and is an object, never a JSON string."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"id": "req-42", "type": "execute-snapshot",
         "data": {"data-collections": ["public\\.orders"], "type": "incremental"}},
        {"id": "req-43", "type": "stop-snapshot", "data": {"type": "incremental"}},
        {"id": "req-44", "type": "pause-snapshot", "data": {}},
        {"id": "req-45", "type": "log", "data": {"message": "offsets: {}"}},
    ]})


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


DOC_ONLY_MODELS: tuple[type[BaseModel], ...] = (SignalRequest, ChunkSize)
"""Request bodies read by hand (for exact reasons and limits), added to the OpenAPI components."""
