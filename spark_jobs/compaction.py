"""When the job compacts a table, and how.

A MERGE into a table with deletion vectors (``spark_jobs.dv_merge``) marks the rows it replaces or
deletes instead of rewriting their files: they stay in the files, and every read of the table
(the job's next MERGE included) reads them and drops them again. Delta's ``OPTIMIZE`` rewrites
the files whose deletion vectors mark more than 5 % of their rows
(``spark.databricks.delta.optimize.maxDeletedRowsRatio``), without them.

The job runs it itself, right after the MERGE that leaves at least ``compact_deleted_share`` of
a table's stored rows marked deleted (:func:`due`). The share comes from the files the MERGE
read, with their row counts and deletion vectors, and from what its commit removed and added
(:func:`files_after_commit`, :func:`deleted_share`): no Spark job when Delta's checksum file
lists the files (up to 50), one small one over the table state otherwise. ``OPTIMIZE`` changes no data (its commit has
``dataChange = false``: change data feed and streaming readers skip it), so it needs no
idempotent-write id. Which tables are due is kept in memory only: after a restart, a table that
was due is compacted after its next MERGE (a replayed batch's MERGE, skipped, decides nothing).

Any table, deletion vectors or not, is also compacted after a MERGE that leaves it with more than
``compact_max_files`` data files (:func:`too_many_files`; default 40). Every batch adds files (a
copy-on-write MERGE one for its own rows, an append one per task); a MERGE that touches all of
them writes them again in a few files, but one that touches some (updates of recent keys) leaves
the others, and so do appends (a backfill): the table's file count only grows. The job's own
MERGEs read a table's files from Delta's checksum file, which lists them only up to 50 files
(``spark_jobs.checksum_listing``); past that every MERGE was Delta's, with its replay of the log.
Appends do not read the file list, so a batch of appends alone compacts nothing: a backfill of
many batches is not compacted again and again (``OPTIMIZE`` packs files of up to 1 GB, the
table's earlier compacted file with the new ones), only after its first MERGE.
The count comes from the table's latest snapshot the job's own commit left in this process (its
checksum: no Spark job); nothing is remembered, so a restart changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

FileRows = tuple[int | None, int]
"""``(stored rows, rows marked deleted)`` of a data file (stored rows None: no statistics)."""


def files_after_commit(
    before: Mapping[str, FileRows], removed: Iterable[str], added: Mapping[str, FileRows],
) -> list[FileRows]:
    """The data files of a table after a commit: ``before`` (path -> rows, every file the commit
    read), without the ``removed`` paths, with the ``added`` ones (a file re-added with a new
    deletion vector is removed and added under its path; an added file without statistics keeps
    the row count it had before)."""
    after = dict(before)
    for path in removed:
        after.pop(path, None)
    for path, (rows, dead) in added.items():
        after[path] = (rows if rows is not None else before.get(path, (None, 0))[0], dead)
    return list(after.values())


def deleted_share(files: Iterable[FileRows]) -> float | None:
    """The share of a table's stored rows that are marked deleted, from its data files
    (None: a file without statistics makes it unknown; 0 for an empty table)."""
    stored = dead = 0
    for rows, marked in files:
        if rows is None:
            return None
        stored += rows
        dead += marked
    return dead / stored if stored else 0.0


def due(share: float | None, threshold: float) -> bool:
    """Whether a table whose stored rows are ``share`` marked deleted is compacted
    (``threshold``: ``compact_deleted_share``; 0 never)."""
    return threshold > 0 and share is not None and share >= threshold


def compact(spark: Any, path: str) -> None:
    """``OPTIMIZE`` the Delta table at ``path``: small files packed together, files with deleted
    rows rewritten without them (one commit, no data change)."""
    spark.sql(f"OPTIMIZE delta.`{path}`").collect()


def file_count(spark: Any, path: str) -> int:
    """The data files of the Delta table at ``path`` in its latest snapshot this process knows
    (after the job's own commit: the one it made); from its checksum when it has one."""
    snapshot, checksum = _latest_checksum(spark, path)
    # numOfFiles() (and numOfFilesIfKnown(), which may defer to it) reconstructs the state: a Spark
    # job, ~0.5 s a batch
    return int(checksum.get().numFiles() if checksum.isDefined() else snapshot.numOfFiles())


def stored_bytes(spark: Any, path: str) -> int | None:
    """The bytes of the data files of the Delta table at ``path`` in its latest snapshot this
    process knows, from its checksum; None when it has none (no Spark job either way)."""
    _, checksum = _latest_checksum(spark, path)
    return int(checksum.get().tableSizeBytes()) if checksum.isDefined() else None


def _latest_checksum(spark: Any, path: str) -> tuple[Any, Any]:
    """The latest snapshot of ``path`` this process knows and its checksum (a Scala ``Option``)."""
    log = spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path)
    snapshot = log.unsafeVolatileSnapshot()
    return snapshot, snapshot.checksumOpt()


def too_many_files(files: int, limit: int) -> bool:
    """Whether a table of ``files`` data files is compacted (``limit``: ``compact_max_files``; 0 never)."""
    return limit > 0 and files > limit
