"""Copy a Maven project's runtime dependencies, or one artifact, (resolved from Maven Central) into the cache.

The copy is keyed by a hash of the pom (or by the artifact's coordinates): a second call with the same
pom does nothing, so ``make test`` run twice resolves jars once. Maven's own ``~/.m2`` cache makes a
copy into a fresh clone fast too.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

from signaller.errors import TransientError


class MavenError(TransientError):
    """Maven could not resolve or copy the jars; the message shows its output."""


def copy_dependencies(pom: Path, target: Path, parents: tuple[Path, ...] = ()) -> Path:
    """Ensure ``target`` holds the runtime dependencies of ``pom``; return ``target``. ``parents`` are the
    poms ``pom`` inherits from: a change to them, too, copies again."""
    digest = hashlib.sha256(b"".join(path.read_bytes() for path in (pom, *parents))).hexdigest()[:16]
    stamp = target / f".resolved-{digest}"
    if stamp.exists():
        return target
    _run_mvn(
        ["-f", str(pom), "dependency:copy-dependencies", f"-DoutputDirectory={target}", "-DincludeScope=runtime"],
        target, str(pom),
    )
    stamp.write_text(digest)
    return target


def copy_artifact(coordinates: str, target: Path) -> Path:
    """Ensure ``target`` holds the one artifact ``group:artifact:version[:type[:classifier]]`` (without its
    dependencies, and without reading its pom's parents: some distributions' parent poms are not on
    Central); return the copied file. A second call with the same coordinates does nothing."""
    digest = hashlib.sha256(coordinates.encode()).hexdigest()[:16]
    stamp = target / f".resolved-{digest}"
    if stamp.exists():
        return target / stamp.read_text()
    _run_mvn(["dependency:copy", f"-Dartifact={coordinates}", f"-DoutputDirectory={target}"], target, coordinates)
    copied = [path for path in target.iterdir() if not path.name.startswith(".")]
    if len(copied) != 1:
        msg = f"mvn dependency:copy of {coordinates} left {len(copied)} files in {target}, expected 1"
        raise MavenError(msg)
    stamp.write_text(copied[0].name)
    return copied[0]


def _run_mvn(arguments: list[str], target: Path, what: str) -> None:
    """Run ``mvn -B -q <arguments>`` into a fresh, empty ``target``; raise ``MavenError`` with its output."""
    if shutil.which("mvn") is None:
        msg = "Maven (mvn) is not on PATH: install it (Debian: apt-get install maven) to resolve jars"
        raise MavenError(msg)
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    result = subprocess.run(["mvn", "-B", "-q", *arguments], capture_output=True, text=True, check=False, cwd=target)
    if result.returncode != 0:
        msg = f"mvn failed for {what} (exit {result.returncode}):\n{result.stdout[-4000:]}{result.stderr[-4000:]}"
        raise MavenError(msg)
