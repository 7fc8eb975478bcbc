"""The sidecar's HTTP API: signals in; snapshot progress, health and metrics out.

``create_app`` builds the FastAPI application over a ``SidecarControl`` (the thread-safe queue to the
capture loop) and a ``MetricsRegistry``; ``serve`` runs it with uvicorn on a daemon thread.

Routes (every answer is JSON except ``/metrics`` and ``/docs``; every error is ``{"error": <reason>}``,
plus the signal's ``id`` when the capture loop rejected a signal):

* ``POST /signals``: a Debezium signal ``{"id", "type", "data"}``, as the ``kafka`` and ``file``
  channels take it. It is checked by ``signals.parsing`` (400 for a body that is not JSON, 422 for
  JSON that is not a valid signal, with the parser's reason), then handed to the capture loop, which
  answers: 202 ``{"id", "status": "accepted"}``, or 400 ``{"error", "id"}`` with the engine's reason
  (unknown table, unsafe filter...). No answer within 30 s: 503 (the signal may still be applied).
* ``GET /snapshots``: the incremental snapshot's progress, table by table.
* ``PUT /snapshots/chunk-size``: ``{"chunk_size": 1..1000000}``, applied from the next chunk.
* ``GET /health``: ``{"status"}`` only: 200 ``ok`` while streaming, else 503 ``starting`` or
  ``error``. It needs no token (probes carry none), so it says nothing about the database.
* ``GET /health/details``: the same plus ``streaming``, ``committed_lsn``, ``events`` and
  ``last_error`` (which can name the database host and user): behind the token like every other route.
* ``GET /metrics``: Prometheus text exposition.
* ``GET /openapi.json``, ``GET /docs``: the OpenAPI 3.1 document (exact: request schemas are what the
  server accepts, every status a route can answer is listed, the bearer scheme is declared) and its UI.

Authentication: with a token, every route but ``/health`` requires ``Authorization: Bearer <token>``
(compared in constant time), else 401. Without one there is no authentication, which ``serve`` only
allows on a loopback address.

Cross-site requests are refused, so a web page open in the operator's browser cannot drive the API
(checked in this order, before authentication):

1. ``Host`` (DNS rebinding): without a token, the ``Host`` header must name a loopback address
   (``localhost``, ``127.0.0.0/8``, ``[::1]``; any port), else 421. With a token the token is the
   defence (a page never has it) and any ``Host`` is served, so proxies and service names work.
2. ``Origin``: when present it must be the API's own origin (same host and port as ``Host``), else
   403; ``Origin: null`` is refused. ``Sec-Fetch-Site`` must be absent, ``same-origin`` or ``none``
   (a typed URL): ``cross-site`` and ``same-site`` (another port of localhost) are 403. Clients that
   are not browsers (curl, the CLI, Prometheus, probes) send neither header.
3. Content type: ``POST``/``PUT`` bodies must be ``Content-Type: application/json`` (``charset``, if
   given, ``utf-8``), else 415 — an HTML form or a ``no-cors`` fetch cannot send that type.

Malformed requests are answered 4xx, never 5xx: unknown route 404, wrong method 405 (with
``Allow``), body over the route's limit 413, not UTF-8 / not JSON / nested deeper than
``MAX_JSON_DEPTH`` 400, not a valid signal 422, invalid chunk size 400. The only 5xx are the
documented 503 when the capture loop does not answer in time, 503 from ``/health`` while not
streaming, and 500 if the capture loop itself raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hmac
import logging
import socket
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import orjson
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, RootModel
from pydantic.json_schema import SkipJsonSchema
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from signaller.api.metrics import MetricsRegistry
from signaller.config.build import is_loopback
from signaller.errors import ConfigError, SignalError, SignallerError, TransientError
from signaller.model.positions import format_lsn
from signaller.signals.model import SignalOutcome, WindowMarker
from signaller.snapshot.control import SidecarControl, SidecarStatus, TableProgress, TableState

log = logging.getLogger(__name__)

ANSWER_TIMEOUT_S = 30.0
"""How long a request waits for the capture loop to answer a signal or a chunk-size change."""
MAX_SIGNAL_BYTES = 1 << 20
"""Largest accepted ``POST /signals`` body (Debezium's signal table holds 2 KiB of data)."""
MAX_CHUNK_SIZE_BYTES = 4096
"""Largest accepted ``PUT /snapshots/chunk-size`` body (``{"chunk_size": 1000000}`` is 23 bytes)."""
MAX_JSON_DEPTH = 64
"""Deepest accepted nesting of arrays and objects in a request body (a signal needs 4)."""
MAX_CHUNK_SIZE = 1_000_000
UNAUTHORIZED = "missing or wrong bearer token"
OPEN_PATHS = frozenset({"/health"})
"""Routes that never require the bearer token (probes of orchestrators carry none)."""
JSON_MEDIA_TYPE = "application/json"
SAFE_FETCH_SITES = frozenset({"same-origin", "none"})
"""``Sec-Fetch-Site`` values a browser sends for the API's own pages or a typed URL."""
LOOPBACK_HOSTS_DOC = "localhost, 127.0.0.1 (any 127.0.0.0/8 address) or [::1], with any port"
CHUNK_SIZE_ACCEPTED = f'{{"chunk_size": <integer from 1 to {MAX_CHUNK_SIZE}>}}'


def _package_version() -> str:
    try:
        return version("signaller")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0+unknown"


# ---------------------------------------------------------------------------------------------------------
# Models: they document the API (OpenAPI at /openapi.json, /docs); the answers are built from them.
# The request models mirror schemas/signal.schema.json plus the parser's own checks (regular
# expressions compile; surrogate-key only for incremental snapshots), so that a body is valid for
# the OpenAPI document exactly when the server accepts it.
# ---------------------------------------------------------------------------------------------------------


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


class ErrorBody(BaseModel):
    """Every error answer. ``id`` is the signal's, when the capture loop rejected a signal."""

    error: str = Field(description="What was wrong and what is accepted.")
    id: str | None = None


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


_DOC_ONLY_MODELS: tuple[type[BaseModel], ...] = (SignalRequest, ChunkSize)
"""Request bodies read by hand (for exact reasons and limits), added to the OpenAPI components."""
_ERROR_DESCRIPTIONS = {
    400: "Rejected: the reason is in 'error'.",
    401: f"Authorization: Bearer <token> is required ('{UNAUTHORIZED}').",
    403: "A cross-site request (foreign Origin, or Sec-Fetch-Site cross-site/same-site).",
    413: "Body too large.",
    415: "The body is not Content-Type: application/json.",
    421: "Without a token, the Host header must name a loopback address (DNS rebinding defence).",
    422: "Not a valid signal: the parser's reason is in 'error'.",
    500: "The capture loop failed while applying the request.",
    503: "The capture loop did not answer in time.",
}
_BODY_CODES = (400, 413, 415)
"""Answered while reading a JSON body."""


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {code: {"model": ErrorBody, "description": _ERROR_DESCRIPTIONS[code]} for code in codes}


# ---------------------------------------------------------------------------------------------------------
# Conversions
# ---------------------------------------------------------------------------------------------------------


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


def _error(reason: str, status_code: int, signal_id: str | None = None,
           headers: Mapping[str, str] | None = None) -> JSONResponse:
    body: dict[str, str] = {"error": reason}
    if signal_id is not None:
        body["id"] = signal_id
    return JSONResponse(body, status_code=status_code, headers=headers)


class RequestRejected(SignallerError):
    """A malformed request: answered ``status`` with ``{"error": reason}`` (never raised past the app)."""

    def __init__(self, status: int, reason: str) -> None:
        self.status = status
        self.reason = reason
        super().__init__(reason)


# ---------------------------------------------------------------------------------------------------------
# Cross-site requests and authentication (ASGI middleware: they answer before any route runs)
# ---------------------------------------------------------------------------------------------------------


def _split_host(authority: str) -> tuple[str, int | None]:
    """``host[:port]`` (IPv6 in brackets) as (lower-case host without brackets, port or None).

    A port that is not a number is kept in the host, so the comparison that follows fails.
    """
    authority = authority.strip().lower()
    if authority.startswith("["):
        host, _, rest = authority[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
        return host, int(port_text) if port_text.isdigit() and len(port_text) <= 5 else None
    host, colon, port_text = authority.rpartition(":")
    if colon and port_text.isdigit() and len(port_text) <= 5:
        return host, int(port_text)
    return authority, None


def _default_port(scheme: str) -> int | None:
    return {"http": 80, "https": 443}.get(scheme)


class CrossSiteGuard:
    """ASGI middleware refusing requests a web page could make through the operator's browser.

    ``check_host`` (the API has no token): the ``Host`` header must name a loopback address, else 421.
    Always: a present ``Origin`` must be the API's own origin (host and port of ``Host``), else 403,
    and ``Sec-Fetch-Site`` must be absent, ``same-origin`` or ``none``, else 403. Each refusal says
    what was refused and what is accepted.
    """

    def __init__(self, app: ASGIApp, check_host: bool) -> None:
        self.app = app
        self._check_host = check_host

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self._refusal(Headers(scope=scope), scope.get("scheme", "http"))
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _refusal(self, headers: Headers, scheme: str) -> JSONResponse | None:
        host_header = headers.get("host", "")
        if self._check_host and host_header and not is_loopback(_split_host(host_header)[0]):
            return _error(f"Host {host_header[:100]!r} is not a loopback address; accepted: {LOOPBACK_HOSTS_DOC} "
                          "(this API has no bearer token, so it answers only requests addressed to a loopback "
                          "name, a defence against DNS rebinding; set signaller.http.token to serve other names)",
                          421)
        origin = headers.get("origin")
        if origin is not None and not self._same_origin(origin, host_header, scheme):
            return _error(f"cross-site request refused: Origin {origin[:100]!r} is not this API's origin; "
                          f"accepted: no Origin header, or the API's own origin (http(s)://{host_header[:100]})", 403)
        fetch_site = headers.get("sec-fetch-site")
        if fetch_site is not None and fetch_site.strip().lower() not in SAFE_FETCH_SITES:
            return _error(f"cross-site request refused: Sec-Fetch-Site {fetch_site[:40]!r}; accepted: no "
                          "Sec-Fetch-Site header, 'same-origin' or 'none' (a page of another site or port "
                          "cannot drive this API)", 403)
        return None

    @staticmethod
    def _same_origin(origin: str, host_header: str, scheme: str) -> bool:
        try:
            parts = urlsplit(origin.strip())
            origin_port = parts.port or _default_port(parts.scheme)
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or not parts.hostname or not host_header:
            return False
        host, port = _split_host(host_header)
        return (parts.hostname, origin_port) == (host, port or _default_port(parts.scheme or scheme))


class BearerAuth:
    """ASGI middleware: HTTP requests outside ``open_paths`` need ``Authorization: Bearer <token>``.

    The token is compared with ``hmac.compare_digest`` (constant time); a missing or wrong one is
    answered 401 ``{"error": "missing or wrong bearer token"}`` before the route runs.
    """

    def __init__(self, app: ASGIApp, token: str, open_paths: frozenset[str] = OPEN_PATHS) -> None:
        self.app = app
        self._token = token.encode()
        self._open_paths = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self._open_paths or self._authorized(scope):
            await self.app(scope, receive, send)
            return
        response = _error(UNAUTHORIZED, 401, headers={"WWW-Authenticate": 'Bearer realm="signaller"'})
        await response(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        header = Headers(scope=scope).get("authorization", "")
        scheme, _, credentials = header.partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(credentials.strip().encode("utf-8", "surrogateescape"), self._token)


# ---------------------------------------------------------------------------------------------------------
# Request bodies
# ---------------------------------------------------------------------------------------------------------


def require_json_content_type(content_type: str | None) -> None:
    """``RequestRejected`` 415 unless ``content_type`` is ``application/json`` (charset, if any, UTF-8)."""
    media_type, *parameters = (content_type or "").split(";")
    charset_ok = all(
        name.strip().lower() != "charset" or value.strip().strip('"').lower() in ("utf-8", "utf8")
        for name, _, value in (parameter.partition("=") for parameter in parameters)
    )
    if media_type.strip().lower() != JSON_MEDIA_TYPE or not charset_ok:
        shown = repr(content_type[:100]) if content_type else "none"
        raise RequestRejected(415, f"Content-Type {shown} is not accepted; accepted: {JSON_MEDIA_TYPE} "
                                   "(optionally with charset=utf-8)")


async def read_json_text(request: Request, limit: int) -> str:
    """The body of a JSON request as text, checked: content type (415), size (413), UTF-8 (400).

    Raises ``RequestRejected``; the caller parses the text (``parse_json``).
    """
    require_json_content_type(request.headers.get("content-type"))
    raw = await _read_limited(request, limit)
    if raw is None:
        raise RequestRejected(413, f"the body is larger than {limit} bytes; accepted: at most {limit} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequestRejected(400, f"the body is not UTF-8 text (invalid byte at offset {exc.start}); "
                                   "accepted: JSON encoded as UTF-8") from None


def parse_json(text: str) -> Any:
    """``text`` as JSON (a leading BOM is ignored); ``RequestRejected`` 400 naming the problem.

    Nesting deeper than ``MAX_JSON_DEPTH`` is refused (orjson itself stops at 1024 levels, so parsing
    never recurses without bound).
    """
    try:
        document = orjson.loads(text.removeprefix("\ufeff"))
    except orjson.JSONDecodeError as exc:
        if "depth" in str(exc) or "recursion" in str(exc).lower():
            raise RequestRejected(400, _too_deep()) from None
        raise RequestRejected(400, f"the body is not valid JSON ({exc}); accepted: one JSON object") from None
    if _depth(document) > MAX_JSON_DEPTH:
        raise RequestRejected(400, _too_deep())
    return document


def _too_deep() -> str:
    return (f"the body nests arrays/objects deeper than {MAX_JSON_DEPTH} levels; accepted: JSON nested at most "
            f"{MAX_JSON_DEPTH} levels deep")


def _depth(document: Any) -> int:
    """How deeply arrays and objects nest in ``document`` (a scalar: 0), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest


def chunk_size_of(document: Any) -> int:
    """The ``chunk_size`` of a ``PUT /snapshots/chunk-size`` body; ``RequestRejected`` 400 naming the problem.

    Accepts exactly ``{"chunk_size": n}`` with n an integer from 1 to ``MAX_CHUNK_SIZE`` (JSON
    Schema's integer: ``500.0`` is 500; ``true``, ``"500"`` and ``10.5`` are not integers).
    """
    if not isinstance(document, dict):
        raise RequestRejected(400, f"body: expected a JSON object, got {_json_kind(document)}; "
                                   f"accepted: {CHUNK_SIZE_ACCEPTED}")
    unknown = sorted(key for key in document if key != "chunk_size")
    if unknown:
        raise RequestRejected(400, f"body: unknown key(s) {', '.join(map(repr, unknown))[:200]}; "
                                   f"accepted: {CHUNK_SIZE_ACCEPTED}")
    if "chunk_size" not in document:
        raise RequestRejected(400, f"chunk_size: missing; accepted: {CHUNK_SIZE_ACCEPTED}")
    value = document["chunk_size"]
    integral = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not integral:
        raise RequestRejected(400, f"chunk_size: expected an integer, got {_json_kind(value)}; "
                                   f"accepted: {CHUNK_SIZE_ACCEPTED}")
    if not 1 <= value <= MAX_CHUNK_SIZE:
        shown = repr(value) if len(repr(value)) <= 30 else repr(value)[:27] + "..."
        raise RequestRejected(400, f"chunk_size: {shown} is out of range; accepted: {CHUNK_SIZE_ACCEPTED}")
    return int(value)


def _json_kind(value: Any) -> str:
    """``null``, ``a boolean``, ``the number 10.5``, ``a string``, ``an array``, ``an object``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        text = repr(value)
        return f"the number {text if len(text) <= 30 else text[:27] + '...'}"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object" if isinstance(value, dict) else type(value).__name__


async def _read_limited(request: Request, limit: int) -> bytes | None:
    """The request body, or None as soon as it exceeds ``limit`` bytes."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


# ---------------------------------------------------------------------------------------------------------
# The application
# ---------------------------------------------------------------------------------------------------------

_SECURITY_SCHEME = "bearerAuth"


class _SignallerApp(FastAPI):
    """FastAPI whose OpenAPI also describes the request bodies the routes parse by hand and the security."""

    def openapi(self) -> dict[str, Any]:
        if self.openapi_schema is None:
            schema = super().openapi()
            components = schema.setdefault("components", {})
            schemas = components.setdefault("schemas", {})
            for model in _DOC_ONLY_MODELS:
                model_schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
                schemas.update(model_schema.pop("$defs", {}))
                schemas[model.__name__] = model_schema
            for name in ("HTTPValidationError", "ValidationError"):
                schemas.pop(name, None)
            if self.state.bearer_token_required:
                components["securitySchemes"] = {_SECURITY_SCHEME: {
                    "type": "http", "scheme": "bearer",
                    "description": "signaller.http.token; every operation but GET /health requires it."}}
                schema["security"] = [{_SECURITY_SCHEME: []}]
                for path, operations in schema.get("paths", {}).items():
                    for operation in operations.values():
                        if path in OPEN_PATHS:
                            operation["security"] = []
                        else:
                            operation["responses"]["401"]["headers"] = {
                                "WWW-Authenticate": {"schema": {"type": "string"},
                                                     "description": 'Bearer realm="signaller"'}}
            self.openapi_schema = schema
        return self.openapi_schema


def create_app(
    control: SidecarControl,
    *,
    token: str | None,
    metrics: MetricsRegistry,
    answer_timeout_s: float = ANSWER_TIMEOUT_S,
) -> FastAPI:
    """The HTTP API over ``control`` (see the module docstring for the routes and the defences).

    ``token``: the bearer token every route but ``/health`` requires; None disables authentication
    (only safe on loopback, which ``serve`` enforces, and then ``Host`` must be a loopback name); an
    empty token is refused. ``metrics`` is rendered by ``GET /metrics`` and counts the HTTP channel's
    signals (``signaller_signals_total{channel="http"}``). ``answer_timeout_s`` bounds the wait for
    the capture loop's answer.
    """
    if token is not None and not token:
        raise ConfigError("signaller.http.token", "", "a non-empty bearer token (or none, on loopback only)")
    app = _SignallerApp(
        title="signaller",
        version=_package_version(),
        description="Debezium-compatible signals and incremental snapshot control of a signaller sidecar. "
                    "Every error is {\"error\": <what was wrong and what is accepted>}.",
    )
    app.state.bearer_token_required = token is not None
    if token is not None:
        app.add_middleware(BearerAuth, token=token)
    app.add_middleware(CrossSiteGuard, check_host=token is None)  # added last: runs first
    open_codes = (403,) if token is not None else (403, 421)
    guarded = (401, 403) if token is not None else open_codes
    _add_error_handlers(app)
    _add_signal_route(app, control, metrics, answer_timeout_s, guarded)
    _add_control_routes(app, control, answer_timeout_s, guarded, open_codes, metrics)
    return app


def _add_error_handlers(app: FastAPI) -> None:
    """Every error FastAPI/Starlette would answer itself becomes ``{"error": ...}``."""
    @app.exception_handler(RequestRejected)
    async def rejected(_request: Request, exc: RequestRejected) -> JSONResponse:
        return _error(exc.reason, exc.status)

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> JSONResponse:
        # A bug, not bad input (every malformed request is answered 4xx above): logged with its traceback
        # by the server, answered as JSON like every other error.
        return _error(f"internal error of the HTTP API on {request.method} {request.url.path[:200]} "
                      f"({type(exc).__name__}); it is in the sidecar's log", 500)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        headers = dict(exc.headers or {})
        method, path = request.method, request.url.path[:200]
        if exc.status_code == 404:
            reason = f"no route {method} {path!r}; accepted: {', '.join(_route_list(app))}"
        elif exc.status_code == 405:
            reason = f"method {method} is not allowed on {path}; accepted: {headers.get('Allow', '')}"
        else:
            reason = str(exc.detail)
        return _error(reason, exc.status_code, headers=headers)


def _route_list(app: FastAPI) -> list[str]:
    routes = []
    for route in app.routes:
        methods = sorted(getattr(route, "methods", None) or ())
        path = getattr(route, "path", "")
        if methods and not path.startswith("/docs/"):
            routes.append(f"{'/'.join(methods)} {path}")
    return routes


def _add_signal_route(app: FastAPI, control: SidecarControl, metrics: MetricsRegistry, answer_timeout_s: float,
                      guarded: tuple[int, ...]) -> None:
    """``POST /signals``; ``guarded``: the codes the middleware may answer on this route."""
    from signaller.signals.parsing import parse_action, signal_from_json  # imported by name: a sibling module

    timeout_reason = f"the sidecar did not answer within {answer_timeout_s:g} s"

    @app.post(
        "/signals",
        status_code=202,
        response_model=SignalAccepted,
        responses=_errors(*guarded, *_BODY_CODES, 422, 500, 503),
        summary="Send a Debezium signal",
        openapi_extra={"requestBody": {
            "required": True,
            "content": {JSON_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/SignalRequest"}}},
        }},
    )
    async def post_signal(request: Request) -> JSONResponse:
        """Validate the signal, hand it to the capture loop and return its answer.

        415: not application/json; 413: over 1 MiB; 400: not UTF-8, not JSON or nested too deeply;
        422: JSON but not a valid signal; 400 with ``id``: rejected by the snapshot engine (unknown
        table, unsafe filter...); 503: no answer within the timeout (the signal may still be applied).
        """
        try:
            text = await read_json_text(request, MAX_SIGNAL_BYTES)
            document = _parsed_or_none(text)
            signal = signal_from_json(text, channel="http")
            _check_additional_data(document, signal.id)
            action = parse_action(signal)
        except RequestRejected as exc:
            metrics.count_signal("http", "invalid")
            return _error(exc.reason, exc.status)
        except SignalError as exc:
            metrics.count_signal("http", "invalid")
            return _error(exc.reason, 422 if document is not None else 400)
        if isinstance(action, WindowMarker):
            metrics.count_signal("http", "invalid")
            return _error(f"{signal.type} signals are written by the sidecar itself, never sent", 422)
        try:
            outcome = await _answer(control.submit(signal), answer_timeout_s)
        except TimeoutError:
            metrics.count_signal("http", "timeout")
            return _error(timeout_reason, 503)
        except SignalError as exc:
            metrics.count_signal("http", "rejected")
            return _error(exc.reason, 400, signal.id)
        except Exception as exc:
            log.exception("signal %r failed in the capture loop", signal.id)
            metrics.count_signal("http", "failed")
            return _error(f"the sidecar failed to apply the signal: {exc}", 500, signal.id)
        if not outcome.accepted:
            metrics.count_signal("http", "rejected")
            return _error(outcome.reason, 400, signal.id)
        metrics.count_signal("http", "accepted")
        return JSONResponse({"id": signal.id, "status": "accepted"}, status_code=202)


def _parsed_or_none(text: str) -> Any:
    """``text`` parsed (``RequestRejected`` if nested too deeply), or None when it is not JSON.

    A body that is not JSON is left to the signal parser, whose reason names the problem.
    """
    try:
        return parse_json(text)
    except RequestRejected as exc:
        if exc.reason == _too_deep():
            raise
        return None


def _check_additional_data(document: Any, signal_id: str) -> None:
    """``additionalData``, when present, must be an object (schemas/signal.schema.json); else 422."""
    if isinstance(document, dict) and "additionalData" in document and not isinstance(document["additionalData"],
                                                                                       dict):
        raise SignalError(f"additionalData: expected a JSON object, got {_json_kind(document['additionalData'])}; "
                          "accepted: a JSON object (read by Debezium's file channel, ignored by signaller)",
                          signal_id)


async def _answer(future: Future[SignalOutcome], timeout_s: float) -> SignalOutcome:
    # shield: a timed-out request must not cancel the loop's future (it would fail to resolve it).
    return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future)), timeout_s)


def _add_control_routes(app: FastAPI, control: SidecarControl, answer_timeout_s: float, guarded: tuple[int, ...],
                        open_codes: tuple[int, ...], metrics: MetricsRegistry) -> None:
    timeout_reason = f"the sidecar did not answer within {answer_timeout_s:g} s"

    @app.get("/snapshots", response_model=SnapshotsBody, responses=_errors(*guarded), summary="Snapshot progress")
    async def get_snapshots() -> SnapshotsBody:
        """The incremental snapshot's state: running/paused, chunk size, and each table's progress."""
        return snapshots_body(control.status())

    @app.put(
        "/snapshots/chunk-size", response_model=ChunkSize, responses=_errors(*guarded, *_BODY_CODES, 500, 503),
        summary="Change the chunk size",
        openapi_extra={"requestBody": {
            "required": True,
            "content": {JSON_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/ChunkSize"}}},
        }},
    )
    async def put_chunk_size(request: Request) -> JSONResponse:
        """Set ``incremental.snapshot.chunk.size`` (1..1000000) from the next chunk on.

        415: not application/json; 413: over 4 KiB; 400: not UTF-8, not JSON, not exactly
        ``{"chunk_size": <integer 1..1000000>}``, or refused by the engine; 503: no answer in time.
        """
        size = chunk_size_of(parse_json(await read_json_text(request, MAX_CHUNK_SIZE_BYTES)))
        try:
            outcome = await _answer(control.set_chunk_size(size), answer_timeout_s)
        except TimeoutError:
            return _error(timeout_reason, 503)
        except SignalError as exc:
            return _error(exc.reason, 400)
        except Exception as exc:
            log.exception("chunk size change to %d failed in the capture loop", size)
            return _error(f"the sidecar failed to change the chunk size: {exc}", 500)
        if not outcome.accepted:
            return _error(outcome.reason, 400)
        return JSONResponse({"chunk_size": size})

    @app.get("/health", response_model=HealthBody, responses={
        503: {"model": HealthBody, "description": "Not streaming: 'starting' or 'error'."}, **_errors(*open_codes)},
        summary="Health (no token needed; status only)")
    async def get_health() -> JSONResponse:
        """200 ``{"status": "ok"}`` while streaming; 503 ``starting`` before, or ``error``. No details:
        ``GET /health/details`` (behind the token) has them."""
        state = health_status(control.status())
        return JSONResponse({"status": state}, status_code=200 if state == "ok" else 503)

    @app.get("/health/details", response_model=HealthDetails, responses=_errors(*guarded),
             summary="Health with the capture session's details")
    async def get_health_details() -> HealthDetails:
        """Always 200: status, streaming flag, committed LSN, events published and the last error."""
        return health_details(control.status())

    @app.get("/metrics", response_class=Response, responses={
        200: {"content": {metrics.content_type: {"schema": {"type": "string"}}}}, **_errors(*guarded)},
        summary="Prometheus metrics")
    async def get_metrics() -> Response:
        """Every metric in Prometheus' text exposition format."""
        return Response(metrics.render(), media_type=metrics.content_type)


# ---------------------------------------------------------------------------------------------------------
# Serving
# ---------------------------------------------------------------------------------------------------------


class ApiServerError(TransientError):
    """The HTTP API could not start, or stopped while starting."""


class PortInUseError(ApiServerError):
    """Another process listens on the API's address already."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        super().__init__(f"cannot serve the HTTP API on {_address(host, port)}: the address is already in use "
                         f"(is another signaller running? choose another signaller.http.port)")


class ApiServer:
    """The HTTP API running in uvicorn on a daemon thread; made by ``serve``.

    ``host``/``port`` are the bound address (the real port when 0 was asked for); ``url`` its base URL.
    """

    def __init__(self, server: uvicorn.Server, sock: socket.socket, host: str) -> None:
        self._server = server
        self._socket = sock
        self.host = host
        self.port: int = sock.getsockname()[1]
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"signaller-api-{self.port}", daemon=True)

    @property
    def url(self) -> str:
        """``http://host:port`` (wildcard hosts shown as the loopback address to connect to)."""
        host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(self.host, self.host)
        return f"http://{_address(host, self.port)}"

    def start(self) -> None:
        """Start the server thread (``serve`` does it)."""
        self._thread.start()

    def _run(self) -> None:
        try:
            self._server.run(sockets=[self._socket])
        except BaseException as exc:  # uvicorn exits with SystemExit on startup failures
            self._failure = exc
            log.error("the HTTP API on %s stopped: %s", _address(self.host, self.port), exc)

    def wait_started(self, timeout: float = 10.0) -> None:
        """Block until the server accepts connections; ``ApiServerError`` if it died or took over ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive():
                raise ApiServerError(f"the HTTP API on {_address(self.host, self.port)} stopped while starting: "
                                     f"{self._failure!r}")
            if time.monotonic() > deadline:
                raise ApiServerError(f"the HTTP API on {_address(self.host, self.port)} did not start "
                                     f"within {timeout:g} s")
            time.sleep(0.01)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop accepting requests, let running ones finish (5 s at most), and join the thread. Idempotent."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout)
            if self._thread.is_alive():
                self._server.force_exit = True
                self._thread.join(timeout)
        self._socket.close()

    @property
    def running(self) -> bool:
        """True while the server thread runs."""
        return self._thread.is_alive()


def serve(app: FastAPI, host: str, port: int) -> ApiServer:
    """Bind ``host:port`` (port 0: an ephemeral port) and serve ``app`` on a daemon thread.

    Refuses (``ConfigError``) a non-loopback ``host`` unless ``app`` requires a bearer token (as
    ``create_app(token=...)`` does). Raises ``PortInUseError`` (transient) if the address is taken,
    ``ConfigError`` if it cannot be bound otherwise. uvicorn logs at warning level and installs no
    signal handlers: the sidecar's supervisor owns SIGTERM/SIGINT. Call ``wait_started`` to block
    until requests are accepted and ``stop`` to shut down.
    """
    if not is_loopback(host) and not getattr(app.state, "bearer_token_required", False):
        raise ConfigError("signaller.http.token", None,
                          f"a bearer token: required because the HTTP API would listen on {host!r}, "
                          f"which is not a loopback address")
    sock = _bind(host, port)
    config = uvicorn.Config(app, host=host, port=sock.getsockname()[1], log_level="warning",
                            timeout_graceful_shutdown=5, server_header=False)
    server = _ThreadServer(config)
    api = ApiServer(server, sock, host)
    api.start()
    return api


class _ThreadServer(uvicorn.Server):
    """uvicorn that never touches signal handlers (it is not the process's main loop)."""

    def install_signal_handlers(self) -> None:  # uvicorn < 0.29 calls this
        return None

    def capture_signals(self) -> Any:  # uvicorn >= 0.29 (a no-op off the main thread already)
        return contextlib.nullcontext()


def _bind(host: str, port: int) -> socket.socket:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise ConfigError("signaller.http.host", host, f"an address of this machine ({exc.strerror})") from exc
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortInUseError(host, port) from exc
        if exc.errno == errno.EACCES:
            raise ConfigError("signaller.http.port", port, f"a port this user may listen on ({exc.strerror})") from exc
        raise ConfigError("signaller.http.host", host,
                          f"an address this machine can listen on ({exc.strerror})") from exc
    return sock


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
