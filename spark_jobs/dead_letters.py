"""The dead-letter Delta table: records the job cannot apply, kept raw with the reason.

Each row is the Kafka record as it arrived (``topic``, ``partition``, ``offset``, ``key``,
``value``), the ``reason``, the ``batch_id`` and ``recorded_at``. Appends are idempotent per topic
and batch (``txnAppId``/``txnVersion``), so a replayed batch writes its dead letters once.
"""

from __future__ import annotations

import sys
from typing import Any

from spark_jobs.job_config import ApplyJobConfig


class DeadLetters:
    """Appends to ``cfg.effective_dead_letter_path``; ``count`` is how many rows this job wrote."""

    def __init__(self, cfg: ApplyJobConfig) -> None:
        self.cfg = cfg
        self.count = 0

    def append(self, out: Any, topic: str, batch_id: int, count: int | None = None) -> None:
        """Append ``out`` (the raw columns and ``reason``); ``count``: its rows, if known."""
        from pyspark.sql import functions as F

        out = out.withColumn("batch_id", F.lit(batch_id).cast("bigint"))
        out = out.withColumn("recorded_at", F.current_timestamp())
        count = out.count() if count is None else count
        (
            out.write.format("delta").mode("append")
            .option("txnAppId", f"{self.cfg.effective_app_id}:dead-letter:{topic}")
            .option("txnVersion", batch_id)
            .option("mergeSchema", "true")
            .save(self.cfg.effective_dead_letter_path)
        )
        self.count += count
        print(f"apply_changes: {count} record(s) of {topic} sent to the dead-letter table "
              f"{self.cfg.effective_dead_letter_path}", file=sys.stderr)
