"""Every error answer of the HTTP API: ``{"error": <reason>}`` (plus the signal's ``id`` when the capture
loop rejected a signal), the documented error responses of each route, and the handlers that turn what
FastAPI/Starlette would answer itself into that body.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from signaller.errors import SignallerError

UNAUTHORIZED = "missing or wrong bearer token"
"""The 401 reason (``BearerAuth``)."""


class ErrorBody(BaseModel):
    """Every error answer. ``id`` is the signal's, when the capture loop rejected a signal."""

    error: str = Field(description="What was wrong and what is accepted.")
    id: str | None = None


ERROR_DESCRIPTIONS = {
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
BODY_CODES = (400, 413, 415)
"""Answered while reading a JSON body."""


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI ``responses`` of a route answering ``codes`` (each an ``ErrorBody``)."""
    return {code: {"model": ErrorBody, "description": ERROR_DESCRIPTIONS[code]} for code in codes}


def error_response(reason: str, status_code: int, signal_id: str | None = None,
                   headers: Mapping[str, str] | None = None) -> JSONResponse:
    """``{"error": reason}`` (with ``"id": signal_id`` when given) answered ``status_code``."""
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


def add_error_handlers(app: FastAPI) -> None:
    """Every error FastAPI/Starlette would answer itself becomes ``{"error": ...}``."""
    @app.exception_handler(RequestRejected)
    async def rejected(_request: Request, exc: RequestRejected) -> JSONResponse:
        return error_response(exc.reason, exc.status)

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> JSONResponse:
        # A bug, not bad input (every malformed request is answered 4xx above): logged with its traceback
        # by the server, answered as JSON like every other error.
        return error_response(f"internal error of the HTTP API on {request.method} {request.url.path[:200]} "
                              f"({type(exc).__name__}); it is in the sidecar's log", 500)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        headers = dict(exc.headers or {})
        method, path = request.method, request.url.path[:200]
        if exc.status_code == 404:
            reason = f"no route {method} {path!r}; accepted: {', '.join(route_list(app))}"
        elif exc.status_code == 405:
            reason = f"method {method} is not allowed on {path}; accepted: {headers.get('Allow', '')}"
        else:
            reason = str(exc.detail)
        return error_response(reason, exc.status_code, headers=headers)


def route_list(app: FastAPI) -> list[str]:
    """``METHOD /path`` of every route of ``app`` (for the 404 answer's list of what is accepted)."""
    routes = []
    for route in app.routes:
        methods = sorted(getattr(route, "methods", None) or ())
        path = getattr(route, "path", "")
        if methods and not path.startswith("/docs/"):
            routes.append(f"{'/'.join(methods)} {path}")
    return routes

