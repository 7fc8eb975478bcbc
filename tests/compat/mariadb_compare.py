"""The MariaDB comparison: :func:`tests.compat.compare.compare` with MariaDB's topic names (``<prefix>.<db>.<table>``,
the schema-change topic ``<prefix>``, the schema history ``<prefix>.schema-history``), the transaction
topic reduced to transactions with captured events, and MariaDB's allow-list (:data:`MARIADB_ALLOWED`,
the README's "MariaDB: differences from Debezium's MariaDB connector").
"""

from __future__ import annotations

from typing import Any

from tests.compat.compare import Allowed, Difference, Renames, compare, unexplained

MARIADB_ALLOWED: tuple[Allowed, ...] = (
    Allowed("timings", r".*",
            r"value\.payload\.(source\.)?ts_(ms|us|ns)|value\.payload\.timestamp|value\.ts_ms|value\.position\.ts_sec",
            "Wall-clock times of two processes never agree (the schema history's ts_ms and position.ts_sec too)."),
    Allowed("read positions", r"data:.*", r"value\.payload\.source\.(file|pos|row|gtid|thread|sequence)", op="r",
            reason="A snapshot READ carries the binlog position at which its window closed; each side writes its "
                   "own watermarks at its own moment."),
    Allowed("watermark positions", r"signal",
            r"value\.payload\.(source\.(file|pos|row|gtid|thread|sequence)|transaction\..*)",
            reason="Watermark rows are each side's own transactions in its own signalling table."),
    Allowed("watermark timestamps", r"signal", r"value\.payload\.after\.data\.(open|close)WindowTimestamp",
            reason="Instants of each side's windows."),
    Allowed("schema snapshot positions", r"schema-changes|schema-history",
            r"value\.payload\.source\.(file|pos|row|gtid|thread)|value\.position\.(file|pos|gtids|event|row)",
            op="ddl-snapshot",
            reason="Each side records the schema at start-up at the binlog position it read then; other clients "
                   "of the server move it in between."),
)
"""The README's MariaDB allow-list, as data. A unit test keeps the two in step."""


def mariadb_renames(prefix: str, signal_table: str, database: str) -> Renames:
    return Renames(prefix, signal_table, schema=database)


def compare_mariadb(debezium: dict[str, list[dict[str, Any]]], signaller: dict[str, list[dict[str, Any]]],
                    debezium_names: Renames, signaller_names: Renames) -> list[Difference]:
    """The differences :data:`MARIADB_ALLOWED` does not cover."""
    differences = compare(debezium, signaller, debezium_names, signaller_names, drop_empty_transactions=True)
    return unexplained(differences, MARIADB_ALLOWED)
