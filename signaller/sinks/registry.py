"""A client of a schema registry's Confluent-compatible REST API (Confluent Schema Registry, Apicurio's
``/apis/ccompat/v7``, Karapace): register a schema under a subject, fetch a schema by id, read and set
compatibility.

What it promises:

* ``register`` returns the registry's global id of the schema under that subject; the id is cached per
  (subject, schema text), so a schema already registered by this client costs no request. Registering
  the same schema again (here or after a restart) returns the same id: the registry deduplicates.
* ``schema_by_id`` returns the schema text the registry stores for an id, cached per id (ids never change
  meaning, so the cache never needs invalidating).
* A schema the registry refuses as incompatible raises ``IncompatibleSchemaError`` naming the subject and
  the registry's reason (terminal: a person must change the schema or the subject's compatibility).
  A registry that cannot be reached, times out or answers 5xx/408/429 raises ``RegistryUnavailableError``
  (transient: retry with backoff, nothing is registered twice). Any other refusal (bad schema, unknown
  id, authentication) raises ``RegistryRequestError`` (terminal).

The client holds no connection between calls and no state beyond its caches: after a restart of either
side the caches refill from the registry. It may be shared between threads; two threads missing the
cache at once both ask the registry, which answers both with the same id.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, TypeVar
from urllib.parse import quote

from signaller.errors import SinkError, TerminalError, TransientError

_T = TypeVar("_T")
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
TRANSIENT_STATUSES = frozenset({408, 429})
"""Besides every 5xx: request timeout and rate limiting are worth retrying."""


class SchemaRegistryError(SinkError):
    """The schema registry refused a request or could not be reached (see the subclasses)."""


class RegistryUnavailableError(SchemaRegistryError, TransientError):
    """The registry could not be reached, timed out, or answered 5xx, 408 or 429: retry later."""


class RegistryRequestError(SchemaRegistryError, TerminalError):
    """The registry refused the request for good (invalid schema, unknown id or subject, authentication).

    ``status`` is the HTTP status, ``error_code`` the registry's own code (Confluent's ``error_code``,
    e.g. 40403 for an unknown schema id) when it sent one, ``reason`` its message.
    """

    def __init__(self, what: str, status: int, error_code: int | None, reason: str) -> None:
        self.status = status
        self.error_code = error_code
        self.reason = reason
        code = f", error {error_code}" if error_code is not None else ""
        super().__init__(f"schema registry refused {what} (HTTP {status}{code}): {reason}")


class IncompatibleSchemaError(SchemaRegistryError, TerminalError):
    """The registry refused a schema as incompatible with the subject's earlier versions (HTTP 409).

    ``subject`` names the subject and ``reason`` is the registry's explanation, verbatim; ``table``
    (``schema.table``) the captured table whose new schema it is, when the caller knows it.
    """

    def __init__(self, subject: str, reason: str, table: str | None = None) -> None:
        self.subject = subject
        self.reason = reason
        self.table = table
        of_table = f" (table {table})" if table is not None else ""
        super().__init__(
            f"schema registry refused the new schema of subject {subject!r}{of_table} as incompatible "
            f"with its earlier versions: {reason}"
        )


class Compatibility(StrEnum):
    """The compatibility levels of the Confluent API (``NONE`` lets any change through)."""

    NONE = "NONE"
    BACKWARD = "BACKWARD"
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
    FORWARD = "FORWARD"
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL = "FULL"
    FULL_TRANSITIVE = "FULL_TRANSITIVE"


@dataclass(frozen=True)
class HttpResponse:
    """What a transport returns: the status code and the body as bytes (for every status, 4xx/5xx too)."""

    status: int
    body: bytes


class Transport(Protocol):
    """Sends one HTTP request; returns the response whatever its status.

    Raises ``OSError`` (``urllib.error.URLError`` and ``TimeoutError`` are ones) when no response
    arrives: connection refused, DNS failure, timeout.
    """

    def __call__(
        self, method: str, url: str, body: bytes | None, headers: Mapping[str, str], timeout_s: float
    ) -> HttpResponse:
        """Send the request; see the class docstring."""
        ...


def urllib_transport(
    method: str, url: str, body: bytes | None, headers: Mapping[str, str], timeout_s: float
) -> HttpResponse:
    """The default transport: the standard library's ``urllib`` (a new connection per request)."""
    request = urllib.request.Request(url, data=body, headers=dict(headers), method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return HttpResponse(response.status, response.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return HttpResponse(exc.code, exc.read())


@dataclass(frozen=True)
class _Reply:
    status: int
    payload: object


class SchemaRegistryClient:
    """A client of one registry's Confluent-compatible API at ``url`` (e.g.
    ``http://127.0.0.1:18081/apis/ccompat/v7``), with the caches the module docstring describes.

    ``user_info`` (``"user:password"``, as Confluent's ``basic.auth.user.info``) adds HTTP basic
    authentication; ``timeout_s`` bounds each request; ``transport`` replaces the HTTP layer (tests).
    """

    def __init__(
        self,
        url: str,
        *,
        user_info: str | None = None,
        timeout_s: float = 10.0,
        transport: Transport = urllib_transport,
    ) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self._transport = transport
        self._headers = {"Accept": CONTENT_TYPE, "Content-Type": CONTENT_TYPE}
        if user_info is not None:
            token = base64.b64encode(user_info.encode()).decode("ascii")
            self._headers["Authorization"] = f"Basic {token}"
        self._ids: dict[tuple[str, str], int] = {}
        self._schemas: dict[int, str] = {}

    def register(self, subject: str, schema: str, schema_type: str = "AVRO") -> int:
        """The id of ``schema`` (its JSON text) under ``subject``, registering it as a new version if the
        subject does not have it yet. Raises ``IncompatibleSchemaError`` if the subject's compatibility
        refuses it."""
        key = (subject, schema)
        cached = self._ids.get(key)
        if cached is not None:
            return cached
        body: dict[str, object] = {"schema": schema}
        if schema_type != "AVRO":
            body["schemaType"] = schema_type
        what = f"the schema of subject {subject!r}"
        reply = self._request("POST", f"/subjects/{_segment(subject)}/versions", what, body, subject=subject)
        schema_id = _field(reply.payload, "id", int, what)
        self._ids[key] = schema_id
        return schema_id

    def schema_by_id(self, schema_id: int) -> str:
        """The schema text the registry stores under ``schema_id``. Raises ``RegistryRequestError``
        (status 404) for an id the registry does not know."""
        cached = self._schemas.get(schema_id)
        if cached is not None:
            return cached
        what = f"schema id {schema_id}"
        reply = self._request("GET", f"/schemas/ids/{schema_id}", what)
        schema = _field(reply.payload, "schema", str, what)
        self._schemas[schema_id] = schema
        return schema

    def set_compatibility(self, level: Compatibility, subject: str | None = None) -> Compatibility:
        """Set the compatibility of ``subject`` (or the registry's global default); returns the level the
        registry confirms."""
        path, what = self._config_target(subject)
        reply = self._request("PUT", path, f"setting the compatibility of {what}", {"compatibility": level.value})
        return _level(reply.payload, f"the compatibility of {what}")

    def compatibility(self, subject: str | None = None) -> Compatibility:
        """The compatibility in force for ``subject`` (its own, else the global default), or the global
        default when ``subject`` is None."""
        path, what = self._config_target(subject)
        if subject is not None:
            path += "?defaultToGlobal=true"
        reply = self._request("GET", path, f"the compatibility of {what}")
        return _level(reply.payload, f"the compatibility of {what}")

    @staticmethod
    def _config_target(subject: str | None) -> tuple[str, str]:
        if subject is None:
            return "/config", "the registry"
        return f"/config/{_segment(subject)}", f"subject {subject!r}"

    def _request(
        self, method: str, path: str, what: str, body: object | None = None, *, subject: str | None = None
    ) -> _Reply:
        data = None if body is None else json.dumps(body).encode()
        try:
            response = self._transport(method, self.url + path, data, self._headers, self.timeout_s)
        except OSError as exc:
            msg = f"schema registry at {self.url} unreachable for {what}: {exc}"
            raise RegistryUnavailableError(msg) from exc
        payload = _json_or_text(response.body)
        if 200 <= response.status < 300:
            return _Reply(response.status, payload)
        error_code, reason = _error_of(payload)
        if response.status >= 500 or response.status in TRANSIENT_STATUSES:
            msg = f"schema registry at {self.url} failed {what} (HTTP {response.status}): {reason}"
            raise RegistryUnavailableError(msg)
        if response.status == 409 and subject is not None:
            raise IncompatibleSchemaError(subject, reason)
        raise RegistryRequestError(what, response.status, error_code, reason)


def _segment(value: str) -> str:
    """``value`` as one URL path segment (a subject may hold ``/``, ``?``, ``%``...)."""
    return quote(value, safe="")


def _json_or_text(body: bytes) -> object:
    try:
        return json.loads(body) if body else None
    except ValueError:
        return body.decode("utf-8", errors="replace")


def _error_of(payload: object) -> tuple[int | None, str]:
    """The registry's ``error_code`` and ``message`` (Confluent's error body), or the raw body as reason."""
    if isinstance(payload, dict):
        code = payload.get("error_code")
        message = payload.get("message")
        if isinstance(message, str):
            return (code if isinstance(code, int) else None), message
    if payload is None:
        return None, "(empty response)"
    return None, payload if isinstance(payload, str) else json.dumps(payload)


def _field(payload: object, name: str, kind: type[_T], what: str) -> _T:
    value = payload.get(name) if isinstance(payload, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool):
        msg = f"schema registry answered {what} without the {kind.__name__} field {name!r}: {payload!r}"
        raise RegistryRequestError(what, 200, None, msg)
    return value


def _level(payload: object, what: str) -> Compatibility:
    """Confluent answers PUT with ``compatibility`` and GET with ``compatibilityLevel``."""
    raw = payload.get("compatibilityLevel", payload.get("compatibility")) if isinstance(payload, dict) else None
    try:
        return Compatibility(str(raw))
    except ValueError:
        msg = f"not a compatibility level: {payload!r}"
        raise RegistryRequestError(what, 200, None, msg) from None
