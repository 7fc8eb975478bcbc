"""The HTTP API's defences, as ASGI middleware that answers before any route runs.

``CrossSiteGuard`` refuses what a web page could make the operator's browser send (foreign ``Host``
without a token, foreign ``Origin``, cross-site ``Sec-Fetch-Site``); ``BearerAuth`` requires the
bearer token; ``require_json_content_type`` refuses bodies that are not ``application/json`` (an HTML
form or a ``no-cors`` fetch cannot send that type). The order and the answers are described in
``signaller.api.app``'s docstring.
"""

from __future__ import annotations

import hmac
from urllib.parse import urlsplit

from fastapi.responses import JSONResponse
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from signaller.api.errors import UNAUTHORIZED, RequestRejected, error_response
from signaller.config.build import is_loopback

OPEN_PATHS = frozenset({"/health"})
"""Routes that never require the bearer token (probes of orchestrators carry none)."""
JSON_MEDIA_TYPE = "application/json"
SAFE_FETCH_SITES = frozenset({"same-origin", "none"})
"""``Sec-Fetch-Site`` values a browser sends for the API's own pages or a typed URL."""
LOOPBACK_HOSTS_DOC = "localhost, 127.0.0.1 (any 127.0.0.0/8 address) or [::1], with any port"


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
        """Refuse a cross-site HTTP request with its reason (421 or 403); pass every other request on unchanged."""
        if scope["type"] == "http":
            refusal = self._refusal(Headers(scope=scope), scope.get("scheme", "http"))
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _refusal(self, headers: Headers, scheme: str) -> JSONResponse | None:
        host_header = headers.get("host", "")
        if self._check_host and host_header and not is_loopback(_split_host(host_header)[0]):
            return error_response(
                f"Host {host_header[:100]!r} is not a loopback address; accepted: {LOOPBACK_HOSTS_DOC} "
                "(this API has no bearer token, so it answers only requests addressed to a loopback "
                "name, a defence against DNS rebinding; set signaller.http.token to serve other names)", 421)
        origin = headers.get("origin")
        if origin is not None and not self._same_origin(origin, host_header, scheme):
            return error_response(
                f"cross-site request refused: Origin {origin[:100]!r} is not this API's origin; "
                f"accepted: no Origin header, or the API's own origin (http(s)://{host_header[:100]})", 403)
        fetch_site = headers.get("sec-fetch-site")
        if fetch_site is not None and fetch_site.strip().lower() not in SAFE_FETCH_SITES:
            return error_response(
                f"cross-site request refused: Sec-Fetch-Site {fetch_site[:40]!r}; accepted: no "
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
        """Pass the request on when it is not HTTP, its path is open or its bearer token is right; else answer 401
        without running the route."""
        if scope["type"] != "http" or scope["path"] in self._open_paths or self._authorized(scope):
            await self.app(scope, receive, send)
            return
        response = error_response(UNAUTHORIZED, 401, headers={"WWW-Authenticate": 'Bearer realm="signaller"'})
        await response(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        header = Headers(scope=scope).get("authorization", "")
        scheme, _, credentials = header.partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(credentials.strip().encode("utf-8", "surrogateescape"), self._token)



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

