"""The sidecar's HTTP API: signals in; snapshot progress, health and metrics out.

``create_app`` builds the FastAPI application over a ``SidecarControl`` (the thread-safe queue to the
capture loop) and a ``MetricsRegistry``; ``serve`` runs it with uvicorn on a daemon thread.

Routes (every answer is JSON except ``/metrics`` and ``/docs``; every error is ``{"error": <reason>}``):

* ``POST /signals``: a Debezium signal ``{"id", "type", "data"}``, as the ``kafka`` and ``file``
  channels take it. It is checked by ``signals.parsing`` (400 for a body that is not JSON, 422 for
  JSON that is not a valid signal, with the parser's reason), then handed to the capture loop, which
  answers: 202 ``{"id", "status": "accepted"}``, or 400 ``{"error", "id"}`` with the engine's reason
  (unknown table, unsafe filter...). No answer within 30 s: 503 (the signal may still be applied).
* ``GET /snapshots``: the incremental snapshot's progress, table by table.
* ``PUT /snapshots/chunk-size``: ``{"chunk_size": 1..1000000}``, applied from the next chunk.
* ``GET /health``: 200 while streaming, else 503 with ``status`` ``starting`` or ``error``.
* ``GET /metrics``: Prometheus text exposition.
* ``GET /openapi.json``, ``GET /docs``: FastAPI's defaults.

With a token, every route but ``/health`` requires ``Authorization: Bearer <token>`` (compared in
constant time), else 401. Without one there is no authentication, which ``serve`` only allows on a
loopback address.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hmac
import json
import logging
import socket
import threading
import time
from concurrent.futures import Future
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any, Literal

import uvicorn
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from signaller.api.metrics import MetricsRegistry
from signaller.config.build import is_loopback
from signaller.errors import ConfigError, SignalError, TransientError
from signaller.model.positions import format_lsn
from signaller.signals.model import SignalOutcome, WindowMarker
from signaller.snapshot.control import SidecarControl, SidecarStatus, TableProgress, TableState

log = logging.getLogger(__name__)

ANSWER_TIMEOUT_S = 30.0
"""How long a request waits for the capture loop to answer a signal or a chunk-size change."""
MAX_SIGNAL_BYTES = 1 << 20
"""Largest accepted ``POST /signals`` body (Debezium's signal table holds 2 KiB of data)."""
MAX_CHUNK_SIZE = 1_000_000
UNAUTHORIZED = "missing or wrong bearer token"
OPEN_PATHS = frozenset({"/health"})
"""Routes that never require the bearer token (probes of orchestrators carry none)."""


def _package_version() -> str:
    try:
        return version("signaller")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0+unknown"


# ---------------------------------------------------------------------------------------------------------
# Models: they document the API (OpenAPI at /openapi.json, /docs); the answers are built from them.
# ---------------------------------------------------------------------------------------------------------


_NOT_BLANK = "\\S"
_SNAPSHOT_TYPE = "^([Ii][Nn][Cc][Rr][Ee][Mm][Ee][Nn][Tt][Aa][Ll]|[Bb][Ll][Oo][Cc][Kk][Ii][Nn][Gg])$"
_SNAPSHOT_TYPE_DOC = "'incremental' (the default) or 'blocking', in any letter case."
_COLLECTION_DOC = "Regular expressions full-matched against 'schema.table' (case-sensitive)."


class AdditionalCondition(BaseModel):
    """One entry of ``additional-conditions`` in ``execute-snapshot`` data."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    data_collection: str = Field(
        alias="data-collection", min_length=1, pattern=_NOT_BLANK,
        description="Regular expression full-matched against 'schema.table', case-insensitively "
                    "(a literal table id for blocking snapshots).",
        examples=["public\\.orders"],
    )
    filter: str = Field(
        min_length=1, pattern=_NOT_BLANK,
        description="A boolean SQL expression over the table's columns, ANDed into the chunk queries.",
        examples=["color = 'blue' AND qty > 10"],
    )


class ExecuteSnapshotData(BaseModel):
    """``data`` of ``execute-snapshot``."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    data_collections: list[Annotated[str, Field(min_length=1, pattern=_NOT_BLANK)]] = Field(
        alias="data-collections", min_length=1, description=_COLLECTION_DOC, examples=[["public\\.orders"]])
    type: str | None = Field(None, pattern=_SNAPSHOT_TYPE, description=_SNAPSHOT_TYPE_DOC)
    additional_conditions: list[AdditionalCondition] | None = Field(
        None, alias="additional-conditions",
        description="Per-table filters: for each table, the first whose data-collection matches applies.")
    surrogate_key: str | None = Field(
        None, alias="surrogate-key", min_length=1, pattern=_NOT_BLANK,
        description="One unique column used instead of the primary key (incremental snapshots only).")


class StopSnapshotData(BaseModel):
    """``data`` of ``stop-snapshot``: absent or empty ``data-collections`` stops everything."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    data_collections: list[Annotated[str, Field(min_length=1, pattern=_NOT_BLANK)]] | None = Field(
        None, alias="data-collections", description=_COLLECTION_DOC)
    type: str | None = Field(None, pattern=_SNAPSHOT_TYPE, description=_SNAPSHOT_TYPE_DOC)


class LogData(BaseModel):
    """``data`` of ``log``."""

    message: str = Field(description="Written to the sidecar's log at INFO ('{}' becomes the current offsets).")


class SignalRequest(BaseModel):
    """A Debezium signal, as ``schemas/signal.schema.json`` describes it (``data`` is an object).

    ``data`` depends on ``type``: ``ExecuteSnapshotData``, ``StopSnapshotData``, ``LogData``, or any
    object (``{}``) for ``pause-snapshot`` and ``resume-snapshot``.
    """

    model_config = ConfigDict(populate_by_name=True, json_schema_extra={"examples": [
        {"id": "req-42", "type": "execute-snapshot",
         "data": {"data-collections": ["public\\.orders"], "type": "incremental"}},
        {"id": "req-43", "type": "stop-snapshot", "data": {"type": "incremental"}},
        {"id": "req-44", "type": "pause-snapshot", "data": {}},
    ]})

    id: str = Field(min_length=1, pattern=_NOT_BLANK,
                    description="Chosen by the sender (usually a UUID); for execute-snapshot it becomes the "
                                "notification correlation id.")
    type: Literal["execute-snapshot", "stop-snapshot", "pause-snapshot", "resume-snapshot", "log"] = Field(
        description="The action (case-sensitive).")
    data: ExecuteSnapshotData | StopSnapshotData | LogData | dict[str, Any] = Field(
        description="The action's parameters: an object ('{}' when the action takes none), not a JSON string.")
    additional_data: dict[str, Any] | None = Field(
        None, alias="additionalData", description="Read by Debezium's file channel; ignored by signaller.")


class SignalAccepted(BaseModel):
    """The capture loop accepted (and applied) the signal."""

    id: str
    status: Literal["accepted"] = "accepted"


class ErrorBody(BaseModel):
    """Every error answer. ``id`` is the signal's, when the capture loop rejected a signal."""

    error: str
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


class HealthBody(BaseModel):
    """Liveness and readiness: ``ok`` (200) while streaming, else ``starting`` or ``error`` (503)."""

    status: Literal["ok", "starting", "error"]
    streaming: bool
    committed_lsn: str = Field(description="PostgreSQL's text form, e.g. '0/16B3748'.")
    events: int
    last_error: str | None = None


_DOC_ONLY_MODELS: tuple[type[BaseModel], ...] = (SignalRequest,)
"""Request bodies read by hand (for the parser's exact reasons), added to the OpenAPI components."""


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    descriptions = {
        400: "Rejected: the reason is in 'error'.",
        401: f"Authorization: Bearer <token> is required ('{UNAUTHORIZED}').",
        413: "Body too large.",
        422: "Not a valid signal: the parser's reason is in 'error'.",
        500: "The capture loop failed while applying the request.",
        503: "The capture loop did not answer in time.",
    }
    return {code: {"model": ErrorBody, "description": descriptions[code]} for code in codes}


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


def health_body(status: SidecarStatus) -> HealthBody:
    """``ok`` while streaming; otherwise ``error`` if the loop published an error, else ``starting``."""
    state: Literal["ok", "starting", "error"] = (
        "ok" if status.streaming else "error" if status.last_error else "starting")
    return HealthBody(status=state, streaming=status.streaming, committed_lsn=format_lsn(status.committed_lsn),
                      events=status.events, last_error=status.last_error)


def _error(reason: str, status_code: int, signal_id: str | None = None) -> JSONResponse:
    body: dict[str, str] = {"error": reason}
    if signal_id is not None:
        body["id"] = signal_id
    return JSONResponse(body, status_code=status_code)


# ---------------------------------------------------------------------------------------------------------
# Authentication
# ---------------------------------------------------------------------------------------------------------


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
        response = JSONResponse({"error": UNAUTHORIZED}, status_code=401,
                                headers={"WWW-Authenticate": 'Bearer realm="signaller"'})
        await response(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        header = Headers(scope=scope).get("authorization", "")
        scheme, _, credentials = header.partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(credentials.strip().encode(), self._token)


# ---------------------------------------------------------------------------------------------------------
# The application
# ---------------------------------------------------------------------------------------------------------


class _SignallerApp(FastAPI):
    """FastAPI whose OpenAPI also describes the request bodies the routes parse by hand."""

    def openapi(self) -> dict[str, Any]:
        if self.openapi_schema is None:
            schema = super().openapi()
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for model in _DOC_ONLY_MODELS:
                model_schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
                components.update(model_schema.pop("$defs", {}))
                components[model.__name__] = model_schema
            # Validation errors are answered 400 {"error": ...} (see create_app), not FastAPI's 422 list.
            for operations in schema.get("paths", {}).values():
                for operation in operations.values():
                    default = operation.get("responses", {}).get("422", {})
                    if "HTTPValidationError" in json.dumps(default):
                        del operation["responses"]["422"]
            for name in ("HTTPValidationError", "ValidationError"):
                components.pop(name, None)
        return self.openapi_schema or {}


def create_app(
    control: SidecarControl,
    *,
    token: str | None,
    metrics: MetricsRegistry,
    answer_timeout_s: float = ANSWER_TIMEOUT_S,
) -> FastAPI:
    """The HTTP API over ``control`` (see the module docstring for the routes).

    ``token``: the bearer token every route but ``/health`` requires; None disables authentication
    (only safe on loopback, which ``serve`` enforces); an empty token is refused. ``metrics`` is
    rendered by ``GET /metrics`` and counts the HTTP channel's signals
    (``signaller_signals_total{channel="http"}``). ``answer_timeout_s`` bounds the wait for the
    capture loop's answer.
    """
    from signaller.signals.parsing import parse_action, signal_from_json  # imported by name: a sibling module

    if token is not None and not token:
        raise ConfigError("signaller.http.token", "", "a non-empty bearer token (or none, on loopback only)")
    app = _SignallerApp(
        title="signaller",
        version=_package_version(),
        description="Debezium-compatible signals and incremental snapshot control of a signaller sidecar.",
    )
    app.state.bearer_token_required = token is not None
    if token is not None:
        app.add_middleware(BearerAuth, token=token)

    async def answer(future: Future[SignalOutcome]) -> SignalOutcome:
        # shield: a timed-out request must not cancel the loop's future (it would fail to resolve it).
        return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future)), answer_timeout_s)

    timeout_reason = f"the sidecar did not answer within {answer_timeout_s:g} s"

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(_validation_reason(exc), 400)

    @app.post(
        "/signals",
        status_code=202,
        response_model=SignalAccepted,
        responses=_errors(400, 401, 413, 422, 500, 503),
        summary="Send a Debezium signal",
        openapi_extra={"requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SignalRequest"}}},
        }},
    )
    async def post_signal(request: Request) -> JSONResponse:
        """Validate the signal, hand it to the capture loop and return its answer.

        400: not JSON (or not UTF-8); 422: JSON but not a valid signal; 400 with ``id``: rejected by
        the snapshot engine; 503: no answer within the timeout (the signal may still be applied).
        """
        raw = await _read_limited(request, MAX_SIGNAL_BYTES)
        if raw is None:
            metrics.count_signal("http", "invalid")
            return _error(f"the signal is larger than {MAX_SIGNAL_BYTES} bytes", 413)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            metrics.count_signal("http", "invalid")
            return _error("the body is not UTF-8 text", 400)
        try:
            signal = signal_from_json(text, channel="http")
            action = parse_action(signal)
        except SignalError as exc:
            metrics.count_signal("http", "invalid")
            return _error(exc.reason, 400 if not _is_json(text) else 422)
        if isinstance(action, WindowMarker):
            metrics.count_signal("http", "invalid")
            return _error(f"{signal.type} signals are written by the sidecar itself, never sent", 422)
        try:
            outcome = await answer(control.submit(signal))
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

    @app.get("/snapshots", response_model=SnapshotsBody, responses=_errors(401), summary="Snapshot progress")
    async def get_snapshots() -> SnapshotsBody:
        """The incremental snapshot's state: running/paused, chunk size, and each table's progress."""
        return snapshots_body(control.status())

    @app.put("/snapshots/chunk-size", response_model=ChunkSize, responses=_errors(400, 401, 500, 503),
             summary="Change the chunk size")
    async def put_chunk_size(body: ChunkSize) -> JSONResponse:
        """Set ``incremental.snapshot.chunk.size`` (1..1000000) from the next chunk on."""
        try:
            outcome = await answer(control.set_chunk_size(body.chunk_size))
        except TimeoutError:
            return _error(timeout_reason, 503)
        except SignalError as exc:
            return _error(exc.reason, 400)
        except Exception as exc:
            log.exception("chunk size change to %d failed in the capture loop", body.chunk_size)
            return _error(f"the sidecar failed to change the chunk size: {exc}", 500)
        if not outcome.accepted:
            return _error(outcome.reason, 400)
        return JSONResponse({"chunk_size": body.chunk_size})

    @app.get("/health", response_model=HealthBody, responses={503: {"model": HealthBody}}, summary="Health")
    async def get_health() -> JSONResponse:
        """200 ``ok`` while streaming changes; 503 ``starting`` before, or ``error`` with ``last_error``."""
        body = health_body(control.status())
        return JSONResponse(body.model_dump(), status_code=200 if body.status == "ok" else 503)

    @app.get("/metrics", response_class=Response, responses={200: {"content": {metrics.content_type: {}}}},
             summary="Prometheus metrics")
    async def get_metrics() -> Response:
        """Every metric in Prometheus' text exposition format."""
        return Response(metrics.render(), media_type=metrics.content_type)

    return app


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


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _validation_reason(exc: RequestValidationError) -> str:
    """FastAPI's validation errors as one line: ``chunk_size: Input should be ...; ...``."""
    parts = []
    for error in exc.errors():
        location = ".".join(str(part) for part in error.get("loc", ())[1:]) or "body"
        parts.append(f"{location}: {error.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


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
