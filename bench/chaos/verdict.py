"""The verdict after the drain: per table, the replayed topic and the Delta table against the source; the
signals; the slot.

Row counts: ``lost`` (a source key the target lacks), ``extra`` (a target key the source lacks), ``mismatched``
(a key in both with a different value in some source column; a column the target lacks counts as null). A
content checksum (md5 of the sorted rows' canonical JSON over the source's columns) is compared as well.
``chaos.mismatched_rows`` adds the extra rows to the mismatched ones: a row the source does not have is wrong
content, not loss.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from bench.chaos.tables import Rows, TableSpec

ANSWER_LOG = re.compile(r"signal (\S+) from (\S+) (accepted|rejected)")
SCAN_FAILURE_LOG = re.compile(r"[^\n]*(?:incremental snapshot of \S+ (?:failed|lost rows)|snapshot of \S+: )[^\n]*")
"""The sidecar's log lines that say why a table scan ended ``SQL_EXCEPTION`` (``signaller.snapshot``)."""


def checksum(rows: Rows, columns: list[str]) -> str:
    lines = sorted(json.dumps([row.get(c) for c in columns], default=str) for row in rows.values())
    return hashlib.md5("\n".join(lines).encode()).hexdigest()


def compare(source: Rows, target: Rows, columns: list[str]) -> dict[str, Any]:
    """``lost``, ``extra``, ``mismatched`` counts, up to 3 examples of each, and whether the checksums agree."""
    lost = [k for k in source if k not in target]
    extra = [k for k in target if k not in source]
    mismatched = [k for k in source if k in target
                  and any(source[k].get(c) != target[k].get(c) for c in columns)]
    return {
        "lost": len(lost), "extra": len(extra), "mismatched": len(mismatched),
        "checksum_equal": checksum(source, columns) == checksum(target, columns),
        "examples": {
            "lost": lost[:3], "extra": extra[:3],
            "mismatched": [{"key": k, "source": _short(source[k]), "target": _short(target[k])}
                           for k in mismatched[:3]],
        },
    }


def _short(row: dict[str, Any]) -> dict[str, Any]:
    return {c: (v[:40] + "…" if isinstance(v, str) and len(v) > 40 else v) for c, v in row.items()}


def delta_rows(spec: TableSpec, path: Path, columns: list[str]) -> Rows | None:
    """The Delta table's live rows by canonical key (its columns among ``columns``); None if it does not exist."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        table = DeltaTable(str(path))
    except TableNotFoundError:
        return None
    present = [c for c in columns if c in table.schema().to_arrow().names]
    rows: Rows = {}
    for row in table.to_pyarrow_table(columns=present).to_pylist():
        rows[spec.canonical_key(row)] = row
    return rows


def signal_answers(sidecar_log: Path, notifications: list[dict[str, Any]]) -> tuple[set[str], set[str]]:
    """Ids the sidecar logged as accepted, and ids it rejected (logged, or a REJECTED notification)."""
    text = sidecar_log.read_text(errors="replace") if sidecar_log.exists() else ""
    answers = [(match.group(1), match.group(3)) for match in ANSWER_LOG.finditer(text)]
    accepted = {signal_id for signal_id, answer in answers if answer == "accepted"}
    rejected = {signal_id for signal_id, answer in answers if answer == "rejected"}
    rejected |= {n["id"] for n in notifications if n.get("type") == "REJECTED"}
    return accepted, rejected


def judge_signals(ledger: list[dict[str, Any]], accepted: set[str], rejected: set[str]) -> dict[str, Any]:
    """Every acknowledged signal must have been answered (applied, or rejected with a reason)."""
    acknowledged = [s for s in ledger if s["acknowledged"]]
    unanswered = [s["id"] for s in acknowledged if s["id"] not in accepted and s["id"] not in rejected]
    return {
        "sent": len(ledger), "acknowledged": len(acknowledged),
        "acknowledged_by_channel": dict(Counter(s["channel"] for s in acknowledged)),
        "acknowledged_by_type": dict(Counter(s["type"] for s in acknowledged)),
        "applied": sum(1 for s in acknowledged if s["id"] in accepted),
        "rejected": sum(1 for s in acknowledged if s["id"] in rejected and s["id"] not in accepted),
        "lost": len(unanswered), "lost_ids": unanswered[:20],
    }


def scan_statuses(notifications: list[dict[str, Any]]) -> dict[str, int]:
    """``TABLE_SCAN_COMPLETED`` notifications by status (``SQL_EXCEPTION`` means a snapshot lost rows)."""
    return dict(Counter(n.get("additional_data", {}).get("status", "?") for n in notifications
                        if n.get("type") == "TABLE_SCAN_COMPLETED"))


def failed_scans(notifications: list[dict[str, Any]], sidecar_log: Path) -> list[dict[str, Any]]:
    """Each ``SQL_EXCEPTION`` table scan (its table and notification timestamp), with the sidecar's log lines
    saying why a scan failed (up to 5 in all, each cut to 400 characters): what a failed run's results must
    show, since its work directory is gone afterwards."""
    text = sidecar_log.read_text(errors="replace") if sidecar_log.exists() else ""
    reasons = [line[:400] for line in SCAN_FAILURE_LOG.findall(text)][:5]
    scans = [(n, n.get("additional_data", {})) for n in notifications if n.get("type") == "TABLE_SCAN_COMPLETED"]
    return [{"table": data.get("scanned_collection"), "timestamp": n.get("timestamp"), "log": reasons}
            for n, data in scans if data.get("status") == "SQL_EXCEPTION"]
