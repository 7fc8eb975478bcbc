"""When the job compacts a table with deletion vectors, and how.

A MERGE into a table with deletion vectors (``spark_jobs.dv_merge``) marks the rows it replaces or
deletes instead of rewriting their files: they stay in the files, and every read of the table
(the job's next MERGE included) reads them and drops them again. Delta's ``OPTIMIZE`` rewrites
the files whose deletion vectors mark more than 5 % of their rows
(``spark.databricks.delta.optimize.maxDeletedRowsRatio``), without them.

The job runs it itself, right after the MERGE that leaves at least ``compact_deleted_share`` of
a table's stored rows marked deleted (:func:`due`). The share comes from the files the MERGE
read, with their row counts and deletion vectors, and from what it marked and wrote
(:func:`deleted_share`): no Spark job when Delta's checksum file lists the files (up to 50), one
small one over the table state otherwise. ``OPTIMIZE`` changes no data (its commit has
``dataChange = false``: change data feed and streaming readers skip it), so it needs no
idempotent-write id. Which tables are due is kept in memory only: after a restart, a table that
was due is compacted after its next MERGE (a replayed batch's MERGE, skipped, decides nothing).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def deleted_share(files: Iterable[tuple[int | None, int]], marked: int, written: int) -> float | None:
    """The share of a table's stored rows that are marked deleted after a commit.

    ``files``: ``(stored rows, rows already marked deleted)`` of every file of the table before the
    commit (stored rows None: the file has no statistics, the share is unknown: None);
    ``marked``: rows the commit marks deleted; ``written``: rows it adds."""
    stored = dead = 0
    for rows, already in files:
        if rows is None:
            return None
        stored += rows
        dead += already
    total = stored + written
    return (dead + marked) / total if total else 0.0


def due(share: float | None, threshold: float) -> bool:
    """Whether a table whose stored rows are ``share`` marked deleted is compacted
    (``threshold``: ``compact_deleted_share``; 0 never)."""
    return threshold > 0 and share is not None and share >= threshold


def compact(spark: Any, path: str) -> None:
    """``OPTIMIZE`` the Delta table at ``path``: small files packed together, files with deleted
    rows rewritten without them (one commit, no data change)."""
    spark.sql(f"OPTIMIZE delta.`{path}`").collect()
