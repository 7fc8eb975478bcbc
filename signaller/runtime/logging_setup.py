"""Structured logs: one JSON object per line on stderr (``SIGNALLER_LOG_FORMAT=text`` for humans)."""

from __future__ import annotations

import logging
import os
import sys
import time

import orjson


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        body = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            body["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(body).decode()


def configure_logging(level: str | None = None) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if os.environ.get("SIGNALLER_LOG_FORMAT", "json") == "text":
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    else:
        handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel((level or os.environ.get("SIGNALLER_LOG_LEVEL", "INFO")).upper())
