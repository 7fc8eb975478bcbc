"""What a snapshot that ran through an ``ALTER TABLE`` must have delivered (PostgreSQL and MariaDB tests).

``check_reads_after_alter``: the READs after the ALTER carry exactly the table's new columns, every row was
read, and the last event of each key equals the table's row (the topic replays to the table).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.integration.capture_helpers import Record


def last_per_key(records: list[Record]) -> dict[int, dict[str, Any]]:
    """The last row image of each ``id`` (deletes and tombstones aside)."""
    rows: dict[int, dict[str, Any]] = {}
    for record in records:
        if not record.tombstone and record.payload["op"] != "d":
            rows[record.payload["after"]["id"]] = record.payload["after"]
    return rows


def check_reads_after_alter(records: list[Record], later_reads: list[dict[str, Any]], rows: int,
                            expected_columns: set[str], table: dict[int, dict[str, Any]],
                            log_tail: Callable[[], str]) -> None:
    """``later_reads``: the ``after`` images of the READs delivered after the ALTER; ``table``: the table's
    rows by ``id`` (``1..rows``) as the database has them now."""
    assert len(later_reads) >= rows // 4, f"the snapshot must be paused early: {len(later_reads)} READs after it"
    stale = [after for after in later_reads if set(after) != expected_columns]
    assert not stale, f"{len(stale)} READ(s) after the ALTER lack its columns, e.g. {stale[0]}\n{log_tail()}"
    read_keys = {r.payload["after"]["id"] for r in records if not r.tombstone and r.payload["op"] == "r"}
    assert read_keys == set(range(1, rows + 1)), "every row is read once the snapshot resumes"
    actual = last_per_key(records)
    wrong = sorted(key for key in table if actual.get(key) != table[key])
    assert not wrong, (f"{len(wrong)} row(s) of {rows} differ from the table, e.g. id {wrong[0]}: "
                       f"{actual.get(wrong[0])} != {table[wrong[0]]}\n{log_tail()}")
