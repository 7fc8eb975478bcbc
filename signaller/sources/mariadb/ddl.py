"""The DDL statements of a MariaDB binlog, parsed for what the change events depend on: the columns and primary
key of each table, and which tables and databases exist.

:func:`parse_ddl` reads one statement (a binlog ``QueryEvent``'s text, or ``SHOW CREATE TABLE`` output) and
returns one of the statement types below. Understood: ``CREATE TABLE`` (column list, ``LIKE``), ``ALTER TABLE``
(``ADD``/``DROP``/``MODIFY``/``CHANGE``/``RENAME COLUMN``, ``ALTER COLUMN ... SET/DROP DEFAULT``, ``ADD/DROP
PRIMARY KEY``, ``RENAME TO``, ``CONVERT TO CHARACTER SET``, the table's default character set; indexes,
constraints, partitions and table options are read past), ``RENAME TABLE``, ``DROP TABLE``, ``TRUNCATE``,
``CREATE/DROP/ALTER DATABASE``. Any other statement is :class:`OtherStatement` (no effect on tables: DML,
``GRANT``, ``CREATE INDEX``, views, routines...). A table statement that cannot be read is
:class:`UnreadableStatement`: it names the tables it is about when the head could be read, and why; the
caller decides (a captured table: a terminal error naming the statement; any other: ignored, as Debezium's
schema history ignores DDL of tables it does not capture).

Column types are kept as written (``type_name`` lower-case, MariaDB's aliases resolved: ``BOOLEAN`` is
``tinyint(1)``, ``INTEGER`` is ``int``, ``JSON`` is ``longtext`` with a ``json_valid`` check, ...). A default is
kept as ``information_schema.COLUMNS.COLUMN_DEFAULT`` prints it (a quoted literal, a bare number, ``NULL`` or
an expression's text). Executable comments (``/*! ... */``, ``/*M! ... */``) are read as code, as MariaDB runs
them. Pure; no I/O.
"""

from __future__ import annotations

from typing import Final

__all__ = ["AlterTable", "ColumnSpec", "CreateDatabase", "CreateTable", "DdlSyntaxError", "DropDatabase",
           "DropTable", "OtherStatement", "RenameTable", "Statement", "TableName", "TruncateTable",
           "UnreadableStatement", "parse_ddl"]


from signaller.sources.mariadb.ddl_statements import (
    AddColumn,
    AlterAction,
    AlterTable,
    ChangeColumn,
    ColumnSpec,
    CreateDatabase,
    CreateTable,
    DdlSyntaxError,
    DropColumn,
    DropDatabase,
    DropTable,
    OtherStatement,
    RenameColumn,
    RenameTable,
    RenameTo,
    SetCharset,
    SetDefault,
    SetPrimaryKey,
    Statement,
    TableName,
    TruncateTable,
    UnreadableStatement,
)
from signaller.sources.mariadb.ddl_syntax import DdlCursor

_TABLE_ELEMENT_SKIPPED: Final = frozenset({"KEY", "INDEX", "UNIQUE", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK",
                                           "PERIOD", "CONSTRAINT"})
_ALTER_SKIPPED: Final = frozenset({
    "ENGINE", "AUTO_INCREMENT", "COMMENT", "ROW_FORMAT", "ALGORITHM", "LOCK", "FORCE", "ORDER", "ENABLE", "DISABLE",
    "DISCARD", "IMPORT", "KEY_BLOCK_SIZE", "AVG_ROW_LENGTH", "MAX_ROWS", "MIN_ROWS", "PACK_KEYS", "CHECKSUM",
    "DELAY_KEY_WRITE", "STATS_PERSISTENT", "STATS_AUTO_RECALC", "STATS_SAMPLE_PAGES", "PAGE_CHECKSUM",
    "TRANSACTIONAL", "ENCRYPTED", "ENCRYPTION_KEY_ID", "COMPRESSION", "PAGE_COMPRESSED",
    "PAGE_COMPRESSION_LEVEL", "IETF_QUOTES", "SEQUENCE", "UNION", "INSERT_METHOD", "DATA", "INDEX", "TABLESPACE",
    "PARTITION", "COALESCE", "REORGANIZE", "EXCHANGE", "ANALYZE", "CHECK", "OPTIMIZE", "REBUILD", "REPAIR",
    "TRUNCATE", "REMOVE", "NOWAIT", "WAIT", "CONVERT_PARTITION"})


class _Parser(DdlCursor):
    def create_table(self, replace_: bool) -> CreateTable:
        if_not_exists = self.if_not_exists()
        table = self.table_name()
        if self.accept("LIKE"):
            return CreateTable(table, like=self.table_name(), if_not_exists=if_not_exists, replace=replace_)
        self.expect_punct("(")
        if self.accept("LIKE"):
            like = self.table_name()
            self.expect_punct(")")
            return CreateTable(table, like=like, if_not_exists=if_not_exists, replace=replace_)
        columns: list[ColumnSpec] = []
        primary: tuple[str, ...] = ()
        while True:
            if self.at_word("PRIMARY") or (self.at_word("CONSTRAINT") and (
                    self.at_word("PRIMARY", offset=1) or self.at_word("PRIMARY", offset=2))):
                while not self.accept("PRIMARY"):
                    self.index += 1
                self.expect("KEY")
                if self.accept("USING"):
                    self.name()
                primary = self.name_list()
                self.skip_balanced()
            elif self.at_word(*_TABLE_ELEMENT_SKIPPED) and not self.at_punct_after_name():
                self.skip_balanced()
            else:
                columns.append(self.column_spec())
            if not self.accept_punct(","):
                break
        self.expect_punct(")")
        charset = self.table_options()
        inline = tuple(c.name for c in columns if c.primary_key)
        return CreateTable(table, tuple(columns), primary or inline, charset, None, if_not_exists, replace_)

    def at_punct_after_name(self) -> bool:
        """A column named like a keyword (``key INT``): the word is followed by a type, not ``(`` or a name."""
        nxt = self.peek(1)
        return (nxt is not None and nxt.kind == "word" and self.at_word("KEY", "INDEX", "CHECK")
                and nxt.text not in ("KEY", "INDEX", "USING") and self.peek(2) is not None
                and not (self.peek(2).kind == "punct" and self.peek(2).text == "("))  # type: ignore[union-attr]

    def table_options(self) -> str | None:
        charset: str | None = None
        while (token := self.peek()) is not None and not (token.kind == "punct" and token.text == ";"):
            if self.accept("AS", "SELECT", "WITH", "IGNORE", "REPLACE") or self.at_punct("("):
                raise DdlSyntaxError(f"CREATE TABLE ... SELECT at character {token.at + 1} is not followed")
            if self.accept("PARTITION"):
                break
            self.accept("DEFAULT")
            if self.accept("CHARACTER", "CHARSET"):
                self.accept("SET")
                self.accept_punct("=")
                charset = self.name().lower()
            elif self.accept("COLLATE"):
                self.accept_punct("=")
                self.name()
            else:
                self.index += 1
                if self.accept_punct("="):
                    self.index += 1
            self.accept_punct(",")
        return charset

    def alter_table(self) -> AlterTable:
        if_exists = self.if_exists()
        table = self.table_name()
        actions: list[AlterAction] = []
        while not self.done():
            actions.extend(self.alter_action())
            if not self.accept_punct(","):
                if self.at_word("PARTITION", "REMOVE"):
                    break
                if not self.done():
                    raise self.fail("',' between ALTER TABLE clauses")
        return AlterTable(table, tuple(actions), if_exists)

    def alter_action(self) -> list[AlterAction]:
        if self.accept("ADD"):
            if self.accept("COLUMN"):
                return self.added_columns()
            if self.at_word("PRIMARY") or (self.at_word("CONSTRAINT") and self.at_word("PRIMARY", offset=2)):
                while not self.accept("PRIMARY"):
                    self.index += 1
                self.expect("KEY")
                columns = self.name_list()
                self.skip_balanced()
                return [SetPrimaryKey(columns)]
            if self.at_word(*_TABLE_ELEMENT_SKIPPED, "PARTITION", "IF") and not self.at_punct_after_name():
                self.skip_balanced()
                return []
            return self.added_columns()
        if self.accept("DROP"):
            if self.accept("PRIMARY"):
                self.expect("KEY")
                return [SetPrimaryKey(())]
            if self.at_word("INDEX", "KEY", "FOREIGN", "CONSTRAINT", "CHECK", "PARTITION", "PERIOD", "SYSTEM"):
                self.skip_balanced()
                return []
            self.accept("COLUMN")
            if_exists = self.if_exists()
            name = self.name()
            self.accept("RESTRICT", "CASCADE")
            return [DropColumn(name, if_exists)]
        if self.accept("MODIFY"):
            self.accept("COLUMN")
            if_exists = self.if_exists()
            column = self.column_spec()
            return [ChangeColumn(column.name, column, self.position(), if_exists)]
        if self.accept("CHANGE"):
            self.accept("COLUMN")
            if_exists = self.if_exists()
            old = self.name()
            column = self.column_spec()
            return [ChangeColumn(old, column, self.position(), if_exists)]
        if self.accept("RENAME"):
            if self.accept("COLUMN"):
                old = self.name()
                self.expect("TO")
                return [RenameColumn(old, self.name())]
            if self.at_word("INDEX", "KEY"):
                self.skip_balanced()
                return []
            self.accept("TO", "AS")
            return [RenameTo(self.table_name())]
        if self.accept("ALTER"):
            if self.at_word("INDEX", "KEY", "CHECK", "CONSTRAINT"):
                self.skip_balanced()
                return []
            self.accept("COLUMN")
            self.if_exists()
            name = self.name()
            if self.accept("SET"):
                if self.accept("DEFAULT"):
                    return [SetDefault(name, self.default_value())]
                self.expect("VISIBLE", "INVISIBLE")
                return []
            self.expect("DROP")
            self.expect("DEFAULT")
            return [SetDefault(name, None)]
        if self.accept("CONVERT"):
            self.expect("TO")
            self.expect("CHARACTER", "CHARSET")
            self.accept("SET")
            charset = self.name().lower()
            self.skip_balanced()
            return [SetCharset(charset, convert=True)]
        if self.at_word("DEFAULT", "CHARACTER", "CHARSET"):
            self.accept("DEFAULT")
            if self.accept("CHARACTER", "CHARSET"):
                self.accept("SET")
                self.accept_punct("=")
                charset = self.name().lower()
                self.skip_balanced()
                return [SetCharset(charset)]
            self.skip_balanced()
            return []
        if self.at_word(*_ALTER_SKIPPED, "COLLATE"):
            self.skip_balanced()
            return []
        raise self.fail("an ALTER TABLE clause")

    def added_columns(self) -> list[AlterAction]:
        if_not_exists = self.if_not_exists()
        if self.accept_punct("("):
            added: list[AlterAction] = []
            while True:
                added.append(AddColumn(self.column_spec(), None, if_not_exists))
                if not self.accept_punct(","):
                    break
            self.expect_punct(")")
            return added
        column = self.column_spec()
        return [AddColumn(column, self.position(), if_not_exists)]

    def rename_table(self) -> RenameTable:
        pairs: list[tuple[TableName, TableName]] = []
        while True:
            old = self.table_name()
            self.expect("TO")
            pairs.append((old, self.table_name()))
            if not self.accept_punct(","):
                break
        return RenameTable(tuple(pairs))

    def drop_table(self) -> DropTable:
        if_exists = self.if_exists()
        tables = [self.table_name()]
        while self.accept_punct(","):
            tables.append(self.table_name())
        return DropTable(tuple(tables), if_exists)

    def database(self, kind: str) -> Statement:
        if kind == "DROP":
            self.if_exists()
            return DropDatabase(self.name())
        if kind == "CREATE":
            self.if_not_exists()
        name = self.name()
        charset: str | None = None
        while self.peek() is not None:
            if self.accept("CHARACTER", "CHARSET"):
                self.accept("SET")
                self.accept_punct("=")
                charset = self.name().lower()
            else:
                self.index += 1
        return CreateDatabase(name, charset, alter=kind == "ALTER")


def _head(parser: _Parser) -> tuple[str, str] | None:
    """The statement's verb and object (``("ALTER", "TABLE")``), its modifiers read past; None if not DDL of
    tables or databases."""
    verb = parser.peek()
    if verb is None or verb.kind != "word":
        return None
    parser.index += 1
    if verb.text == "CREATE":
        replace_ = parser.accept("OR") and parser.expect("REPLACE") == "REPLACE"
        parser.accept("TEMPORARY")
        parser.accept("DEFINER")
        if parser.accept("TABLE"):
            return ("CREATE OR REPLACE" if replace_ else "CREATE", "TABLE")
        if parser.accept("DATABASE", "SCHEMA"):
            return ("CREATE", "DATABASE")
        return None
    if verb.text == "ALTER":
        parser.accept("ONLINE")
        parser.accept("IGNORE")
        if parser.accept("TABLE"):
            return ("ALTER", "TABLE")
        if parser.accept("DATABASE", "SCHEMA"):
            return ("ALTER", "DATABASE")
        return None
    if verb.text == "DROP":
        if parser.accept("TEMPORARY"):
            return None  # temporary tables are not in a row-based binlog's tables
        if parser.accept("TABLE"):
            return ("DROP", "TABLE")
        if parser.accept("DATABASE", "SCHEMA"):
            return ("DROP", "DATABASE")
        return None
    if verb.text == "RENAME" and parser.accept("TABLE"):
        return ("RENAME", "TABLE")
    if verb.text == "TRUNCATE":
        parser.accept("TABLE")
        return ("TRUNCATE", "TABLE")
    return None


def parse_ddl(sql: str) -> Statement:
    """One statement, parsed (see the module docstring); never raises for any input text."""
    parser = _Parser(sql)
    first = parser.peek()
    keyword = first.text if first is not None and first.kind == "word" else ""
    try:
        head = _head(parser)
    except DdlSyntaxError:
        head = None
    if head is None:
        return OtherStatement(keyword)
    verb, kind = head
    start = parser.index
    try:
        statement: Statement
        if kind == "DATABASE":
            statement = parser.database(verb)
        elif verb.startswith("CREATE"):
            statement = parser.create_table(verb != "CREATE")
        elif verb == "ALTER":
            statement = parser.alter_table()
        elif verb == "RENAME":
            statement = parser.rename_table()
        elif verb == "DROP":
            statement = parser.drop_table()
        else:
            statement = TruncateTable(parser.table_name())
        if not parser.done():
            raise parser.fail("the end of the statement")
        return statement
    except DdlSyntaxError as exc:
        parser.index = start
        tables: tuple[TableName, ...] = ()
        try:
            if kind == "TABLE":
                parser.if_exists() or parser.if_not_exists()
                tables = (parser.table_name(),)
        except DdlSyntaxError:
            pass
        return UnreadableStatement(tables, str(exc))


def table_names(statement: Statement) -> tuple[TableName, ...]:
    """Every table ``statement`` is about (both names of a rename; the copied table of ``CREATE ... LIKE``
    is not one: it is only read)."""
    if isinstance(statement, CreateTable | AlterTable | TruncateTable):
        renamed = tuple(a.table for a in statement.actions if isinstance(a, RenameTo)) \
            if isinstance(statement, AlterTable) else ()
        return (statement.table, *renamed)
    if isinstance(statement, RenameTable):
        return tuple(name for pair in statement.pairs for name in pair)
    if isinstance(statement, DropTable):
        return statement.tables
    if isinstance(statement, UnreadableStatement):
        return statement.tables
    return ()

