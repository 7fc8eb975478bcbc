"""The registry's archive is unpacked safely on every Python 3.11: with the ``data`` filter where it
exists, with the same checks where it does not (Debian 12's 3.11.2)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from devtools.registry import unpack

pytestmark = pytest.mark.unit


def _archive(tmp_path: Path, members: list[tarfile.TarInfo], name: str = "a.tar") -> Path:
    path = tmp_path / name
    with tarfile.open(path, "w") as tar:
        for member in members:
            data = b"x" * member.size if member.isfile() else None
            tar.addfile(member, io.BytesIO(data) if data is not None else None)
    return path


def _file(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = 3
    return info


def _symlink(name: str, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    return info


@pytest.fixture(params=["this Python", "without the data filter"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """``data filter`` when this run's ``unpack`` uses Python's filter, else ``own checks`` (always
    for the second parameter; for the first on Pythons before 3.11.4)."""
    if request.param == "without the data filter":
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    return "data filter" if hasattr(tarfile, "data_filter") else "own checks"


def test_a_plain_archive_unpacks(tmp_path: Path, mode: str) -> None:
    archive = _archive(tmp_path, [_file("app/lib/a.jar"), _file("app/run.jar"), _symlink("app/link", "run.jar")])
    target = tmp_path / "out"
    target.mkdir()
    with tarfile.open(archive) as tar:
        unpack(tar, target)
    assert (target / "app" / "lib" / "a.jar").read_bytes() == b"xxx"
    assert (target / "app" / "link").resolve() == (target / "app" / "run.jar").resolve()


@pytest.mark.parametrize("member", [_file("../escaped"), _symlink("app/out", "../../escaped")],
                         ids=["parent path", "escaping link"])
def test_a_member_outside_the_target_is_refused(tmp_path: Path, mode: str, member: tarfile.TarInfo) -> None:
    archive = _archive(tmp_path, [_file("app/ok"), member])
    target = tmp_path / "out"
    target.mkdir()
    with tarfile.open(archive) as tar, pytest.raises(tarfile.TarError):
        unpack(tar, target)
    assert not (tmp_path / "escaped").exists()


def test_an_absolute_member_never_lands_outside_the_target(tmp_path: Path, mode: str) -> None:
    """Python's filter puts it under the target; the own checks refuse it: either way, nothing outside."""
    outside = tmp_path / "abs" / "escaped"
    archive = _archive(tmp_path, [_file(str(outside))])
    target = tmp_path / "out"
    target.mkdir()
    try:
        with tarfile.open(archive) as tar:
            unpack(tar, target)
    except tarfile.TarError:
        assert mode == "own checks"
    else:
        assert mode == "data filter"
        assert (target / str(outside).lstrip("/")).exists()
    assert not outside.exists()
