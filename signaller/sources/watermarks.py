"""The text of a watermark row, shared by every source that writes watermarks into its signal table.

Debezium writes the ``data`` column of its ``snapshot-window-open``/``-close`` rows in one fixed
spelling; signaller writes the same so the signal tables of both look alike. Pure.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["debezium_metadata_text"]


def debezium_metadata_text(metadata: dict[str, Any]) -> str:
    """Debezium's watermark ``data`` text: keys in order, ``": "`` and ``", "`` spacing, nulls
    omitted (``{"openWindowTimestamp": "...", "closeWindowTimestamp": "...", ...}``)."""
    parts = [f"{orjson.dumps(k).decode()}: {orjson.dumps(v).decode()}" for k, v in metadata.items() if v is not None]
    return "{" + ", ".join(parts) + "}"
