"""What the apply job's log says about its speed: how long its micro-batches took and how much they applied.

The chaos run's Delta figures depend on how fast the apply job keeps up, so the results name its batch times
beside the lag the probe measures (:mod:`bench.chaos.probes`). Two kinds of lines of ``apply-job.log`` count:

- ``apply_changes: batch <id> <table>: <n> event(s), ... in <s>s``: one table's MERGE in one micro-batch;
- Spark's ``Current batch is falling behind. The trigger interval is <t> milliseconds, but spent <ms>
  milliseconds``: a whole micro-batch (read, every table, commit) that overran the trigger interval.
"""

from __future__ import annotations

import re
from typing import Any

TABLE_LINE = re.compile(r"apply_changes: batch (\d+) (\S+): (\d+) event\(s\).* in ([0-9.]+)s")
BEHIND_LINE = re.compile(r"The trigger interval is (\d+) milliseconds, but spent (\d+) milliseconds")
START_LINE = re.compile(r"^--- apply-job start (\d+) at ")


def batch_figures(log_text: str) -> dict[str, Any]:
    """Micro-batches and tables applied, events, seconds spent in table MERGEs, the wall times of the batches
    that overran the trigger interval (``overran_s``, in order) and the trigger interval itself (ms, or None)."""
    batches: set[tuple[int, int]] = set()
    start, tables, events, merge_s = 0, 0, 0, 0.0
    overran: list[float] = []
    trigger_ms: int | None = None
    for line in log_text.splitlines():
        if (found := START_LINE.match(line)) is not None:
            start = int(found.group(1))
        elif (found := TABLE_LINE.search(line)) is not None:
            batches.add((start, int(found.group(1))))
            tables += 1
            events += int(found.group(3))
            merge_s += float(found.group(4))
        elif (found := BEHIND_LINE.search(line)) is not None:
            trigger_ms = int(found.group(1))
            overran.append(int(found.group(2)) / 1000)
    return {"batches": len(batches), "table_merges": tables,
            "events": events, "merge_s": round(merge_s, 1), "overran_s": overran, "trigger_ms": trigger_ms}
