"""Debezium's description of a table change (``io.debezium.connector.schema.Change``), the part of a schema change
record and of a schema history record that says what a DDL statement did to one table.

:func:`column_metadata` gives a column as Debezium's MariaDB DDL parser describes it (``jdbcType`` the
``java.sql.Types`` code, ``typeName`` upper case with ``UNSIGNED``, ``length``/``scale`` as written (a
``DECIMAL`` without them is ``(10,0)``, ``ENUM`` length 1, ``SET`` the length of its values joined by commas),
``charsetName`` for text columns only, ``enumValues`` quoted as written, the default unquoted);
:func:`change_struct` the change as the schema change topic's payload has it (every member, nulls included);
:func:`change_document` as the schema history's JSON has it (``JsonTableChangeSerializer``: unset numbers left
out, ``hasDefaultValue``, ``enumValues`` an empty list when none, ``attributes``; a ``DROP`` is its type and id).
:data:`CHANGE_SCHEMA` is the Connect schema of one change. Pure.
"""

from __future__ import annotations

from typing import Any, Final

from signaller.sources.mariadb.ddl_statements import ColumnSpec
from signaller.sources.mariadb.table_model import TEXT_TYPES, TableChange, TableDef
from signaller.wire.connect import field, primitive, struct

__all__ = ["CHANGE_SCHEMA", "change_document", "change_struct", "column_metadata", "table_id_text"]

_JDBC_TYPES: Final = {
    "bit": -7, "tinyint": 5, "smallint": 5, "mediumint": 4, "int": 4, "bigint": -5, "decimal": 3, "float": 6,
    "double": 8, "year": 4, "date": 91, "time": 92, "datetime": 93, "timestamp": 2014, "char": 1, "varchar": 12,
    "tinytext": 12, "text": 12, "mediumtext": 12, "longtext": 12, "enum": 1, "set": 1, "binary": -2,
    "varbinary": -3, "tinyblob": 2004, "blob": 2004, "mediumblob": 2004, "longblob": 2004,
}
"""``java.sql.Types`` of each MariaDB type as Debezium's DDL parser maps it; anything else (spatial types,
``uuid``, ``inet6``...) is ``OTHER`` (1111)."""
_OTHER = 1111

_STRING_OPT: Final = primitive("string", optional=True)
_COLUMN_SCHEMA: Final = struct("io.debezium.connector.schema.Column", [
    field("name", primitive("string", optional=False)),
    field("jdbcType", primitive("int32", optional=False)),
    field("nativeType", primitive("int32", optional=True)),
    field("typeName", primitive("string", optional=False)),
    field("typeExpression", _STRING_OPT),
    field("charsetName", _STRING_OPT),
    field("length", primitive("int32", optional=True)),
    field("scale", primitive("int32", optional=True)),
    field("position", primitive("int32", optional=False)),
    field("optional", primitive("boolean", optional=True)),
    field("autoIncremented", primitive("boolean", optional=True)),
    field("generated", primitive("boolean", optional=True)),
    field("comment", _STRING_OPT),
    field("defaultValueExpression", _STRING_OPT),
    field("enumValues", {"type": "array", "items": primitive("string", optional=False), "optional": True}),
], optional=False, version=1)
_TABLE_SCHEMA: Final = struct("io.debezium.connector.schema.Table", [
    field("defaultCharsetName", _STRING_OPT),
    field("primaryKeyColumnNames", {"type": "array", "items": primitive("string", optional=False),
                                    "optional": True}),
    field("columns", {"type": "array", "items": _COLUMN_SCHEMA, "optional": False}),
    field("comment", _STRING_OPT),
], optional=True, version=1)
CHANGE_SCHEMA: Final = struct("io.debezium.connector.schema.Change", [
    field("type", primitive("string", optional=False)),
    field("id", primitive("string", optional=False)),
    field("table", _TABLE_SCHEMA),
], optional=False, version=1)
"""The Connect schema of one table change (``tableChanges`` items of ``SchemaChangeValue``)."""


def table_id_text(change: TableChange) -> str:
    """Debezium's ``TableId.toDoubleQuotedString``: ``"db"."table"``."""
    return f'"{change.table_id.schema}"."{change.table_id.table}"'


def _default_expression(default: str | None) -> str | None:
    """A default as the catalog prints it (``'text'``, ``NULL``, ``0``, ``current_timestamp()``) as Debezium's
    ``defaultValueExpression`` has it: strings unquoted, ``NULL`` none."""
    if default is None or default.upper() == "NULL":
        return None
    if len(default) >= 2 and default[0] == default[-1] == "'":
        return default[1:-1].replace("''", "'").replace("\\\\", "\\")
    return default


def column_metadata(table: TableDef, spec: ColumnSpec, position: int) -> dict[str, Any]:
    """``spec`` (column ``position``, 1-based, of ``table``) with every member of Debezium's ``Column``, in the
    schema change topic's order (``nativeType`` always None), plus ``hasDefaultValue`` for the history."""
    kind = spec.type_name
    params = spec.params
    length: int | None = None
    scale: int | None = None
    enum_values: list[str] | None = None
    if kind in ("enum", "set"):
        enum_values = ["'" + value.replace("'", "''") + "'" for value in params]
        length = 1 if kind == "enum" else max(0, len(params) * 2 - 1)
    elif kind == "decimal":
        length = int(params[0]) if params else 10
        scale = int(params[1]) if len(params) > 1 else 0
    elif params:
        length = int(params[0])
        scale = int(params[1]) if len(params) > 1 else None
    elif kind in ("char", "binary", "bit"):
        length = 1
    type_name = kind.upper() + (" UNSIGNED" if spec.unsigned else "") + (" ZEROFILL" if spec.zerofill else "")
    in_key = any(name.lower() == spec.name.lower() for name in table.primary_key)
    optional = (spec.nullable if spec.nullable is not None else True) and not in_key
    has_default = spec.default is not None or (optional and not spec.auto_increment)
    return {
        "name": spec.name, "jdbcType": _JDBC_TYPES.get(kind, _OTHER), "nativeType": None, "typeName": type_name,
        "typeExpression": type_name, "charsetName": (spec.charset or table.charset) if kind in TEXT_TYPES else None,
        "length": length, "scale": scale, "position": position, "optional": optional,
        "autoIncremented": spec.auto_increment, "generated": spec.auto_increment, "comment": spec.comment,
        "defaultValueExpression": _default_expression(spec.default), "enumValues": enum_values,
        "hasDefaultValue": has_default,
    }


def _columns(table: TableDef) -> list[dict[str, Any]]:
    return [column_metadata(table, spec, index) for index, spec in enumerate(table.columns, 1)]


def change_struct(change: TableChange) -> dict[str, Any]:
    """``change`` as a ``tableChanges`` item of the schema change topic (see the module docstring)."""
    table = change.table
    if table is None:
        return {"type": change.kind, "id": table_id_text(change), "table": None}
    columns = []
    for column in _columns(table):
        del column["hasDefaultValue"]
        columns.append(column)
    return {"type": change.kind, "id": table_id_text(change), "table": {
        "defaultCharsetName": table.charset, "primaryKeyColumnNames": list(table.primary_key), "columns": columns,
        "comment": None}}


_LEFT_OUT_WHEN_NONE: Final = ("nativeType", "length", "scale", "defaultValueExpression")


def change_document(change: TableChange) -> dict[str, Any]:
    """``change`` as a ``tableChanges`` item of a schema history record (see the module docstring)."""
    table = change.table
    if table is None:
        return {"type": change.kind, "id": table_id_text(change)}
    columns = []
    for column in _columns(table):
        document: dict[str, Any] = {}
        for name in ("name", "jdbcType", "nativeType", "typeName", "typeExpression", "charsetName", "length",
                     "scale", "position", "optional", "autoIncremented", "generated", "comment", "hasDefaultValue",
                     "defaultValueExpression", "enumValues"):
            value = column[name]
            if value is None and name in _LEFT_OUT_WHEN_NONE:
                continue
            document[name] = [] if name == "enumValues" and value is None else value
        columns.append(document)
    return {"type": change.kind, "id": table_id_text(change), "table": {
        "defaultCharsetName": table.charset, "primaryKeyColumnNames": list(table.primary_key), "columns": columns,
        "attributes": []}, "comment": None}
