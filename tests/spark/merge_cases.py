"""The tables and batches the tests of the job's own MERGEs share (``test_dv_merge``,
``test_cow_merge``): a two-column key, stale and newer events, unchanged-TOAST values."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from spark_jobs.batch_cache import BatchCache
from spark_jobs.connect_schema import ColumnSpec
from spark_jobs.job_config import ApplyJobConfig
from spark_jobs.writes import DeltaWriter

COLUMNS = [
    ColumnSpec("region", "STRING", "{col}", "STRING", optional=False),
    ColumnSpec("id", "BIGINT", "{col}", "BIGINT", optional=False),
    ColumnSpec("name", "STRING", "{col}", "STRING", optional=True),
    ColumnSpec("note", "STRING", "{col}", "STRING", optional=True, toast_test="{col} = '__toast'"),
]
KEYS = ["region", "id"]
DDL = ("region STRING, id BIGINT, name STRING, note STRING, "
       "_cdc_seq STRUCT<commit_lsn: BIGINT, lsn: BIGINT, kafka_offset: BIGINT>, _cdc_op STRING, _cdc_ts_ms BIGINT")
SOURCE_DDL = DDL + ", _cdc_unchanged ARRAY<STRING>"


def seq(n: int) -> tuple[int, int, int]:
    return (n, n, 0)


def make_table(spark: Any, path: Path, deletion_vectors: bool, feed: bool = True) -> str:
    """A table at ``path`` holding four rows in one file; ``feed``: its change data feed on."""
    spark.sql(f"CREATE TABLE delta.`{path}` ({DDL}) USING DELTA TBLPROPERTIES "
              f"(delta.enableChangeDataFeed = {str(feed).lower()}"
              f"{', delta.enableDeletionVectors = true' if deletion_vectors else ''})")
    stored = [("eu", 1, "a", "long note", seq(10), "c", 0), ("eu", 2, "b", "n2", seq(10), "c", 0),
              ("us", 1, "c", "n3", seq(50), "c", 0), ("us", 2, "d", "n4", seq(10), "c", 0)]
    # one file: a MERGE that replaces some of its rows marks them (a file whose every row is
    # replaced is removed instead, see test_a_file_whose_rows_are_all_replaced_is_removed)
    spark.createDataFrame(stored, DDL).coalesce(1).write.format("delta").mode("append").save(str(path))
    return str(path)


def make_batch(spark: Any) -> Any:
    rows = [
        ("eu", 1, "a2", None, seq(20), "u", 1, ["note"]),  # newer, note unchanged (TOAST): stored note kept
        ("eu", 2, None, None, seq(20), "d", 1, []),  # newer delete
        ("us", 1, "stale", "x", seq(40), "u", 1, []),  # older than the stored row: ignored
        ("us", 3, "new", "n5", seq(20), "c", 1, []),  # not stored: inserted
        ("us", 4, None, None, seq(20), "d", 1, []),  # delete of a key never stored: nothing
    ]
    return spark.createDataFrame(rows, SOURCE_DDL).localCheckpoint(eager=True)


def make_writer(
    tmp_path: Path, deletion_vectors: bool, compact_deleted_share: float = 0.3, delta_merge: bool = False,
) -> DeltaWriter:
    """A writer into ``tmp_path``; ``delta_merge``: every MERGE is Delta's own (the reference)."""
    cfg = ApplyJobConfig(bootstrap_servers="unused:9092", target_root=str(tmp_path), subscribe="x",
                         checkpoint_location=str(tmp_path / "cp"), deletion_vectors=deletion_vectors,
                         compact_deleted_share=compact_deleted_share)
    return DeltaWriter(cfg, lambda _name: contextlib.nullcontext(), BatchCache().checkpoint, delta_merge)


def contents(spark: Any, path: str) -> tuple[set[Any], set[Any]]:
    rows = {tuple(r) for r in spark.read.format("delta").load(path).select("region", "id", "name", "note").collect()}
    feed = {tuple(r) for r in spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 2)
            .load(path).select("_change_type", "region", "id", "name", "note").collect()}
    return rows, feed


def live_files(path: str) -> list[dict[str, Any]]:
    """The table's current data files, from its log's add and remove actions (a file is one per
    path and deletion vector)."""
    live: dict[tuple[str, str], dict[str, Any]] = {}
    for commit in sorted((Path(path) / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            for kind in ("remove", "add"):
                if kind in action:
                    key = (action[kind]["path"], json.dumps(action[kind].get("deletionVector"), sort_keys=True))
                    if kind == "add":
                        live[key] = action[kind]
                    else:
                        live.pop(key, None)
    return list(live.values())
