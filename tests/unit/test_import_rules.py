"""Import rules, read from the source with ``ast`` (every import counts: top level, in functions, under
``TYPE_CHECKING``):

* no module of ``bench/`` or ``devtools/`` is part of an import cycle among the modules of its tree;
* no module of ``signaller/``, ``bench/`` or ``devtools/`` imports another module's private
  (underscore) name, nor a private module from outside the package that owns it (``pkg._impl`` is
  ``pkg``'s business: its own modules may import it, no one else may).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PRIVACY_TREES = ("signaller", "bench", "devtools")
ACYCLIC_TREES = ("bench", "devtools")


def _modules(tree: str) -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``tree`` (a package's name is its ``__init__``)."""
    found: dict[str, Path] = {}
    for path in sorted((ROOT / tree).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


ALL_MODULES = {name: path for tree in PRIVACY_TREES for name, path in _modules(tree).items()}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _package_of(module: str) -> str:
    return module if ALL_MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


def _imports(module: str) -> Iterator[tuple[int, str, str | None]]:
    """``(line, imported module, imported name or None)`` for every import statement of ``module``;
    ``from pkg import sub`` where ``pkg.sub`` is a module yields ``(line, "pkg.sub", None)``."""
    tree = ast.parse(ALL_MODULES[module].read_text(), str(ALL_MODULES[module]))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = _package_of(module).split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                if f"{base}.{alias.name}" in ALL_MODULES:
                    yield node.lineno, f"{base}.{alias.name}", None
                else:
                    yield node.lineno, base, alias.name


def _private_import(importer: str, target: str, name: str | None) -> str | None:
    """Why this import breaks the privacy rule, or None."""
    if name is not None and _is_private(name):
        return f"imports the private name {name} of {target}"
    parts = target.split(".")
    for index, part in enumerate(parts):
        if _is_private(part):
            owner = ".".join(parts[:index])
            if not (importer == owner or importer.startswith(owner + ".")):
                return f"imports {target}, private to {owner or 'its tree'}"
    return None


def test_no_import_of_a_private_name_from_another_module() -> None:
    problems = [f"{ALL_MODULES[module].relative_to(ROOT)}:{line}: {why}"
                for module in ALL_MODULES for line, target, name in _imports(module)
                if (why := _private_import(module, target, name)) is not None]
    assert problems == []


def _cycles(tree: str) -> list[list[str]]:
    """The strongly connected components of ``tree``'s import graph with more than one module (or a
    module importing itself), each sorted (Tarjan's algorithm)."""
    modules = _modules(tree)
    graph = {module: sorted({target for _, target, _ in _imports(module) if target in modules and target != module})
             for module in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in graph[node]:
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for module in graph:
        if module not in index:
            visit(module)
    return components


@pytest.mark.parametrize("tree", ACYCLIC_TREES)
def test_no_import_cycle(tree: str) -> None:
    assert _cycles(tree) == []


def test_the_rules_catch_what_they_are_for() -> None:
    """The checker itself: a private name, a private module from outside its package, a cycle."""
    assert _private_import("bench.debezium", "bench.streaming", "_Stamper")
    assert _private_import("signaller.runtime.capture", "signaller.sinks._fast", None)
    assert _private_import("signaller.sinks.kafka", "signaller.sinks._fast", None) is None
    assert _private_import("signaller.sinks", "signaller.sinks._fast", None) is None
    assert _private_import("bench.run", "bench.streaming", "run_streaming") is None
    assert _private_import("bench.run", "__future__", "annotations") is None


def test_the_product_imports_nothing_that_stays_in_the_repository() -> None:
    """``signaller`` is what the wheel installs: it may not import the dev tree, the benchmarks, the tests
    or the documentation's generator, which an installed wheel does not have."""
    repository_only = ("devtools", "bench", "tests", "schemas")
    problems = [f"{ALL_MODULES[module].relative_to(ROOT)}:{line}: imports {target}"
                for module in _modules("signaller") for line, target, _ in _imports(module)
                if target.split(".")[0] in repository_only]
    assert problems == []
