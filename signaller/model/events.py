"""Change events as the capture produces them and the sink consumes them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from signaller.model.tables import TableId


class Op(StrEnum):
    """Debezium's ``op`` codes."""

    CREATE = "c"
    UPDATE = "u"
    DELETE = "d"
    TRUNCATE = "t"
    READ = "r"
    MESSAGE = "m"


@dataclass(frozen=True, slots=True)
class ChangeEvent:
    """One row change (or truncate) with its place in the log.

    ``before``/``after`` hold column values already converted to their Debezium JSON form
    (see ``sources.postgres.codecs``). ``lsn`` is the change's own LSN, ``commit_lsn`` the LSN of
    its transaction's commit (the position a restart resumes after), ``last_commit_lsn`` the
    commit LSN of the previous transaction (Debezium's ``source.sequence[0]``).
    ``commit_ts_us`` is the commit time in microseconds since the epoch. ``snapshot`` is
    ``None`` for streamed events and ``"incremental"`` (etc.) for snapshot reads.
    """

    op: Op
    table: TableId
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    lsn: int | None
    commit_lsn: int | None
    last_commit_lsn: int | None
    tx_id: int | None
    commit_ts_us: int
    snapshot: str | None = None
