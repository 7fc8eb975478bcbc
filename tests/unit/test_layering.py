"""Import rules between packages of ``signaller/`` (issue 12), checked on the source with ast.

* ``signaller/wire/`` (the Debezium wire format, no I/O) imports only ``signaller.model``,
  ``signaller.errors`` and itself, and no I/O library;
* nothing in ``signaller/sinks/`` imports from ``signaller.sources``;
* ``signaller/sources/base.py`` (what a source implements) imports only ``signaller.model`` and
  ``signaller.errors``;
* the snapshot engine (``signaller/snapshot/``) reaches a source only through
  ``signaller.sources.base``: it never imports ``signaller.sources.postgres`` (or any other source's
  folder) nor a database driver;
* the runtime (``signaller/runtime/``: the capture loop, the dispatcher, the CLI) reaches a source only
  through ``signaller.sources.base`` and ``signaller.sources.registry`` (``connector.class`` → source),
  and imports no database driver;
* ``signaller/wire/`` holds no PostgreSQL name in its code (transaction ids come from the source), and
  the Debezium connector identifier ``postgresql`` only in the ``source`` block's constants
  (:data:`WIRE_SOURCE_BLOCK_CONSTANTS`), until the source block is the source's too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import signaller

pytestmark = pytest.mark.unit

PACKAGE = Path(signaller.__file__).parent
WIRE_MAY_IMPORT = ("signaller.model", "signaller.errors", "signaller.wire")
SOURCE_BASE_MAY_IMPORT = ("signaller.model", "signaller.errors")
SNAPSHOT_MAY_IMPORT = (
    "signaller.sources.base", "signaller.model", "signaller.errors", "signaller.config", "signaller.signals",
    "signaller.patterns", "signaller.snapshot", "signaller.wire",
)
RUNTIME_MAY_IMPORT_FROM_SOURCES = ("signaller.sources.base", "signaller.sources.registry")
DATABASE_DRIVERS = ("psycopg2", "psycopg", "pymysql", "MySQLdb", "mysql", "mariadb")
WIRE_SOURCE_BLOCK_CONSTANTS = {("connect.py", "SOURCE_SCHEMA"), ("_fast.py", "CONNECTOR")}
IO_LIBRARIES = ("psycopg2", "confluent_kafka", "socket", "http", "urllib", "requests", "httpx", "fastapi", "uvicorn")


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path) -> Iterator[tuple[int, str]]:
    """``(line, absolute module name)`` of every import in ``path``, wherever it appears
    (functions and ``TYPE_CHECKING`` blocks included); ``from x import y`` yields ``x.y`` too,
    since ``y`` may be a module."""
    module = _module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield node.lineno, base
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def violations(
    folder: str, allowed: tuple[str, ...] | None = None, forbidden: tuple[str, ...] = (), package: Path = PACKAGE
) -> list[str]:
    """``file:line -> module`` for each import under ``<package>/<folder>`` (a folder or one module) of
    a ``signaller`` module outside ``allowed`` (when given) or of a module within ``forbidden``."""
    found = []
    target = package / folder
    for path in [target] if target.is_file() else sorted(target.rglob("*.py")):
        for line, name in imports_of(path, package.parent):
            bad_internal = (
                allowed is not None
                and _within(name, "signaller")
                and name != "signaller"
                and not any(_within(name, prefix) for prefix in allowed)
            )
            if bad_internal or any(_within(name, prefix) for prefix in forbidden):
                found.append(f"{path.relative_to(package.parent)}:{line} -> {name}")
    return found


def test_wire_imports_only_model_errors_and_itself() -> None:
    assert (PACKAGE / "wire").is_dir()
    assert violations("wire", allowed=WIRE_MAY_IMPORT, forbidden=IO_LIBRARIES) == []


def test_sinks_do_not_import_sources() -> None:
    assert violations("sinks", forbidden=("signaller.sources",)) == []


def test_source_interfaces_import_only_model_and_errors() -> None:
    assert (PACKAGE / "sources" / "base.py").is_file()
    assert violations("sources/base.py", allowed=SOURCE_BASE_MAY_IMPORT, forbidden=IO_LIBRARIES) == []


def test_snapshot_engine_reaches_sources_only_through_their_interfaces() -> None:
    forbidden = ("signaller.sources.postgres", "signaller.runtime", "signaller.sinks", *IO_LIBRARIES)
    assert violations("snapshot", allowed=SNAPSHOT_MAY_IMPORT, forbidden=forbidden) == []


def test_runtime_reaches_sources_only_through_their_interfaces_and_the_registry() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line} -> {name}"
        for path in sorted((PACKAGE / "runtime").rglob("*.py"))
        for line, name in imports_of(path, PACKAGE.parent)
        if (_within(name, "signaller.sources") and name != "signaller.sources"
            and not any(_within(name, prefix) for prefix in RUNTIME_MAY_IMPORT_FROM_SOURCES))
        or any(_within(name, driver) for driver in DATABASE_DRIVERS)
    ]
    assert found == []


def _code_strings_and_names(tree: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    """Every string constant that is not a docstring, and every defined or used name, of ``tree``."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            docstrings.add(id(node.value))  # attribute docstrings
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node, node.value
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node, node.name
        elif isinstance(node, ast.Name):
            yield node, node.id
        elif isinstance(node, ast.Attribute):
            yield node, node.attr
        elif isinstance(node, ast.alias):
            yield node, node.asname or node.name


def test_wire_names_postgresql_only_in_the_source_block_constants() -> None:
    """The wire format is the connectors' common one: a PostgreSQL-only value (the transaction id
    format, ...) is the source's, passed in; the ``source`` block's constants are the one exception left."""
    found: set[tuple[str, str]] = set()
    for path in sorted((PACKAGE / "wire").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        owners = {
            id(child): target.id
            for node in tree.body if isinstance(node, ast.Assign | ast.AnnAssign)
            for target in ([node.target] if isinstance(node, ast.AnnAssign) else node.targets)
            if isinstance(target, ast.Name)
            for child in ast.walk(node)
        }
        for node, text in _code_strings_and_names(tree):
            if "postgres" in text.lower():
                found.add((path.name, owners.get(id(node), f"line {getattr(node, 'lineno', '?')}: {text}")))
    assert found == WIRE_SOURCE_BLOCK_CONSTANTS


def test_checker_sees_every_import_form(tmp_path: Path) -> None:
    """The checker itself: absolute, ``from`` and relative imports, inside functions too."""
    wire = tmp_path / "signaller" / "wire"
    wire.mkdir(parents=True)
    (wire / "probe.py").write_text(
        "from signaller.sources.postgres import codecs\n"
        "from ..sinks import kafka\n"
        "import signaller.model.events\n"
        "def f() -> None:\n"
        "    import signaller.runtime.capture\n"
        "    from . import numbers\n"
        "    import psycopg2\n"
    )
    found = violations("wire", allowed=WIRE_MAY_IMPORT, forbidden=IO_LIBRARIES, package=tmp_path / "signaller")
    assert [entry.split(" -> ")[1] for entry in found] == [
        "signaller.sources.postgres",
        "signaller.sources.postgres.codecs",
        "signaller.sinks",
        "signaller.sinks.kafka",
        "signaller.runtime.capture",
        "psycopg2",
    ]
