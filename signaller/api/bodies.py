"""Reading a JSON request body by hand, for exact reasons and limits: content type (415), size (413),
UTF-8 and JSON (400), nesting depth (400), and the ``PUT /snapshots/chunk-size`` body.

Each check raises ``RequestRejected`` with the status and a reason naming what was wrong and what is
accepted; the application's handler answers it as ``{"error": <reason>}``.
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import Request

from signaller.api.errors import RequestRejected
from signaller.api.security import require_json_content_type

MAX_JSON_DEPTH = 64
"""Deepest accepted nesting of arrays and objects in a request body (a signal needs 4)."""
MAX_CHUNK_SIZE = 1_000_000
CHUNK_SIZE_ACCEPTED = f'{{"chunk_size": <integer from 1 to {MAX_CHUNK_SIZE}>}}'


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
            raise RequestRejected(400, too_deep_reason()) from None
        raise RequestRejected(400, f"the body is not valid JSON ({exc}); accepted: one JSON object") from None
    if _depth(document) > MAX_JSON_DEPTH:
        raise RequestRejected(400, too_deep_reason())
    return document


def too_deep_reason() -> str:
    """The reason a body nested deeper than ``MAX_JSON_DEPTH`` is refused with."""
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
        raise RequestRejected(400, f"body: expected a JSON object, got {json_kind(document)}; "
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
        raise RequestRejected(400, f"chunk_size: expected an integer, got {json_kind(value)}; "
                                   f"accepted: {CHUNK_SIZE_ACCEPTED}")
    if not 1 <= value <= MAX_CHUNK_SIZE:
        shown = repr(value) if len(repr(value)) <= 30 else repr(value)[:27] + "..."
        raise RequestRejected(400, f"chunk_size: {shown} is out of range; accepted: {CHUNK_SIZE_ACCEPTED}")
    return int(value)


def json_kind(value: Any) -> str:
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

