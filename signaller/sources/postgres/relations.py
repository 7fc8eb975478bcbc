"""Relation cache: the latest pgoutput Relation/Type per id, turned into ``TableSchema``.

pgoutput sends a Relation message (preceded by Type messages for its non-built-in column types)
before the first change of each table in a session and again whenever the table's relcache
entry is invalidated (``ALTER TABLE``, ``REPLICA IDENTITY``, ...). :class:`RelationCache` keeps
the latest one per relation id, derives a :class:`~signaller.model.TableSchema` from it and
keeps a per-relation ``version`` that changes exactly when the Relation or the derived schema
changes, so consumers can tell when to rebuild converters and Kafka schemas.

What pgoutput does not say, the I/O layer supplies through four optional callables, all of
which may run catalog queries (they are called only when a Relation or Type message arrives,
never per row) and, like Debezium's out-of-band lookups, see the catalog as it is *now*, which
may be ahead of the WAL position of the message being applied:

* :class:`TypeResolver` ``(type_oid) -> ResolvedType`` for non-built-in types (enums,
  domains, user arrays, composites, extension types). Memoized per OID until a Type message
  for that OID arrives or :meth:`RelationCache.invalidate_types` is called. Without a resolver
  the name from pgoutput's Type message is used (no enum values).
* ``not_null_columns(namespace, table) -> AbstractSet[str]``: the columns declared
  ``NOT NULL`` (``pg_attribute.attnotnull``). Without it, key columns are ``optional=False``
  (PostgreSQL forces primary-key and replica-identity-index columns NOT NULL) and every other
  column is ``optional=True`` (Debezium's default when optionality is unknown).
* ``primary_key_columns(namespace, table) -> tuple[str, ...]``: the primary key columns.
* ``column_defaults(namespace, table) -> Mapping[str, str]``: constant column defaults as value
  text (``Column.default_text``; the codec puts them in the schema as Debezium does).

Key columns (``Column.is_key``, hence ``TableSchema.key_columns`` and the Kafka key) follow
Debezium: the Kafka key is the table's **primary key**, read from the catalog whatever the
replica identity (current Debezium falls back to the columns of the first unique index when
there is no primary key; an I/O layer that wants that can return them from
``primary_key_columns``); columns the Relation does not have are dropped, as Debezium does
when the catalog is ahead of the stream. A table with no primary key gets a null Kafka key.
Here:

1. if ``primary_key_columns`` is given and returns columns of this relation, those are the key;
2. otherwise, for ``REPLICA IDENTITY DEFAULT`` or ``USING INDEX``, the columns pgoutput flags
   as replica identity (the primary key, resp. the identity index's columns);
3. otherwise no key columns: ``FULL`` flags *every* column, which is not a key, and
   ``NOTHING`` flags none (a FULL table keeps its primary key only through rule 1).

Column types: ``Column.type_name`` is the ``pg_type.typname`` (``int4``, ``_int4``,
``mood``); built-in OIDs are answered from a static table (:data:`BUILTIN_TYPES`, taken from
``pg_type.dat`` and checked against a PostgreSQL 15 catalog). A domain column is described by
its root base type (``type_oid``/``type_name`` of the base, the domain's type modifier when the
column has none), as Debezium does. ``enum_values`` is set for enums and for arrays of enums
(Debezium's ``EnumSet``); ``element_type_name`` for arrays.

Values are not converted here: :meth:`RelationCache.get` gives the column order so a caller
can zip column names with a :data:`~signaller.sources.postgres.pgoutput.TupleData`; converters
live in ``signaller.sources.postgres.codecs``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Protocol, TypeAlias

from signaller.errors import DecodeError, TerminalSourceError
from signaller.model import Column, TableId, TableSchema
from signaller.sources.postgres.pgoutput import PgOutputMessage, Relation, RelationColumn, Type


@dataclass(frozen=True, slots=True)
class ResolvedType:
    """What the catalog says about one type.

    ``name`` is ``pg_type.typname``; ``enum_values`` the labels of an enum in
    ``enumsortorder``; ``element_type_name``/``element_type_oid`` the element of an array type
    (``typelem``); ``base_type_oid``/``base_type_modifier`` the base of a domain
    (``typbasetype``/``typtypmod``), ``None``/-1 for anything else.
    """

    name: str
    enum_values: tuple[str, ...] | None = None
    element_type_name: str | None = None
    element_type_oid: int | None = None
    base_type_oid: int | None = None
    base_type_modifier: int = -1


class TypeResolver(Protocol):
    """Describes a non-built-in type by OID (a catalog query in the I/O layer).

    Must return a :class:`ResolvedType` or raise a :class:`~signaller.errors.SourceError`;
    it is memoized per OID by :class:`RelationCache`.
    """

    def __call__(self, type_oid: int) -> ResolvedType:
        """The type with OID ``type_oid``; ``SourceError`` if the catalog cannot say."""


NotNullColumns: TypeAlias = Callable[[str, str], AbstractSet[str]]
"""``(namespace, table) -> names of the columns declared NOT NULL``."""

PrimaryKeyColumns: TypeAlias = Callable[[str, str], tuple[str, ...]]
ColumnDefaults: TypeAlias = Callable[[str, str], Mapping[str, str]]
"""``(namespace, table) -> {column: constant default as value text}`` (``Catalog.column_defaults``)."""
"""``(namespace, table) -> primary key column names in key order`` (empty if none)."""

_BUILTIN_TYPE_NAMES: Final[dict[int, str]] = {
    16: "bool",
    17: "bytea",
    18: "char",
    19: "name",
    20: "int8",
    21: "int2",
    22: "int2vector",
    23: "int4",
    24: "regproc",
    25: "text",
    26: "oid",
    27: "tid",
    28: "xid",
    29: "cid",
    30: "oidvector",
    114: "json",
    142: "xml",
    143: "_xml",
    199: "_json",
    271: "_xid8",
    600: "point",
    601: "lseg",
    602: "path",
    603: "box",
    604: "polygon",
    628: "line",
    629: "_line",
    650: "cidr",
    651: "_cidr",
    700: "float4",
    701: "float8",
    718: "circle",
    719: "_circle",
    774: "macaddr8",
    775: "_macaddr8",
    790: "money",
    791: "_money",
    829: "macaddr",
    869: "inet",
    1000: "_bool",
    1001: "_bytea",
    1002: "_char",
    1003: "_name",
    1005: "_int2",
    1006: "_int2vector",
    1007: "_int4",
    1008: "_regproc",
    1009: "_text",
    1010: "_tid",
    1011: "_xid",
    1012: "_cid",
    1013: "_oidvector",
    1014: "_bpchar",
    1015: "_varchar",
    1016: "_int8",
    1017: "_point",
    1018: "_lseg",
    1019: "_path",
    1020: "_box",
    1021: "_float4",
    1022: "_float8",
    1027: "_polygon",
    1028: "_oid",
    1033: "aclitem",
    1034: "_aclitem",
    1040: "_macaddr",
    1041: "_inet",
    1042: "bpchar",
    1043: "varchar",
    1082: "date",
    1083: "time",
    1114: "timestamp",
    1115: "_timestamp",
    1182: "_date",
    1183: "_time",
    1184: "timestamptz",
    1185: "_timestamptz",
    1186: "interval",
    1187: "_interval",
    1231: "_numeric",
    1266: "timetz",
    1270: "_timetz",
    1560: "bit",
    1561: "_bit",
    1562: "varbit",
    1563: "_varbit",
    1700: "numeric",
    1790: "refcursor",
    2201: "_refcursor",
    2202: "regprocedure",
    2203: "regoper",
    2204: "regoperator",
    2205: "regclass",
    2206: "regtype",
    2207: "_regprocedure",
    2208: "_regoper",
    2209: "_regoperator",
    2210: "_regclass",
    2211: "_regtype",
    2949: "_txid_snapshot",
    2950: "uuid",
    2951: "_uuid",
    2970: "txid_snapshot",
    3220: "pg_lsn",
    3221: "_pg_lsn",
    3614: "tsvector",
    3615: "tsquery",
    3642: "gtsvector",
    3643: "_tsvector",
    3644: "_gtsvector",
    3645: "_tsquery",
    3734: "regconfig",
    3735: "_regconfig",
    3769: "regdictionary",
    3770: "_regdictionary",
    3802: "jsonb",
    3807: "_jsonb",
    3904: "int4range",
    3905: "_int4range",
    3906: "numrange",
    3907: "_numrange",
    3908: "tsrange",
    3909: "_tsrange",
    3910: "tstzrange",
    3911: "_tstzrange",
    3912: "daterange",
    3913: "_daterange",
    3926: "int8range",
    3927: "_int8range",
    4072: "jsonpath",
    4073: "_jsonpath",
    4089: "regnamespace",
    4090: "_regnamespace",
    4096: "regrole",
    4097: "_regrole",
    4191: "regcollation",
    4192: "_regcollation",
    4451: "int4multirange",
    4532: "nummultirange",
    4533: "tsmultirange",
    4534: "tstzmultirange",
    4535: "datemultirange",
    4536: "int8multirange",
    5038: "pg_snapshot",
    5039: "_pg_snapshot",
    5069: "xid8",
    6150: "_int4multirange",
    6151: "_nummultirange",
    6152: "_tsmultirange",
    6153: "_tstzmultirange",
    6155: "_datemultirange",
    6157: "_int8multirange",
}
"""``pg_type`` OID -> ``typname`` for the built-in base, range and multirange types and their
arrays (PostgreSQL 15; system row types, pseudo-types and internal statistics types omitted)."""

_MAX_DOMAIN_DEPTH: Final = 32


def _builtin_types() -> dict[int, ResolvedType]:
    """Expand the name table: ``_x`` names are arrays of ``x`` (true of every entry)."""
    oid_by_name = {name: oid for oid, name in _BUILTIN_TYPE_NAMES.items()}
    table = {}
    for oid, name in _BUILTIN_TYPE_NAMES.items():
        element = name[1:] if name.startswith("_") else None
        element_oid = None if element is None else oid_by_name[element]
        table[oid] = ResolvedType(name, element_type_name=element, element_type_oid=element_oid)
    return table


BUILTIN_TYPES: Final[Mapping[int, ResolvedType]] = MappingProxyType(_builtin_types())
"""Built-in types by OID, answered without asking the :class:`TypeResolver`."""

_BUILTIN_OID_BY_NAME: Final[Mapping[str, int]] = MappingProxyType(
    {name: oid for oid, name in _BUILTIN_TYPE_NAMES.items()}
)


@dataclass(frozen=True, slots=True)
class CachedRelation:
    """One relation as last described: the Relation message (``xid`` cleared), its derived
    schema, its column names in TupleData order, and its version (1 for the first Relation,
    +1 each time the Relation or the derived schema changes)."""

    relation: Relation
    schema: TableSchema
    column_names: tuple[str, ...]
    version: int


@dataclasses.dataclass(frozen=True)
class KnownColumns:
    """What a caller already read from the catalog about a relation's columns (``RelationCache.derive_schema``):
    its key columns as the key rule's first rule gives them (the primary key, or ``message.key.columns``), its
    NOT NULL columns and its defaults as value text (``column -> text``)."""

    key_columns: tuple[str, ...]
    not_null: AbstractSet[str]
    defaults: Mapping[str, str]


class RelationCache:
    """Latest Relation and Type messages per id, and the ``TableSchema`` derived from them.

    Not thread-safe; one instance per replication stream. Feed it every message with
    :meth:`apply` (or Relation/Type messages with :meth:`apply_relation`/:meth:`apply_type`),
    then look relations up with :meth:`get` when a change arrives.
    """

    def __init__(
        self,
        type_resolver: TypeResolver | None = None,
        *,
        not_null_columns: NotNullColumns | None = None,
        primary_key_columns: PrimaryKeyColumns | None = None,
        column_defaults: ColumnDefaults | None = None,
    ) -> None:
        self._type_resolver = type_resolver
        self._not_null_columns = not_null_columns
        self._primary_key_columns = primary_key_columns
        self._column_defaults = column_defaults
        self._entries: dict[int, CachedRelation] = {}
        self._type_messages: dict[int, Type] = {}
        self._resolved: dict[int, ResolvedType] = {}

    def apply(self, message: PgOutputMessage) -> bool:
        """Record a Relation or Type message; other messages are ignored.

        Returns ``True`` when a relation's version changed (see :meth:`apply_relation`).
        """
        if isinstance(message, Relation):
            return self.apply_relation(message)
        if isinstance(message, Type):
            self.apply_type(message)
        return False

    def apply_type(self, message: Type) -> None:
        """Record a Type message and forget the memoized resolution of its OID."""
        self._type_messages[message.type_oid] = message
        self._resolved.pop(message.type_oid, None)

    def apply_relation(self, relation: Relation) -> bool:
        """Record a Relation message, replacing any earlier one with the same id.

        Derives the schema now (calling the resolver and the I/O callables; their errors
        propagate and leave the previous entry in place). Returns ``True`` and bumps the
        version if the relation is new or its Relation or schema differs from the previous
        one; a re-sent identical Relation (new session, harmless invalidation) returns False.
        """
        relation = dataclasses.replace(relation, xid=None) if relation.xid is not None else relation
        schema = self._build_schema(relation)
        previous = self._entries.get(relation.relation_id)
        if previous is not None and previous.relation == relation and previous.schema == schema:
            return False
        version = 1 if previous is None else previous.version + 1
        names = tuple(column.name for column in relation.columns)
        self._entries[relation.relation_id] = CachedRelation(relation, schema, names, version)
        return True

    def derive_schema(self, relation: Relation, known: KnownColumns | None = None) -> TableSchema:
        """The schema this cache derives for ``relation`` (with the same type resolutions, key rule,
        NOT NULL and default look-ups as for the stream's Relation messages), without recording it.

        For a relation described from the catalog rather than the stream (an incremental snapshot's
        table): the stream's entry for the same id is left as it is, since the log may still hold
        tuples of the shape it describes (an ``ALTER TABLE`` the stream has not reached yet). ``known``: what
        the caller read from the catalog with the columns (key columns, NOT NULL columns, defaults), used instead
        of the look-ups (no catalog query then but for types). Raises what the resolver and the I/O callables raise.
        """
        return self._build_schema(relation, known)

    def get(self, relation_id: int) -> CachedRelation:
        """The relation's current entry; :class:`DecodeError` if no Relation message was seen."""
        entry = self._entries.get(relation_id)
        if entry is None:
            raise DecodeError(
                f"change for relation id {relation_id} before any Relation message describing it"
                " (pgoutput sends one before a table's first change in each session)"
            )
        return entry

    def __contains__(self, relation_id: object) -> bool:
        return relation_id in self._entries

    def version(self, relation_id: int) -> int:
        """Current version of a relation, 0 if no Relation message was seen for it."""
        entry = self._entries.get(relation_id)
        return 0 if entry is None else entry.version

    def schema(self, relation_id: int) -> TableSchema:
        """Shorthand for ``get(relation_id).schema``."""
        return self.get(relation_id).schema

    def column_names(self, relation_id: int) -> tuple[str, ...]:
        """Column names in the order of this relation's TupleData values."""
        return self.get(relation_id).column_names

    def invalidate_types(self, type_oids: Iterable[int] | None = None) -> None:
        """Forget memoized resolutions (all, or of ``type_oids``), e.g. after ``ALTER TYPE``.

        Schemas already derived are kept; they change at the next Relation message.
        """
        if type_oids is None:
            self._resolved.clear()
            return
        for oid in type_oids:
            self._resolved.pop(oid, None)

    def resolve_type(self, type_oid: int) -> ResolvedType:
        """Describe a type: built-in table, else memoized resolver, else the Type message.

        Raises :class:`TerminalSourceError` if none of them knows the OID.
        """
        builtin = BUILTIN_TYPES.get(type_oid)
        if builtin is not None:
            return builtin
        resolved = self._resolved.get(type_oid)
        if resolved is None:
            resolved = self._resolve_user_type(type_oid)
            self._resolved[type_oid] = resolved
        return resolved

    def _resolve_user_type(self, type_oid: int) -> ResolvedType:
        if self._type_resolver is not None:
            return self._type_resolver(type_oid)
        message = self._type_messages.get(type_oid)
        if message is None:
            raise TerminalSourceError(
                f"type OID {type_oid} is not built in, no Type message described it and no"
                " TypeResolver is configured"
            )
        # For a domain pgoutput sends the base type's name: point at the built-in base if any.
        base_oid = _BUILTIN_OID_BY_NAME.get(message.name) if message.namespace == "pg_catalog" else None
        return ResolvedType(message.name, base_type_oid=base_oid)

    def _build_schema(self, relation: Relation, known: KnownColumns | None = None) -> TableSchema:
        namespace, table = relation.namespace, relation.name
        if known is not None:
            keys = self._key_columns(relation, known.key_columns)
            not_null: AbstractSet[str] | None = known.not_null
            defaults: Mapping[str, str] = known.defaults
        else:
            keys = self._key_columns(relation)
            not_null = None if self._not_null_columns is None else self._not_null_columns(namespace, table)
            defaults = {} if self._column_defaults is None else self._column_defaults(namespace, table)
        columns = tuple(self._column(c, c.name in keys, not_null, defaults.get(c.name)) for c in relation.columns)
        return TableSchema(TableId(namespace, table), columns, key=keys)

    def _key_columns(self, relation: Relation, known: tuple[str, ...] | None = None) -> tuple[str, ...]:
        """Key column names in key order (the primary key's), by the three rules in the module
        docstring (``known``: the first rule's columns, already read)."""
        pk = known
        if pk is None and self._primary_key_columns is not None:
            pk = self._primary_key_columns(relation.namespace, relation.name)
        if pk is not None:
            names = {column.name for column in relation.columns}
            present = tuple(name for name in pk if name in names)
            if present:
                return present
        if relation.replica_identity in ("d", "i"):
            return tuple(column.name for column in relation.columns if column.is_key)
        return ()

    def _column(self, column: RelationColumn, is_key: bool, not_null: AbstractSet[str] | None,
                default_text: str | None = None) -> Column:
        type_oid, resolved, domain_modifier = self._root_type(column.type_oid)
        modifier = column.type_modifier if column.type_modifier != -1 else domain_modifier
        optional = not is_key if not_null is None else column.name not in not_null
        return Column(
            name=column.name,
            type_oid=type_oid,
            type_name=resolved.name,
            type_modifier=modifier,
            optional=optional,
            is_key=is_key,
            enum_values=self._enum_values(resolved),
            element_type_name=resolved.element_type_name,
            default_text=default_text,
        )

    def _root_type(self, type_oid: int) -> tuple[int, ResolvedType, int]:
        """Follow domains down to their root base type: (oid, description, domain typmod)."""
        resolved = self.resolve_type(type_oid)
        modifier = -1
        for _ in range(_MAX_DOMAIN_DEPTH):
            if resolved.base_type_oid is None:
                return type_oid, resolved, modifier
            if modifier == -1:
                modifier = resolved.base_type_modifier
            type_oid = resolved.base_type_oid
            resolved = self.resolve_type(type_oid)
        raise TerminalSourceError(f"domain type OID {type_oid} nests deeper than {_MAX_DOMAIN_DEPTH} levels")

    def _enum_values(self, resolved: ResolvedType) -> tuple[str, ...] | None:
        """Labels of an enum, or of an array's enum element type."""
        if resolved.enum_values is not None or resolved.element_type_oid is None:
            return resolved.enum_values
        if resolved.element_type_oid in BUILTIN_TYPES:
            return None
        return self._root_type(resolved.element_type_oid)[1].enum_values


__all__ = [
    "BUILTIN_TYPES",
    "CachedRelation",
    "NotNullColumns",
    "PrimaryKeyColumns",
    "RelationCache",
    "ResolvedType",
    "TypeResolver",
]
