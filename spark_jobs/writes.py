"""The Delta writes of a batch: truncate, tombstones, the append of new keys and the MERGE.

:class:`DeltaWriter` owns what the job remembers between batches about each target (its key
range, whether its tombstone table exists, when tombstones were last collected). Every write
carries Delta's idempotent-write id (``txnAppId`` = app id + operation + table, ``txnVersion`` =
batch id), so a batch replayed after a crash skips the writes that committed; the sequence guard
in every MERGE makes a replay a no-op even without that. Call on the driver, inside a batch.

Tombstones (``<target_root>/_tombstones/<schema>/<table>``, append-only: one row per applied
delete) remember deleted keys so that a late, older event cannot bring a deleted row back;
``tombstone_retention_hours`` bounds them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from spark_jobs import compaction, split
from spark_jobs.blind_append import append_once
from spark_jobs.checksum_listing import read_latest
from spark_jobs.connect_schema import ColumnSpec, quote
from spark_jobs.cow_merge import merge_by_rewrite
from spark_jobs.dv_merge import Checkpoint, Outcome, merge_with_deletion_vectors
from spark_jobs.job_config import ApplyJobConfig
from spark_jobs.key_range import Bounds, range_sql
from spark_jobs.merge_parts import BROADCAST_ROWS
from spark_jobs.phases import PhaseClock
from spark_jobs.side_write import SideWrite
from spark_jobs.sqltext import sql_string
from spark_jobs.tables import META_COLUMNS, TableState

Phase = Callable[[str], AbstractContextManager[None]]
"""Times a phase of the batch (``spark_jobs.phases.PhaseClock.phase``)."""


class DeltaWriter:
    """The Delta writes of the job's batches (see the module docstring)."""

    def __init__(self, cfg: ApplyJobConfig, phase: Phase, checkpoint: Checkpoint, delta_merge: bool = False) -> None:
        """``delta_merge``: every MERGE is Delta's own (the reference the job's MERGEs are tested
        and measured against), not ``spark_jobs.cow_merge``'s or ``spark_jobs.dv_merge``'s."""
        self.cfg = cfg
        self._delta_merge = delta_merge
        self._phase = phase
        self._checkpoint = checkpoint  # materializes a DataFrame until the batch ends
        self._known: set[str] = set()  # tombstone tables known to exist
        self._last_gc: dict[str, float] = {}
        self._ranges: dict[str, split.KeyRange | None] = {}  # per table: its keys lie inside
        self._compaction_due: set[str] = set()  # tables whose last MERGE left enough rows marked deleted
        self._merged: set[str] = set()  # tables a MERGE of the current batch wrote (or found applied)
        self._join_first: dict[str, int] = {}  # tables whose next MERGEs keep the first join: how many

    def truncate(self, spark: Any, path: str, name: str, batch_id: int, horizon: tuple[int, int, int]) -> None:
        """Delete every stored row older than ``horizon`` (a truncate's ``_cdc_seq``)."""
        from delta.tables import DeltaTable

        self._txn(spark, "truncate", name, batch_id)
        try:
            DeltaTable.forPath(spark, path).delete(_older_than(horizon))
        finally:
            self.clear_txn(spark)

    def _app_id(self, operation: str, name: str) -> str:
        return f"{self.cfg.effective_app_id}:{operation}:{name}"

    def _txn(self, spark: Any, operation: str, name: str, batch_id: int) -> None:
        spark.conf.set("spark.databricks.delta.write.txnAppId", self._app_id(operation, name))
        spark.conf.set("spark.databricks.delta.write.txnVersion", str(batch_id))

    def clear_txn(self, spark: Any) -> None:
        spark.conf.unset("spark.databricks.delta.write.txnAppId")
        spark.conf.unset("spark.databricks.delta.write.txnVersion")

    def tomb_path(self, path: str) -> str:
        root = self.cfg.target_root.rstrip("/")
        return root + "/_tombstones" + path[len(root):]

    def drop_tombstoned(
        self, spark: Any, latest: Any, keys: list[str], tomb_path: str, bounds: Bounds,
        changes: tuple[Any, int] | None = None,
    ) -> tuple[Any, bool]:
        """Drop events older than the newest kept tombstone of their key. Returns the events and
        whether the tombstone table exists.

        The tombstone table is append-only (one row per applied delete, see
        :meth:`write_tombstones`), so a key may have several: the newest one counts. It keeps every
        delete for ``tombstone_retention_hours``, so it grows with the stream. ``changes`` (the batch's
        change events and their count) restricts it to the batch's keys, broadcast, before the
        newest one per key is found, instead of aggregating every tombstone in the batch's key
        range, when the table is large enough for that to pay (:func:`_prune_tombstones`)."""
        from delta.tables import DeltaTable
        from pyspark.sql import functions as F

        key_cols = [F.col(quote(k)) for k in keys]
        if tomb_path not in self._known:
            with self._phase("tombstones"):
                if not DeltaTable.isDeltaTable(spark, tomb_path):
                    return latest, False
                _auto_compact(spark, tomb_path)
            self._known.add(tomb_path)
        tombs = read_latest(spark, tomb_path)  # auto-compacted: its checksum lists its files
        if bounds:  # file skipping: only tombstones in the batch's key range can matter
            tombs = tombs.where(range_sql(None, bounds))
        if changes is not None and _prune_tombstones(spark, tomb_path, changes[1]):  # only the batch's keys'
            tombs = tombs.join(F.broadcast(changes[0].select(*key_cols)), on=keys, how="left_semi")
        tombs = tombs.groupBy(*key_cols).agg(F.max("_cdc_seq").alias("_tomb_seq"))
        # ">=": a delete replayed after its tombstone was written (crash between the two writes)
        # must still reach the target; an upsert never has exactly a tombstone's sequence.
        latest = latest.join(tombs, on=keys, how="left").where(
            F.col("_tomb_seq").isNull() | (F.col("_cdc_seq") >= F.col("_tomb_seq"))
        ).drop("_tomb_seq")
        return latest, True

    def tag(
        self, spark: Any, latest: Any, columns: list[ColumnSpec], keys: list[str], path: str,
        state: TableState | None, stats: Any, bounds: Bounds,
    ) -> Any:
        """``latest`` tagged with ``_dest``: ``append`` for provably new keys, else ``merge`` (see
        ``spark_jobs.split``)."""
        from pyspark.sql import functions as F

        if state is None:  # created in this batch: empty
            self._ranges.pop(path, None)
            return split.tag(latest, True, None, None)
        target = read_latest(spark, path)  # its files from the checksum when it lists them: no log replay
        if path not in self._ranges:
            self._ranges[path] = split.stored_key_range(target, columns, keys)
        target_keys = None
        if stats.reads:  # snapshot reads inside the range: an anti-join against the stored keys
            ranged = target.where(range_sql(None, bounds)) if bounds else target
            target_keys = ranged.select(*[F.col(quote(k)) for k in keys])
        return split.tag(latest, False, self._ranges[path], target_keys)

    def widen_range(self, path: str, stats: Any, columns: list[ColumnSpec], keys: list[str]) -> None:
        """After the batch's writes: the table's key range includes the batch's (``_kmin_<i>`` /
        ``_kmax_<i>`` of ``_key_range_aggregates``, over every good change event)."""
        names = split.rangeable_keys(columns, keys)
        if not names:
            return
        found = stats.asDict()
        batch = {k: (found.get(f"_kmin_{keys.index(k)}"), found.get(f"_kmax_{keys.index(k)}")) for k in names}
        have = self._ranges.get(path) or split.KeyRange({k: None for k in names})
        self._ranges[path] = have.widened(batch)

    def append(self, spark: Any, rows: Any, columns: list[ColumnSpec], path: str, name: str, batch_id: int) -> None:
        """Provably new rows: a plain Delta append (no join with the table, no file rewritten), its
        write id looked up in the table's checksum file (``spark_jobs.blind_append``)."""
        append_once(spark, rows.select(*[quote(c) for c in split.appended_columns(columns, META_COLUMNS)]), path,
                    self._app_id("append", name), batch_id)

    def create_tombstones(self, spark: Any, columns: list[ColumnSpec], keys: list[str], tomb_path: str) -> None:
        """Create ``tomb_path``'s tombstone table (the key columns, ``_cdc_seq``, ``_deleted_at``)
        unless it exists. On the batch's thread, before :meth:`write_tombstones` runs beside the MERGE."""
        types = {c.name: c.target_ddl for c in columns}
        cols = ", ".join(f"{quote(k)} {types[k]}" for k in keys)
        spark.sql(
            f"CREATE TABLE IF NOT EXISTS delta.`{tomb_path}` ({cols}, "
            "_cdc_seq STRUCT<commit_lsn: BIGINT, lsn: BIGINT, kafka_offset: BIGINT>, _deleted_at TIMESTAMP) "
            f"USING DELTA TBLPROPERTIES ({sql_string(AUTO_COMPACT)} = 'true')"
        )
        self._known.add(tomb_path)

    def write_tombstones(
        self, spark: Any, deletes: Any, columns: list[ColumnSpec], keys: list[str], tomb_path: str, name: str,
        batch_id: int, exists: bool,
    ) -> None:
        """Append one tombstone per delete of ``deletes`` (the batch's newest event per key, where it
        is a delete). An append, not a MERGE: nothing is read or rewritten, and a key deleted again
        later simply gets a newer row (:meth:`drop_tombstoned` takes the newest). A key re-created
        after its delete keeps its tombstone until the retention ends; the target's sequence guard
        already stops every event older than the re-created row. The table compacts its small
        files itself (:data:`AUTO_COMPACT`).

        The idempotent-write id travels with the append (``spark_jobs.blind_append``), not in the
        session's configuration: with ``exists`` the append may run on another thread while the
        MERGE sets that configuration (``spark_jobs.side_write``)."""
        from pyspark.sql import functions as F

        if not exists:
            self.create_tombstones(spark, columns, keys, tomb_path)
        append_once(spark, deletes.select(*[quote(k) for k in keys], "_cdc_seq",
                                          F.current_timestamp().alias("_deleted_at")),
                    tomb_path, self._app_id("tombstones", name), batch_id)

    def tombstones_beside(
        self, spark: Any, deletes: Any, columns: list[ColumnSpec], keys: list[str], tomb_path: str, name: str,
        batch_id: int, exists: bool, clock: PhaseClock | None,
    ) -> SideWrite:
        """:meth:`write_tombstones` started on a thread of its own (``spark_jobs.side_write``), to run
        beside the MERGE; the table is created first, on this thread, when it does not exist."""
        if not exists:
            self.create_tombstones(spark, columns, keys, tomb_path)
        return SideWrite(lambda: self.write_tombstones(spark, deletes, columns, keys, tomb_path, name, batch_id, True),
                         clock, "tombstones")

    def collect_tombstones(self, spark: Any, path: str, name: str, batch_id: int) -> None:
        """Remove tombstones older than the retention, after the target MERGE has used them: every
        ``min(retention, 1 h)`` per table while the job runs (every batch with retention 0)."""
        from delta.tables import DeltaTable

        tomb_path = self.tomb_path(path)
        retention_s = int(self.cfg.tombstone_retention_hours * 3600)
        now = time.monotonic()
        last = self._last_gc.setdefault(tomb_path, now if retention_s else -1e18)
        if tomb_path not in self._known or now - last < min(retention_s, 3600):
            return
        self._txn(spark, "tombstone-gc", name, batch_id)
        horizon = f"current_timestamp() - INTERVAL {retention_s} SECONDS"
        DeltaTable.forPath(spark, tomb_path).delete(f"_deleted_at < {horizon}")
        self._last_gc[tomb_path] = now

    def compact(self, spark: Any, path: str) -> bool:
        """``OPTIMIZE`` ``path`` if its last MERGE made it due or a MERGE of the batch left it with
        more than ``compact_max_files`` files (``spark_jobs.compaction``; appends alone never: they
        do not read the file list); whether it did. Call after the batch's writes, outside them:
        the batch is applied either way."""
        merged, self._merged = path in self._merged, self._merged - {path}
        if path not in self._compaction_due and not (merged and compaction.too_many_files(
                compaction.file_count(spark, path), self.cfg.compact_max_files)):
            return False
        compaction.compact(spark, path)
        self._compaction_due.discard(path)
        return True

    def merge(
        self, spark: Any, latest: Any, columns: list[ColumnSpec], keys: list[str], path: str, name: str, batch_id: int,
        bounds: Bounds, source_rows: int | None = None,
    ) -> None:
        """The sequence-guarded MERGE of ``latest`` (of ``source_rows`` rows, if known). ``bounds`` (the
        batch's key range) in the condition lets Delta skip the files whose key statistics lie
        outside it: they cannot match. The job writes it itself where it can, in a transaction that
        reads the table's files from its checksum: with ``deletion_vectors`` (and the table's
        deletion vectors on) from one join (``spark_jobs.dv_merge``; the table is due for
        :meth:`compact` when that leaves ``compact_deleted_share`` of its rows marked deleted), else
        by rewriting the touched files (``spark_jobs.cow_merge``; all files in range for a batch
        dense over them, but not for :data:`JOIN_FIRST_AFTER_UNSTORED` MERGEs after one that found
        upserts of keys the table does not hold). Where those decline, it is Delta's MERGE."""
        from delta.tables import DeltaTable

        app_id = self._app_id("merge", name)
        self._merged.add(path)
        if self.cfg.deletion_vectors and not self._delta_merge:
            result = merge_with_deletion_vectors(
                spark, latest, columns, keys, META_COLUMNS, path, app_id, batch_id, bounds, self._checkpoint,
                source_rows=source_rows)
            if compaction.due(result.deleted_share, self.cfg.compact_deleted_share):
                self._compaction_due.add(path)
            if result.outcome is not Outcome.NOT_ENABLED:
                return
        if not self._delta_merge:
            waiting = self._join_first.pop(path, 0)
            if waiting > 1:
                self._join_first[path] = waiting - 1
            result = merge_by_rewrite(
                spark, latest, columns, keys, META_COLUMNS, path, app_id, batch_id, bounds, self._checkpoint,
                source_rows, dense=not waiting)
            if result.unstored_upserts:
                self._join_first[path] = JOIN_FIRST_AFTER_UNSTORED
            if result.outcome is not Outcome.NOT_TAKEN:
                return

        cond = merge_condition(keys, bounds)
        update: dict[str, Any] = {}
        insert: dict[str, Any] = {}
        for c in columns:
            q = quote(c.name)
            insert[q] = f"s.{q}"
            if c.toast_test:
                kept = f"array_contains(s._cdc_unchanged, {sql_string(c.name)})"
                update[q] = f"CASE WHEN {kept} THEN t.{q} ELSE s.{q} END"
            else:
                update[q] = f"s.{q}"
        for m in META_COLUMNS:
            update[m] = insert[m] = f"s.{m}"
        self._txn(spark, "merge", name, batch_id)
        (
            DeltaTable.forPath(spark, path).alias("t")
            .merge(latest.alias("s"), cond)
            .whenMatchedDelete(condition="s._cdc_op = 'd' AND s._cdc_seq > t._cdc_seq")
            .whenMatchedUpdate(condition="s._cdc_op != 'd' AND s._cdc_seq > t._cdc_seq", set=update)
            .whenNotMatchedInsert(condition="s._cdc_op != 'd'", values=insert)
            .execute()
        )


JOIN_FIRST_AFTER_UNSTORED = 8
"""After a dense batch (``spark_jobs.density``) upserted keys inside the range the table does not
hold, the table's next this many copy-on-write MERGEs find the touched files by a join first: the
dense road had to run that join anyway, after its rewrite, to find those keys."""


AUTO_COMPACT = "delta.autoOptimize.autoCompact"
"""The table property that makes Delta compact a table's small files after a write: the tombstone
tables have it (an append per batch with deletes would otherwise leave a file each time)."""


def _auto_compact(spark: Any, path: str) -> None:
    """Turn :data:`AUTO_COMPACT` on for ``path`` unless it is on: a tombstone table written before
    tombstones were appended (when a MERGE kept its files few) lacks it. One commit, at most once
    per table and job run."""
    properties = {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES delta.`{path}`").collect()}
    if properties.get(AUTO_COMPACT) != "true":
        spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ({sql_string(AUTO_COMPACT)} = 'true')")


def merge_condition(keys: list[str], bounds: Bounds) -> str:
    """Target ``t`` and source ``s`` rows match on the keys; the key range only prunes files."""
    matches = [f"t.{quote(k)} <=> s.{quote(k)}" for k in keys]
    return " AND ".join(matches + ([range_sql("t", bounds)] if bounds else []))


def seq_literal(seq: tuple[int, int, int]) -> Any:
    from pyspark.sql import functions as F

    return F.struct(
        F.lit(seq[0]).cast("bigint").alias("commit_lsn"), F.lit(seq[1]).cast("bigint").alias("lsn"),
        F.lit(seq[2]).cast("bigint").alias("kafka_offset"),
    )


def _older_than(seq: tuple[int, int, int]) -> Any:
    from pyspark.sql import functions as F

    return F.col("_cdc_seq") < seq_literal(seq)


PRUNE_TOMBSTONE_BYTES_PER_EVENT = 200
"""Tombstones are pruned by the batch's keys once their table holds this many bytes per event
of the batch (dev measurements, 50,000-event batches: a table of 10,000 tombstones, ~0.1 MB,
took ~0.1 s longer pruned, for the broadcast; ~1 M, ~8 MB, about as long; ~3 M, ~24 MB, ~0.2 s
shorter)."""


def _prune_tombstones(spark: Any, tomb_path: str, events: int) -> bool:
    """Whether to prune the tombstone table at ``tomb_path`` by the keys of a batch of ``events``
    change events: a batch small enough to broadcast (:data:`BROADCAST_ROWS`) against a table
    of at least :data:`PRUNE_TOMBSTONE_BYTES_PER_EVENT` bytes per event (its size unknown: yes)."""
    if events > BROADCAST_ROWS:
        return False
    size = compaction.stored_bytes(spark, tomb_path)
    return size is None or size >= PRUNE_TOMBSTONE_BYTES_PER_EVENT * events
