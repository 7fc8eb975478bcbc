"""The offset record and its JSON form.

The record uses Debezium's PostgreSQL offset keys (``lsn``, ``lsn_commit``, ``txId``,
``ts_usec``) plus ``format_version`` and, while an incremental snapshot runs, ``snapshot``
(the engine's own state). ``lsn`` is the end position of the newest transaction whose events,
and all earlier ones, Kafka acknowledged: streaming resumes after it.

A source with its own offset keys (``Source.offset_keys``; MariaDB: Debezium's MySQL keys ``file``,
``pos``, ``gtids``, ``ts_sec``, ``server_id``, ...) stores them instead of the PostgreSQL ones: the
record is then ``format_version``, ``position`` (the source's integer position, see
``sources.base``), the source's keys and ``snapshot``; ``source_keys`` holds them after a load.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from signaller.errors import StateError

FORMAT_VERSION = 1


@dataclass(frozen=True)
class Offsets:
    """One offset record: the resume position (``lsn``, see the module docstring), Debezium's other offset keys, and the
    snapshot state (``SnapshotState.to_offset``), None when no snapshot runs."""

    lsn: int
    lsn_commit: int | None = None
    tx_id: int | None = None
    ts_usec: int | None = None
    snapshot: dict[str, Any] | None = field(default=None)
    source_keys: dict[str, Any] | None = field(default=None)
    """The source's own offset keys (None: the PostgreSQL keys above)."""

    def to_json(self) -> bytes:
        """The record as stored: JSON with ``format_version``, leaving out the keys that are None; ``from_json`` reads
        it back."""
        if self.source_keys is not None:
            own: dict[str, Any] = {"format_version": FORMAT_VERSION, "position": self.lsn, **self.source_keys}
            if self.snapshot is not None:
                own["snapshot"] = self.snapshot
            return orjson.dumps(own)
        body: dict[str, Any] = {"format_version": FORMAT_VERSION, "lsn": self.lsn}
        for name, value in (("lsn_commit", self.lsn_commit), ("txId", self.tx_id), ("ts_usec", self.ts_usec)):
            if value is not None:
                body[name] = value
        if self.snapshot is not None:
            body["snapshot"] = self.snapshot
        return orjson.dumps(body)

    @classmethod
    def from_json(cls, data: bytes, origin: str) -> Offsets:
        """Parse a stored record; a record of an unknown format raises ``StateError``."""
        try:
            body = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            msg = f"offsets in {origin} are not JSON: {exc}"
            raise StateError(msg) from exc
        version = body.get("format_version", 1) if isinstance(body, dict) else None
        if version == FORMAT_VERSION and "lsn" not in body and isinstance(body.get("position"), int):
            keys = {name: value for name, value in body.items()
                    if name not in ("format_version", "position", "snapshot")}
            return cls(body["position"], snapshot=body.get("snapshot"), source_keys=keys)
        if version != FORMAT_VERSION or not isinstance(body.get("lsn"), int):
            msg = f"offsets in {origin} have format {version!r}; this version reads format {FORMAT_VERSION}"
            raise StateError(msg)
        return cls(body["lsn"], body.get("lsn_commit"), body.get("txId"), body.get("ts_usec"), body.get("snapshot"))
