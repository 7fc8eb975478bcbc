"""``pip install signaller`` installs the sidecar and the Spark job, nothing else.

The dev tree (``devtools/``), the documented wire formats (``schemas/``), ``tests/`` and ``bench/`` stay
in the repository; the signal JSON Schema ships as package data of ``signaller.signals``. Checked twice:
on the packaging configuration (fast), and on a wheel built from a copy of the repository with the
pinned build backend (a few seconds).
"""

from __future__ import annotations

import fnmatch
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = {"signaller", "spark_jobs"}
NOT_SHIPPED = {"devtools", "schemas", "tests", "bench"}
SCHEMA = "signaller/signals/signal.schema.json"


def _setuptools_config() -> dict:  # type: ignore[type-arg]
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _packages_in_repo() -> list[str]:
    """Every directory with an ``__init__.py``, as a dotted name (what ``packages.find`` looks at)."""
    return sorted(".".join(init.parent.relative_to(ROOT).parts) for init in ROOT.glob("*/**/__init__.py")
                  if not init.relative_to(ROOT).parts[0].startswith("."))


def test_package_discovery_includes_only_the_sidecar_and_the_spark_job() -> None:
    find = _setuptools_config()["packages"]["find"]
    packages = _packages_in_repo()
    included = [name for name in packages if any(fnmatch.fnmatchcase(name, p) for p in find["include"])
                and not any(fnmatch.fnmatchcase(name, p) for p in find.get("exclude", ()))]
    assert {name.split(".")[0] for name in included} == SHIPPED
    assert {name.split(".")[0] for name in packages} >= NOT_SHIPPED, "a dev-only tree is no package any more?"


def test_the_signal_schema_is_package_data_of_the_package_that_loads_it() -> None:
    package_data = _setuptools_config()["package-data"]
    assert package_data == {"signaller.signals": ["signal.schema.json"]}
    assert (ROOT / SCHEMA).is_file()
    assert 'files("signaller.signals").joinpath("signal.schema.json")' in (
        ROOT / "signaller" / "signals" / "parsing.py").read_text()


def test_the_built_wheel_holds_only_the_sidecar_the_spark_job_and_the_schema(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for name in sorted(SHIPPED | NOT_SHIPPED):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "results"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "wheel"),
                            str(source)], capture_output=True, text=True, timeout=300, check=False)
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "wheel").glob("signaller-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if ".dist-info/" not in name}
    assert top == SHIPPED, sorted(top)
    assert SCHEMA in names
    assert [name for name in names if not name.endswith(".py") and ".dist-info/" not in name] == [SCHEMA]
    (top_level,) = [name for name in names if name.endswith(".dist-info/top_level.txt")]
    assert set(zipfile.ZipFile(wheel).read(top_level).decode().split()) == SHIPPED


def test_the_product_cli_has_no_dev_commands() -> None:
    """``signaller stack`` and ``signaller demo`` moved to ``python -m devtools``."""
    from typer.testing import CliRunner

    from signaller.runtime.cli import app

    for command in (["stack", "status"], ["demo", "--help"]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 2 and "No such command" in result.output, (command, result.output)
