"""Spark SQL text: string literals for values the job writes into statements."""

from __future__ import annotations


def sql_string(text: str) -> str:
    """``text`` as a Spark SQL string literal (backslashes and quotes escaped)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
