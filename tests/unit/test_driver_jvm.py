"""spark_jobs.driver_jvm: which Java the local driver runs, its version's options, its classpath."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from spark_jobs import driver_jvm
from spark_jobs.job_config import JobConfigError


def _jdk(root: Path, version_line: str | None) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "java").write_text("#!/bin/sh\n")
    if version_line is not None:
        (root / "release").write_text(f'IMPLEMENTOR="x"\n{version_line}\nJAVA_RUNTIME_VERSION="y"\n')
    return root


def test_no_java_home_is_chosen_when_the_variable_is_unset_or_empty() -> None:
    assert driver_jvm.chosen_java_home({}) is None
    assert driver_jvm.chosen_java_home({driver_jvm.JAVA_HOME_ENV: "  "}) is None


def test_a_jdk_home_is_chosen(tmp_path: Path) -> None:
    home = _jdk(tmp_path / "jdk", 'JAVA_VERSION="25.0.3"')
    assert driver_jvm.chosen_java_home({driver_jvm.JAVA_HOME_ENV: str(home)}) == home


def test_a_directory_without_java_is_refused_naming_the_variable_and_path(tmp_path: Path) -> None:
    with pytest.raises(JobConfigError) as error:
        driver_jvm.chosen_java_home({driver_jvm.JAVA_HOME_ENV: str(tmp_path)})
    assert driver_jvm.JAVA_HOME_ENV in str(error.value)
    assert str(tmp_path) in str(error.value)
    assert "bin/java" in str(error.value)


@pytest.mark.parametrize(("line", "feature"), [
    ('JAVA_VERSION="25.0.3"', 25),
    ('JAVA_VERSION="17.0.15"', 17),
    ('JAVA_VERSION="21"', 21),
    ('JAVA_VERSION="1.8.0_392"', 8),
    ('JAVA_VERSION="unknown"', None),
    (None, None),
])
def test_the_feature_release_is_read_from_the_release_file(tmp_path: Path, line: str | None,
                                                          feature: int | None) -> None:
    assert driver_jvm.java_feature(_jdk(tmp_path / "jdk", line), {}) == feature


def test_without_a_chosen_home_the_feature_comes_from_java_home(tmp_path: Path) -> None:
    home = _jdk(tmp_path / "jdk", 'JAVA_VERSION="25.0.1"')
    assert driver_jvm.java_feature(None, {"JAVA_HOME": str(home)}) == 25
    assert driver_jvm.java_feature(None, {}) is None


def test_without_any_home_the_feature_comes_from_the_java_on_the_path(tmp_path: Path) -> None:
    home = _jdk(tmp_path / "jvm" / "jdk-25", 'JAVA_VERSION="25.0.3"')
    (home / "bin" / "java").chmod(0o755)
    alternatives = tmp_path / "bin"
    alternatives.mkdir()
    (alternatives / "java").symlink_to(home / "bin" / "java")
    assert driver_jvm.java_feature(None, {"PATH": str(alternatives)}) == 25
    assert driver_jvm.java_feature(None, {"PATH": str(tmp_path / "empty")}) is None


def test_options_are_added_only_for_a_java_known_to_accept_them() -> None:
    base = "-XX:+UseParallelGC"
    assert driver_jvm.driver_options(base, None) == base
    assert driver_jvm.driver_options(base, 17) == base
    assert driver_jvm.driver_options(base, 24) == f"--sun-misc-unsafe-memory-access=allow {base}"
    assert driver_jvm.driver_options(base, 25) == (
        f"-XX:+UseCompactObjectHeaders --sun-misc-unsafe-memory-access=allow {base}")
    assert driver_jvm.driver_options("", 26) == "-XX:+UseCompactObjectHeaders --sun-misc-unsafe-memory-access=allow"


def test_the_driver_classpath_holds_the_hadoop_client_jars_only(tmp_path: Path) -> None:
    for name in ("hadoop-client-api-3.5.0.jar", "hadoop-client-runtime-3.5.0.jar", "parquet-hadoop-1.16.0.jar",
                 "delta-spark_2.13-4.4.0.jar", "unitycatalog-hadoop-0.6.0.jar"):
        (tmp_path / name).write_bytes(b"")
    expected = [str(tmp_path / "hadoop-client-api-3.5.0.jar"), str(tmp_path / "hadoop-client-runtime-3.5.0.jar")]
    assert driver_jvm.driver_classpath(tmp_path).split(os.pathsep) == expected
    assert driver_jvm.driver_classpath(tmp_path / "missing") == ""


def test_java_home_is_set_only_while_launching(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", "/before")
    with driver_jvm.launching_with(tmp_path):
        assert os.environ["JAVA_HOME"] == str(tmp_path)
    assert os.environ["JAVA_HOME"] == "/before"
    monkeypatch.delenv("JAVA_HOME")
    with pytest.raises(RuntimeError), driver_jvm.launching_with(tmp_path):
        assert os.environ["JAVA_HOME"] == str(tmp_path)
        raise RuntimeError("launch failed")
    assert "JAVA_HOME" not in os.environ
    with driver_jvm.launching_with(None):
        assert "JAVA_HOME" not in os.environ
