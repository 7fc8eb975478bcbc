"""kill -9 of the apply job while it is applying a batch, then a restart from the checkpoint.

The job runs as its own process (``python -m spark_jobs.apply_changes --config FILE``, processing
time trigger, small batches, a partitioned target and tombstone retention 0). It is SIGKILLed
while a batch is in flight (the batch's offsets are in the checkpoint, its commit is not),
restarted, and must converge to the source state; the replayed batch must not apply anything
twice. With retention 0 the tombstones are collected in the batch that wrote them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from devtools import StackSettings
from devtools.spark import jars_dir
from signaller.model import Column
from tests.kafka_helpers import create_topic, produce
from tests.spark.cdc_events import SourceTable
from tests.spark.conftest import FAST_START

pytestmark = pytest.mark.spark

REPO = Path(__file__).parents[2]
KEYS = 20


def _events(table: SourceTable) -> tuple[list[tuple[bytes | None, bytes | None]], dict[int, tuple[int, str]]]:
    """Creates, updates, deletes and re-creates over KEYS keys; the expected final state."""
    records: list[tuple[bytes | None, bytes | None]] = []
    state: dict[int, tuple[int, str]] = {}
    lsn = 1000
    for rnd in range(4):
        for key in range(KEYS):
            lsn += 10
            row = {"id": str(key), "bucket": str(key % 3), "v": f"r{rnd}-{key}"}
            if key not in state:
                records.append(table.event("c", lsn - 5, lsn, after=row))
                state[key] = (key % 3, row["v"])
            elif (key + rnd) % 4 == 0:
                records.append(table.event("d", lsn - 5, lsn, before=row))
                records.append(table.tombstone(row))
                del state[key]
            else:
                records.append(table.event("u", lsn - 5, lsn, after=row))
                state[key] = (key % 3, row["v"])
    return records, state


def _batches(checkpoint: Path, kind: str) -> set[int]:
    folder = checkpoint / kind
    return {int(p.name) for p in folder.iterdir() if p.name.isdigit()} if folder.is_dir() else set()


def _start(config: Path, log: Path, stack: StackSettings) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SIGNALLER_SPARK_JARS_DIR": str(jars_dir(stack)), "PYSPARK_PYTHON": sys.executable}
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-m", "spark_jobs.apply_changes", "--config", str(config)],
                                cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _table(path: Path) -> dict[int, tuple[int, str]] | None:
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        rows = DeltaTable(str(path)).to_pyarrow_table(columns=["id", "bucket", "v"]).to_pylist()
    except (TableNotFoundError, OSError):
        return None
    return {r["id"]: (r["bucket"], r["v"]) for r in rows}


def _kill_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    """Signal the job's process group (the Python driver and the JVM it started)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    _kill_group(proc, signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        _kill_group(proc, signal.SIGKILL)
        proc.wait(30)


def test_kill_9_mid_batch_then_restart_continues_from_the_checkpoint(
    stack: StackSettings, tmp_path: Path, unique_name: str
) -> None:
    prefix = f"k{unique_name}"
    table = SourceTable(prefix, "orders", [Column("id", 23, "int4", optional=False, is_key=True),
                                           Column("bucket", 23, "int4"), Column("v", 25, "text")])
    create_topic(stack.bootstrap_servers, table.topic)
    records, expected = _events(table)
    produce(stack.bootstrap_servers, table.topic, records)
    checkpoint, target = tmp_path / "checkpoint", tmp_path / "delta"
    config = tmp_path / "job.yaml"
    config.write_text(yaml.safe_dump({
        "kafka.bootstrap.servers": stack.bootstrap_servers, "subscribe": table.topic, "topic_prefix": prefix,
        "target_root": str(target), "checkpointLocation": str(checkpoint), "trigger_interval": "1 second",
        "maxOffsetsPerTrigger": 40, "tombstone_retention_hours": 0, "partition_by": {"public.orders": ["bucket"]},
        "master": "local[2]", "spark_conf": FAST_START,
    }))
    log = tmp_path / "job.log"
    path = target / "public" / "orders"

    first = _start(config, log, stack)
    killed_batch = None
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and first.poll() is None:
            pending = _batches(checkpoint, "offsets") - _batches(checkpoint, "commits")
            if pending and min(pending) == 1:  # batches 0..2 of at most 40 records
                time.sleep(1.0)  # into the batch's writes
                if min(pending) not in _batches(checkpoint, "commits"):
                    _kill_group(first, signal.SIGKILL)  # kill -9 of the driver and its JVM
                    killed_batch = min(pending)
                    break
            time.sleep(0.1)
        first.wait(30)
    finally:
        if first.poll() is None:
            _kill_group(first, signal.SIGKILL)
            first.wait(30)
    assert killed_batch is not None, f"never caught a batch in flight; job log:\n{log.read_text()[-3000:]}"
    assert first.returncode == -signal.SIGKILL
    assert killed_batch in _batches(checkpoint, "offsets") and killed_batch not in _batches(checkpoint, "commits")
    assert _table(path) != expected

    second = _start(config, log, stack)
    try:
        deadline = time.monotonic() + 300
        state: Any = None
        while time.monotonic() < deadline and second.poll() is None:
            state = _table(path)
            done = _batches(checkpoint, "offsets") <= _batches(checkpoint, "commits")
            if state == expected and done:  # the last batch's tombstone GC runs after its MERGE
                break
            time.sleep(1)
        assert state == expected, f"not converged after restart (exit {second.poll()}); log:\n{log.read_text()[-3000:]}"
    finally:
        _stop(second)
    assert killed_batch in _batches(checkpoint, "commits")
    from deltalake import DeltaTable

    tombstones = DeltaTable(str(target / "_tombstones" / "public" / "orders")).to_pyarrow_table()
    assert tombstones.num_rows == 0, "retention 0: tombstones are collected in the batch that wrote them"
    assert DeltaTable(str(path)).metadata().partition_columns == ["bucket"]
