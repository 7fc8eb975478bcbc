"""Structured logs: one JSON object per line on stderr (``SIGNALLER_LOG_FORMAT=text`` for humans).

Every line passes through ``redact``: the values of the loaded configuration's secrets
(``SignallerConfig.secret_values``, registered with ``redact_secrets``) are replaced by ``********``
wherever they appear, whichever library wrote the line (a driver echoing a connection string, a client
logging its settings). Bad ``SIGNALLER_LOG_LEVEL``/``SIGNALLER_LOG_FORMAT`` values are ``ConfigError``s.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterable

import orjson

from signaller.config import MASK
from signaller.errors import ConfigError

_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_FORMATS = ("json", "text")
_MIN_REDACTED = 4
"""Shorter secret values are not searched for: masking every ``ab`` in every line would garble the logs."""
_secrets: set[str] = set()


def redact_secrets(values: Iterable[str]) -> None:
    """Mask ``values`` (secrets of at least four characters) in every log line from now on."""
    _secrets.update(value for value in values if len(value) >= _MIN_REDACTED)


def redact(text: str) -> str:
    """``text`` with every registered secret replaced by ``MASK`` (longest first)."""
    for secret in sorted(_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    return text


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ts, level, logger, msg (and exc), secrets redacted."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line of JSON, secrets masked and lone surrogates escaped."""
        body = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": redact(record.getMessage()),
        }
        if record.exc_info:
            body["exc"] = redact(self.formatException(record.exc_info))
        return orjson.dumps({key: _encodable_text(value) for key, value in body.items()}).decode()


class TextFormatter(logging.Formatter):
    """The classic one-line text format, secrets redacted."""

    def format(self, record: logging.LogRecord) -> str:
        """The record in the configured text format, secrets masked and lone surrogates escaped."""
        return _encodable_text(redact(super().format(record)))


def _encodable_text(text: str) -> str:
    """``text`` if it is valid UTF-8 material, else with lone surrogates escaped (orjson refuses them)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


class _Handler(logging.StreamHandler):  # type: ignore[type-arg]
    """stderr; a record that cannot be written is reported in one line, never with its arguments."""

    def handleError(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):  # the log itself is broken: nothing left to tell
            self.stream.write(f"(a log record from {record.name} could not be written)\n")


def configure_logging(level: str | None = None) -> None:
    """Log to stderr at ``level`` (else ``SIGNALLER_LOG_LEVEL``, default INFO) in ``SIGNALLER_LOG_FORMAT``.

    Raises ``ConfigError`` naming the variable, its value and the accepted values if either is not one of
    the known levels (any case) or formats.
    """
    origin = "argument" if level is not None else "env:SIGNALLER_LOG_LEVEL"
    chosen = (level or os.environ.get("SIGNALLER_LOG_LEVEL", "INFO")).strip().upper()
    if chosen not in _LEVELS:
        raise ConfigError("SIGNALLER_LOG_LEVEL", chosen, f"one of {', '.join(_LEVELS)}", origin)
    log_format = os.environ.get("SIGNALLER_LOG_FORMAT", "json").strip().lower()
    if log_format not in _FORMATS:
        raise ConfigError("SIGNALLER_LOG_FORMAT", log_format, "json or text", "env:SIGNALLER_LOG_FORMAT")
    handler = _Handler(sys.stderr)
    if log_format == "text":
        handler.setFormatter(TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    else:
        handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(chosen)
