"""Copy a Maven project's runtime dependencies (resolved from Maven Central) into the cache.

The copy is keyed by a hash of the pom: a second call with the same pom does nothing, so
``make test`` run twice resolves jars once. Maven's own ``~/.m2`` cache makes a copy into a
fresh clone fast too.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

from signaller.errors import TransientError


class MavenError(TransientError):
    """Maven could not resolve or copy the jars; the message shows its output."""


def copy_dependencies(pom: Path, target: Path) -> Path:
    """Ensure ``target`` holds the runtime dependencies of ``pom``; return ``target``."""
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()[:16]
    stamp = target / f".resolved-{digest}"
    if stamp.exists():
        return target
    if shutil.which("mvn") is None:
        msg = "Maven (mvn) is not on PATH: install it (Debian: apt-get install maven) to resolve jars"
        raise MavenError(msg)
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    argv = [
        "mvn", "-B", "-q", "-f", str(pom), "dependency:copy-dependencies",
        f"-DoutputDirectory={target}", "-DincludeScope=runtime",
    ]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        msg = f"mvn failed for {pom} (exit {result.returncode}):\n{result.stdout[-4000:]}{result.stderr[-4000:]}"
        raise MavenError(msg)
    stamp.write_text(digest)
    return target
