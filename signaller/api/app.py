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
import logging
from concurrent.futures import Future
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from signaller.api.bodies import chunk_size_of, json_kind, parse_json, read_json_text, too_deep_reason
from signaller.api.errors import BODY_CODES, RequestRejected, add_error_handlers, error_response, error_responses
from signaller.api.metrics import MetricsRegistry
from signaller.api.models import (
    ChunkSize,
    HealthBody,
    HealthDetails,
    SignalAccepted,
    SnapshotsBody,
    health_details,
    health_status,
    snapshots_body,
)
from signaller.api.openapi import SignallerApp
from signaller.api.security import JSON_MEDIA_TYPE, BearerAuth, CrossSiteGuard
from signaller.errors import ConfigError, SignalError, SignalNotApplied
from signaller.signals.model import SignalOutcome, WindowMarker
from signaller.snapshot.control import SidecarControl

log = logging.getLogger(__name__)

ANSWER_TIMEOUT_S = 30.0
"""How long a request waits for the capture loop to answer a signal or a chunk-size change."""
MAX_SIGNAL_BYTES = 1 << 20
"""Largest accepted ``POST /signals`` body (Debezium's signal table holds 2 KiB of data)."""
MAX_CHUNK_SIZE_BYTES = 4096
"""Largest accepted ``PUT /snapshots/chunk-size`` body (``{"chunk_size": 1000000}`` is 23 bytes)."""


def package_version() -> str:
    """The installed distribution's version (``0+unknown`` in a bare checkout)."""
    try:
        return version("signaller")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0+unknown"



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
    app = SignallerApp(
        title="signaller",
        version=package_version(),
        description="Debezium-compatible signals and incremental snapshot control of a signaller sidecar. "
                    "Every error is {\"error\": <what was wrong and what is accepted>}.",
    )
    app.state.bearer_token_required = token is not None
    if token is not None:
        app.add_middleware(BearerAuth, token=token)
    app.add_middleware(CrossSiteGuard, check_host=token is None)  # added last: runs first
    open_codes = (403,) if token is not None else (403, 421)
    guarded = (401, 403) if token is not None else open_codes
    add_error_handlers(app)
    _add_signal_route(app, control, metrics, answer_timeout_s, guarded)
    _add_control_routes(app, control, answer_timeout_s, guarded, open_codes, metrics)
    return app



def _add_signal_route(app: FastAPI, control: SidecarControl, metrics: MetricsRegistry, answer_timeout_s: float,
                      guarded: tuple[int, ...]) -> None:
    """``POST /signals``; ``guarded``: the codes the middleware may answer on this route."""
    from signaller.signals.parsing import parse_action, signal_from_json  # imported by name: a sibling module

    timeout_reason = f"the sidecar did not answer within {answer_timeout_s:g} s"

    @app.post(
        "/signals",
        status_code=202,
        response_model=SignalAccepted,
        responses=error_responses(*guarded, *BODY_CODES, 422, 500, 503),
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
        table, unsafe filter...); 503: no answer within the timeout (the signal may still be applied), or not
        applied because the capture session failed first (the reason says so: send it again).
        """
        try:
            text = await read_json_text(request, MAX_SIGNAL_BYTES)
            document = _parsed_or_none(text)
            signal = signal_from_json(text, channel="http")
            _check_additional_data(document, signal.id)
            action = parse_action(signal)
        except RequestRejected as exc:
            metrics.count_signal("http", "invalid")
            return error_response(exc.reason, exc.status)
        except SignalError as exc:
            metrics.count_signal("http", "invalid")
            return error_response(exc.reason, 422 if document is not None else 400)
        if isinstance(action, WindowMarker):
            metrics.count_signal("http", "invalid")
            return error_response(f"{signal.type} signals are written by the sidecar itself, never sent", 422)
        try:
            outcome = await _answer(control.submit(signal), answer_timeout_s)
        except TimeoutError:
            metrics.count_signal("http", "timeout")
            return error_response(timeout_reason, 503)
        except SignalNotApplied as exc:
            metrics.count_signal("http", "not_applied")
            return error_response(str(exc), 503, signal.id)
        except SignalError as exc:
            metrics.count_signal("http", "rejected")
            return error_response(exc.reason, 400, signal.id)
        except Exception as exc:
            log.exception("signal %r failed in the capture loop", signal.id)
            metrics.count_signal("http", "failed")
            return error_response(f"the sidecar failed to apply the signal: {exc}", 500, signal.id)
        if not outcome.accepted:
            metrics.count_signal("http", "rejected")
            return error_response(outcome.reason, 400, signal.id)
        metrics.count_signal("http", "accepted")
        return JSONResponse({"id": signal.id, "status": "accepted"}, status_code=202)


def _parsed_or_none(text: str) -> Any:
    """``text`` parsed (``RequestRejected`` if nested too deeply), or None when it is not JSON.

    A body that is not JSON is left to the signal parser, whose reason names the problem.
    """
    try:
        return parse_json(text)
    except RequestRejected as exc:
        if exc.reason == too_deep_reason():
            raise
        return None


def _check_additional_data(document: Any, signal_id: str) -> None:
    """``additionalData``, when present, must be an object (schemas/signal.schema.json); else 422."""
    if isinstance(document, dict) and "additionalData" in document and not isinstance(document["additionalData"],
                                                                                       dict):
        raise SignalError(f"additionalData: expected a JSON object, got {json_kind(document['additionalData'])}; "
                          "accepted: a JSON object (read by Debezium's file channel, ignored by signaller)",
                          signal_id)


async def _answer(future: Future[SignalOutcome], timeout_s: float) -> SignalOutcome:
    # shield: a timed-out request must not cancel the loop's future (it would fail to resolve it).
    return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future)), timeout_s)


def _add_control_routes(app: FastAPI, control: SidecarControl, answer_timeout_s: float, guarded: tuple[int, ...],
                        open_codes: tuple[int, ...], metrics: MetricsRegistry) -> None:
    timeout_reason = f"the sidecar did not answer within {answer_timeout_s:g} s"

    @app.get("/snapshots", response_model=SnapshotsBody, responses=error_responses(*guarded),
             summary="Snapshot progress")
    async def get_snapshots() -> SnapshotsBody:
        """The incremental snapshot's state: running/paused, chunk size, and each table's progress."""
        return snapshots_body(control.status())

    @app.put(
        "/snapshots/chunk-size", response_model=ChunkSize, responses=error_responses(*guarded, *BODY_CODES, 500, 503),
        summary="Change the chunk size",
        openapi_extra={"requestBody": {
            "required": True,
            "content": {JSON_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/ChunkSize"}}},
        }},
    )
    async def put_chunk_size(request: Request) -> JSONResponse:
        """Set ``incremental.snapshot.chunk.size`` (1..1000000) from the next chunk on.

        415: not application/json; 413: over 4 KiB; 400: not UTF-8, not JSON, not exactly
        ``{"chunk_size": <integer 1..1000000>}``, or refused by the engine; 503: no answer in time, or not applied
        (the capture session failed first: send it again).
        """
        size = chunk_size_of(parse_json(await read_json_text(request, MAX_CHUNK_SIZE_BYTES)))
        try:
            outcome = await _answer(control.set_chunk_size(size), answer_timeout_s)
        except TimeoutError:
            return error_response(timeout_reason, 503)
        except SignalNotApplied as exc:
            return error_response(str(exc), 503)
        except SignalError as exc:
            return error_response(exc.reason, 400)
        except Exception as exc:
            log.exception("chunk size change to %d failed in the capture loop", size)
            return error_response(f"the sidecar failed to change the chunk size: {exc}", 500)
        if not outcome.accepted:
            return error_response(outcome.reason, 400)
        return JSONResponse({"chunk_size": size})

    @app.get("/health", response_model=HealthBody, responses={
        503: {"model": HealthBody, "description": "Not streaming: 'starting' or 'error'."},
        **error_responses(*open_codes)},
        summary="Health (no token needed; status only)")
    async def get_health() -> JSONResponse:
        """200 ``{"status": "ok"}`` while streaming; 503 ``starting`` before, or ``error``. No details:
        ``GET /health/details`` (behind the token) has them."""
        state = health_status(control.status())
        return JSONResponse({"status": state}, status_code=200 if state == "ok" else 503)

    @app.get("/health/details", response_model=HealthDetails, responses=error_responses(*guarded),
             summary="Health with the capture session's details")
    async def get_health_details() -> HealthDetails:
        """Always 200: status, streaming flag, committed LSN, events published and the last error."""
        return health_details(control.status())

    @app.get("/metrics", response_class=Response, responses={
        200: {"content": {metrics.content_type: {"schema": {"type": "string"}}}}, **error_responses(*guarded)},
        summary="Prometheus metrics")
    async def get_metrics() -> Response:
        """Every metric in Prometheus' text exposition format."""
        return Response(metrics.render(), media_type=metrics.content_type)

