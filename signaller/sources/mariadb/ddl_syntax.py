"""The reading half of the MariaDB DDL parser (:mod:`signaller.sources.mariadb.ddl`): the tokenizer (backquoted
names, quoted strings with MariaDB's escapes, numbers, hex and bit literals; comments dropped, executable comments
``/*! ... */`` read as code) and :class:`DdlCursor`, a cursor over the tokens that reads names, lists, balanced
groups and column definitions (:meth:`DdlCursor.column_spec`: MariaDB's type aliases resolved, defaults as the
catalog prints them). Raises :class:`~signaller.sources.mariadb.ddl_statements.DdlSyntaxError` naming the token
and its character offset. Pure; no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Final

from signaller.sources.mariadb.ddl_statements import ColumnSpec, DdlSyntaxError, TableName

__all__ = ["DdlCursor", "Token", "tokens"]

# -- tokens --------------------------------------------------------------------------------------------------

_TOKEN: Final = re.compile(r"""
    (?P<space>\s+)
  | (?P<exec>/\*M?!\d*)
  | (?P<comment>/\*.*?\*/|--(?:[ \t][^\n]*)?(?:\n|$)|\#[^\n]*)
  | (?P<close>\*/)
  | (?P<ident>`(?:[^`]|``)*`)
  | (?P<string>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")
  | (?P<hex>[xX]'[0-9a-fA-F]*'|[bB]'[01]*'|0x[0-9a-fA-F]+|0b[01]+)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?![A-Za-z_$]))
  | (?P<word>[A-Za-z0-9_$\x80-\uffff]+)
  | (?P<punct>.)
""", re.VERBOSE | re.DOTALL)
_ESCAPES: Final = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a"}


@dataclass(frozen=True, slots=True)
class Token:
    """One token: ``kind`` (word, ident, string, hex, number, punct), ``text`` (words upper-cased, names and
    strings unquoted), ``raw`` as written and ``at`` its character offset."""

    kind: str  # word, ident, string, hex, number, punct
    text: str  # words upper-cased; identifiers and strings unquoted
    raw: str
    at: int


def _unquote_string(raw: str) -> str:
    quote, body = raw[0], raw[1:-1]
    out: list[str] = []
    index = 0
    while index < len(body):
        char = body[index]
        if char == "\\" and index + 1 < len(body):
            nxt = body[index + 1]
            out.append(_ESCAPES.get(nxt, nxt if nxt not in "%_" else "\\" + nxt))
            index += 2
        elif char == quote and body[index + 1: index + 2] == quote:
            out.append(quote)
            index += 2
        else:
            out.append(char)
            index += 1
    return "".join(out)


def tokens(sql: str) -> list[Token]:
    """The tokens of ``sql`` (see the module docstring)."""
    tokens: list[Token] = []
    for match in _TOKEN.finditer(sql):
        kind = match.lastgroup or "punct"
        raw = match.group()
        if kind in ("space", "comment", "exec", "close"):
            continue
        if kind == "ident":
            text = raw[1:-1].replace("``", "`")
        elif kind == "string":
            text = _unquote_string(raw)
        elif kind == "word":
            text = raw.upper()
        else:
            text = raw
        tokens.append(Token(kind, text, raw, match.start()))
    return tokens



_TYPE_ALIASES: Final = {"integer": "int", "int4": "int", "int1": "tinyint", "int2": "smallint",
                        "int3": "mediumint", "int8": "bigint", "middleint": "mediumint", "dec": "decimal",
                        "numeric": "decimal", "fixed": "decimal", "real": "double", "float8": "double",
                        "float4": "float", "character": "char", "nchar": "char", "nvarchar": "varchar",
                        "bool": "tinyint", "boolean": "tinyint", "long": "mediumtext"}


KNOWN_TYPES: Final = frozenset({
    "tinyint", "smallint", "mediumint", "int", "bigint", "decimal", "float", "double", "bit", "year", "date", "time",
    "datetime", "timestamp", "char", "varchar", "tinytext", "text", "mediumtext", "longtext", "binary", "varbinary",
    "tinyblob", "blob", "mediumblob", "longblob", "enum", "set", "json", "geometry", "point", "linestring",
    "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection", "uuid", "inet4", "inet6"})
"""The column types (after :data:`_TYPE_ALIASES`) the parser accepts; any other word is a syntax error."""


class DdlCursor:
    """A cursor over one statement's tokens (see the module docstring); parsers subclass it."""

    def __init__(self, sql: str) -> None:
        self.sql = sql
        self.tokens = tokens(sql)
        self.index = 0

    # cursor
    def peek(self, offset: int = 0) -> Token | None:
        """The token ``offset`` ahead, None past the end."""
        index = self.index + offset
        return self.tokens[index] if index < len(self.tokens) else None

    def at_word(self, *words: str, offset: int = 0) -> bool:
        """Whether the token ``offset`` ahead is one of the keywords ``words``."""
        token = self.peek(offset)
        return token is not None and token.kind == "word" and token.text in words

    def at_punct(self, char: str) -> bool:
        """Whether the next token is the punctuation ``char``."""
        token = self.peek()
        return token is not None and token.kind == "punct" and token.text == char

    def accept(self, *words: str) -> bool:
        """Read past the next token if it is one of ``words``; whether it was."""
        if self.at_word(*words):
            self.index += 1
            return True
        return False

    def accept_punct(self, char: str) -> bool:
        """Read past the next token if it is ``char``; whether it was."""
        if self.at_punct(char):
            self.index += 1
            return True
        return False

    def fail(self, expected: str) -> DdlSyntaxError:
        """The syntax error naming the next token and what was ``expected`` instead."""
        token = self.peek()
        found = f"{token.raw!r} at character {token.at + 1}" if token else "the end of the statement"
        return DdlSyntaxError(f"expected {expected}, found {found}")

    def expect(self, *words: str) -> str:
        """Read one of the keywords ``words`` (returned), else ``DdlSyntaxError``."""
        token = self.peek()
        if token is None or token.kind != "word" or token.text not in words:
            raise self.fail(" or ".join(words))
        self.index += 1
        return token.text

    def expect_punct(self, char: str) -> None:
        """Read the punctuation ``char``, else ``DdlSyntaxError``."""
        if not self.accept_punct(char):
            raise self.fail(repr(char))

    def done(self) -> bool:
        """Whether only ``;`` is left (read past)."""
        while self.accept_punct(";"):
            pass
        return self.peek() is None

    def name(self) -> str:
        """A name: a word, a backquoted or double-quoted identifier."""
        token = self.peek()
        if token is None or (token.kind not in ("word", "ident") and not (token.kind == "string" and
                                                                          token.raw[0] == '"')):
            raise self.fail("a name")
        self.index += 1
        return token.raw if token.kind == "word" else token.text

    def table_name(self) -> TableName:
        """``name`` or ``database.name``."""
        first = self.name()
        if self.at_punct(".") and self.peek(1) is not None:
            self.index += 1
            return TableName(first, self.name())
        return TableName(None, first)

    def if_exists(self) -> bool:
        """Read past ``IF EXISTS``; whether it was there."""
        if self.at_word("IF") and self.at_word("EXISTS", offset=1):
            self.index += 2
            return True
        return False

    def if_not_exists(self) -> bool:
        """Read past ``IF NOT EXISTS``; whether it was there."""
        if self.at_word("IF") and self.at_word("NOT", offset=1) and self.at_word("EXISTS", offset=2):
            self.index += 3
            return True
        return False

    def skip_balanced(self) -> str:
        """Skip to the next ``,`` or ``)`` (or ``;``/the end) at this nesting depth; the raw text skipped."""
        start, depth = self.peek(), 0
        last = start
        while (token := self.peek()) is not None:
            if token.kind == "punct":
                if token.text == "(":
                    depth += 1
                elif token.text == ")":
                    if depth == 0:
                        break
                    depth -= 1
                elif token.text in ",;" and depth == 0:
                    break
            last = token
            self.index += 1
        if start is None or last is None or start is self.peek():
            return ""
        return self.sql[start.at: last.at + len(last.raw)]

    def parenthesized(self) -> str:
        """A ``( ... )`` group; its raw text with the parentheses."""
        start = self.peek()
        self.expect_punct("(")
        self.skip_balanced()
        end = self.peek()
        self.expect_punct(")")
        assert start is not None and end is not None
        return self.sql[start.at: end.at + 1]

    def name_list(self) -> tuple[str, ...]:
        """``(a, b(10) DESC, ...)``: the column names of an index list."""
        self.expect_punct("(")
        names: list[str] = []
        while True:
            names.append(self.name())
            if self.at_punct("("):
                self.parenthesized()
            self.accept("ASC", "DESC")
            if not self.accept_punct(","):
                break
        self.expect_punct(")")
        return tuple(names)

    # column definitions
    def data_type(self) -> tuple[str, tuple[str, ...], dict[str, object]]:
        """A column type: its lower-case name (aliases resolved), arguments and implied attributes."""
        token = self.peek()
        if token is None or token.kind != "word":
            raise self.fail("a column type")
        self.index += 1
        word = token.text.lower()
        extra: dict[str, object] = {}
        if word == "double" and self.accept("PRECISION"):
            pass
        elif word == "national":
            word = self.expect("CHAR", "CHARACTER", "VARCHAR").lower()
            extra["charset"] = "utf8mb3"
        elif word in ("character", "char") and self.accept("VARYING"):
            word = "varchar"
        elif word == "long":
            word = "mediumtext" if not self.accept("VARBINARY") else "mediumblob"
            self.accept("VARCHAR")
        if word in ("nchar", "nvarchar"):
            extra["charset"] = "utf8mb3"
        params: tuple[str, ...] = ()
        if self.at_punct("("):
            self.index += 1
            values: list[str] = []
            while True:
                item = self.peek()
                if item is None or item.kind not in ("number", "string"):
                    raise self.fail("a type argument")
                values.append(item.text)
                self.index += 1
                if not self.accept_punct(","):
                    break
            self.expect_punct(")")
            params = tuple(values)
        if word in ("bool", "boolean"):
            params = ("1",)
        elif word == "json":
            word, extra["is_json"] = "longtext", True
            extra.setdefault("charset", "utf8mb4")
            extra["collation"] = "utf8mb4_bin"
        elif word == "serial":
            word = "bigint"
            extra.update(unsigned=True, nullable=False, auto_increment=True)
        resolved = _TYPE_ALIASES.get(word, word)
        if resolved not in KNOWN_TYPES:
            msg = f"unknown column type {token.raw!r} at character {token.at + 1}"
            raise DdlSyntaxError(msg)
        return resolved, params, extra

    def default_value(self) -> str:
        """A ``DEFAULT`` value as ``information_schema.COLUMNS.COLUMN_DEFAULT`` prints it."""
        token = self.peek()
        if token is None:
            raise self.fail("a default value")
        if token.kind == "punct" and token.text in "+-" and (nxt := self.peek(1)) and nxt.kind == "number":
            self.index += 2
            return ("-" if token.text == "-" else "") + nxt.text
        if token.kind == "punct" and token.text == "(":
            return self.parenthesized()
        self.index += 1
        if token.kind == "string":
            return "'" + token.text.replace("\\", "\\\\").replace("'", "''") + "'"
        if token.kind in ("number", "hex"):
            return token.raw
        if token.kind == "word":
            if token.text in ("NULL", "TRUE", "FALSE"):
                return {"NULL": "NULL", "TRUE": "1", "FALSE": "0"}[token.text]
            if self.at_punct("("):
                return token.raw.lower() + self.parenthesized()
            if token.text in ("CURRENT_TIMESTAMP", "NOW", "LOCALTIME", "LOCALTIMESTAMP"):
                return "current_timestamp()"
            return token.raw
        raise self.fail("a default value")

    def column_spec(self) -> ColumnSpec:
        """One column definition: name, type, then its attributes up to ``,``/``)``/``FIRST``/``AFTER``."""
        name = self.name()
        type_name, params, extra = self.data_type()
        spec = ColumnSpec(name, type_name, params)
        fields: dict[str, object] = dict(extra)
        while (token := self.peek()) is not None and not (token.kind == "punct" and token.text in ",);"):
            if self.at_word("FIRST", "AFTER"):
                break
            if self.accept("UNSIGNED"):
                fields["unsigned"] = True
            elif self.accept("SIGNED"):
                pass
            elif self.accept("ZEROFILL"):
                fields["zerofill"] = fields["unsigned"] = True
            elif self.at_word("CHARACTER") or self.at_word("CHARSET"):
                if self.accept("CHARACTER"):
                    self.expect("SET")
                else:
                    self.index += 1
                fields["charset"] = self.name().lower()
            elif self.accept("COLLATE"):
                fields["collation"] = self.name().lower()
            elif self.accept("BINARY", "ASCII", "UNICODE", "BYTE"):
                pass
            elif self.accept("NOT"):
                self.expect("NULL")
                fields["nullable"] = False
            elif self.accept("NULL"):
                fields["nullable"] = True
            elif self.accept("DEFAULT"):
                fields["default"] = self.default_value()
            elif self.accept("ON"):
                self.expect("UPDATE")
                self.default_value()
            elif self.accept("AUTO_INCREMENT"):
                fields["auto_increment"] = True
            elif self.accept("PRIMARY"):
                self.expect("KEY")
                fields["primary_key"] = True
            elif self.accept("KEY"):
                fields["primary_key"] = True
            elif self.accept("UNIQUE"):
                self.accept("KEY")
            elif self.accept("COMMENT"):
                comment = self.peek()
                if comment is None or comment.kind != "string":
                    raise self.fail("a comment string")
                self.index += 1
                fields["comment"] = comment.text
            elif self.accept("CONSTRAINT"):
                if not self.at_word("CHECK"):
                    self.name()
            elif self.accept("CHECK"):
                check = self.parenthesized().lower()
                if re.search(rf"json_valid\(\s*`?{re.escape(name.lower())}`?\s*\)", check):
                    fields["is_json"] = True
            elif self.accept("GENERATED"):
                self.expect("ALWAYS")
                self.expect("AS")
                self.parenthesized()
                fields["generated"] = True
            elif self.accept("AS"):
                self.parenthesized()
                fields["generated"] = True
            elif self.accept("VIRTUAL", "STORED", "PERSISTENT", "INVISIBLE"):
                pass
            elif self.accept("COLUMN_FORMAT", "STORAGE"):
                self.name()
            elif self.accept("COMPRESSED"):
                if self.accept_punct("="):
                    self.name()
            elif self.accept("REFERENCES"):
                self.table_name()
                if self.at_punct("("):
                    self.parenthesized()
                while self.accept("ON", "MATCH"):
                    self.skip_reference_action()
            elif self.accept("WITH", "WITHOUT"):
                self.expect("SYSTEM")
                self.expect("VERSIONING")
            else:
                raise self.fail(f"a column attribute of column {name!r}")
        return replace(spec, **fields)  # type: ignore[arg-type]

    def skip_reference_action(self) -> None:
        """Read past one ``ON DELETE``/``ON UPDATE``/``MATCH`` clause of ``REFERENCES``."""
        self.accept("DELETE", "UPDATE", "FULL", "PARTIAL", "SIMPLE")
        if self.accept("SET"):
            self.expect("NULL", "DEFAULT")
        elif self.accept("NO"):
            self.expect("ACTION")
        else:
            self.accept("RESTRICT", "CASCADE")

    def position(self) -> str | None:
        """``FIRST`` (``""``), ``AFTER name`` (the name) or nothing (None)."""
        if self.accept("FIRST"):
            return ""
        if self.accept("AFTER"):
            return self.name()
        return None

    # statements
