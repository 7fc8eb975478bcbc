"""Bytes per record and serializer CPU, JSON (schemas enabled) vs Avro (Confluent wire format), for the apply
benchmark's table (``bench/apply.py``: ``id bigint PRIMARY KEY, v int NOT NULL, note text, stamp_us bigint``).

Run: ``python -m bench.avro_size [records]`` (default 100,000). Streamed ``u`` events of one transaction
each go through the sidecar's one entry point (``serialize``), as the dispatcher calls it; the Avro schema
ids come from an in-memory stand-in (no registry: registration happens once per table version, off this
path). Prints one JSON object: mean key+value bytes per record and CPU seconds per 100k records.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from typing import Any

from bench.apply import COLUMNS, TABLE
from signaller.model import ChangeEvent, Op, TableId, TableSchema
from signaller.sources.postgres.codecs import TypeModes, codec_for
from signaller.wire.avro_serializer import AvroRecordSerializer
from signaller.wire.serializer import RecordSerializer


@dataclass(frozen=True)
class _Tx:
    xid: int
    commit_ts_us: int
    last_commit_lsn: int | None


@dataclass(frozen=True)
class _Change:
    op: Op
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    lsn: int
    tx: _Tx

    @property
    def event(self) -> ChangeEvent:
        raise AssertionError("streamed changes take the fast path")


class _Ids:
    def id_for(self, topic: str, *, key: bool, schema: str, table: str | None) -> int:
        return 1 if key else 2


def _changes(count: int) -> list[_Change]:
    tx = _Tx(1000, 1_700_000_000_000_000, 24_000_000)
    return [_Change(Op.UPDATE, None, {"id": n, "v": n % 1000, "note": f"upd {n}", "stamp_us": 1_700_000_000 + n},
                    24_000_064 + 64 * n, tx) for n in range(count)]


def measure(count: int) -> dict[str, Any]:
    """Bytes per record and CPU seconds per 100k records for both converters."""
    table = TableSchema(TableId("public", TABLE), COLUMNS, key=("id",))
    codecs = {c.name: codec_for(c, TypeModes()) for c in COLUMNS}
    serializers = {
        "json": RecordSerializer(topic_prefix="bench", database="inventory").table(table, codecs),
        "avro": AvroRecordSerializer(topic_prefix="bench", database="inventory", ids=_Ids(),
                                     topic_for=lambda t: f"bench.{t.schema}.{t.table}", heartbeat_topic="hb",
                                     transaction_topic="tx", notification_topic=None).table(table, codecs),
    }
    changes = _changes(count)
    out: dict[str, Any] = {"records": count}
    for name, serializer in serializers.items():
        total = 0
        start = time.process_time()
        for change in changes:
            key, value = serializer.serialize(change, ts_us_now=1_700_000_000_100_000)  # type: ignore[arg-type]
            total += len(key or b"") + len(value)
        cpu = time.process_time() - start
        out[f"{name}_bytes_per_record"] = round(total / count, 1)
        out[f"{name}_cpu_s_per_100k"] = round(cpu * 100_000 / count, 3)
    return out


if __name__ == "__main__":
    print(json.dumps(measure(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)))
