"""The driver JVM that ``spark_jobs.session.build_session`` launches: which Java runs it, the
options only some Java versions accept, and the jars that must come before pyspark's own.

Which Java: ``SIGNALLER_SPARK_JAVA_HOME`` when set (a JDK's home directory; the dev tree's
``Makefile`` sets it to a Java 25 when the machine has one), else pyspark's own choice
(``JAVA_HOME``, else ``java`` on the ``PATH``). Only the driver JVM is chosen here: executors of a
cluster run the cluster's Java.

Why Java 25, measured with the bench's throughput runs alone (the dev harness: a fresh JVM, a
1,000-change warm-up batch, then three runs of a 10,000- and a 100,000-change batch into the
bench's 1,000,000-row table, ``local[2]``): Java 17 against Java 25 (compact object headers, some
sittings with an AOT cache), one JVM each per sitting, the median of the three 100,000-change
batches: 17,517 / 19,150 (AOT), 19,073 / 18,284 (AOT), 18,994 / 20,132, 15,505 / 19,639 and
15,936 / 17,608 changes/s; the garbage collector's CPU per such batch ~0.6-0.9 s on 17,
~0.3-0.6 s on 25. The first large batch of a fresh JVM (~13,000/s) and the warm-up batch
(~18 s) are as slow on both: most of them is the JIT compiling Spark's and Delta's code. An AOT
cache (JEP 483/515, ``-XX:AOTCache`` trained on the same runs) cut the warm-up batch to
12.5-13.7 s and lifted the first large batch by ~10-20 %, not the later ones; it is not used (a
230 MB file per jar set and option set, trained by a run that must exit cleanly).

Hadoop: pyspark 4.1.1 bundles Hadoop's client 3.4.2, whose ``UserGroupInformation`` calls
``Subject.getSubject``, which Java 24 and later refuse (JEP 486), so Spark does not start on them.
Hadoop 3.5.0's client does not; ``compose/local/spark/pom.xml`` copies it into the jars
directory, and a local driver puts it first on its classpath (:func:`driver_classpath`), on every
Java, so one Hadoop version runs whatever the JDK.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

from spark_jobs.job_config import JobConfigError

JAVA_HOME_ENV = "SIGNALLER_SPARK_JAVA_HOME"
"""Environment variable naming the JDK home directory of the driver JVM."""
DRIVER_FIRST_ARTIFACTS = ("hadoop-client-api", "hadoop-client-runtime")
"""Artifacts of the jars directory a local driver loads before pyspark's bundled copies."""
OPTIONS_FROM_FEATURE: tuple[tuple[int, str], ...] = (
    # 12-byte object headers instead of 16 (JEP 519, a product option from Java 25): a smaller
    # heap for the same rows, so fewer collections (measured above).
    (25, "-XX:+UseCompactObjectHeaders"),
    # Java 24 warns at sun.misc.Unsafe's memory access (JEP 498), and Netty 4.2 then stops using
    # it: Arrow's allocator (pyspark's toArrow/toPandas, Arrow-backed Python UDFs) fails to start
    # (UnsupportedOperationException in Netty's EmptyByteBuf.memoryAddress) and the call waits
    # forever. Spark, Netty and Arrow all still rely on it.
    (24, "--sun-misc-unsafe-memory-access=allow"),
)
"""(first Java feature release that accepts it, option) for the driver JVM."""
_RELEASE_VERSION = re.compile(r'^JAVA_VERSION="(?:1\.)?([0-9]+)', re.MULTILINE)
_VERSION_SUFFIX = re.compile(r"-[0-9][^-]*\.jar$")


def chosen_java_home(environ: dict[str, str] | None = None) -> Path | None:
    """The JDK home ``JAVA_HOME_ENV`` names, checked to hold ``bin/java``; None when unset or empty.

    Raises JobConfigError naming the variable and the path when it holds no ``bin/java``."""
    value = (os.environ if environ is None else environ).get(JAVA_HOME_ENV, "").strip()
    if not value:
        return None
    home = Path(value)
    if not (home / "bin" / "java").is_file():
        msg = f"{JAVA_HOME_ENV}={value!r}: no bin/java there; expected a JDK's home directory, or unset"
        raise JobConfigError(msg)
    return home


def java_feature(java_home: Path | None, environ: dict[str, str] | None = None) -> int | None:
    """The feature release (17, 25, ...) of the JDK the driver will run, read from its ``release``
    file: ``java_home``, else ``JAVA_HOME``, else the JDK of the ``java`` on the ``PATH`` (links
    resolved); None when there is none or its file does not say."""
    env = os.environ if environ is None else environ
    if java_home is None:
        fallback = env.get("JAVA_HOME", "").strip()
        if fallback:
            java_home = Path(fallback)
        else:
            found = shutil.which("java", path=env.get("PATH", ""))
            if found is None:
                return None
            java_home = Path(os.path.realpath(found)).parent.parent
    try:
        text = (java_home / "release").read_text(errors="replace")
    except OSError:
        return None
    match = _RELEASE_VERSION.search(text)
    return int(match.group(1)) if match else None


def driver_options(base: str, feature: int | None) -> str:
    """The options of :data:`OPTIONS_FROM_FEATURE` that Java ``feature`` accepts, then ``base``
    (so an option of ``base`` overrides them); none are added for an unknown version: an option a
    JVM does not know stops it from starting."""
    extra = [option for since, option in OPTIONS_FROM_FEATURE if feature is not None and feature >= since]
    return " ".join([*extra, base]).strip()


def artifact(jar: Path) -> str:
    """The Maven artifact a copied jar holds: its file name without ``-<version>.jar``."""
    return _VERSION_SUFFIX.sub("", jar.name)


def driver_classpath(jars_dir: Path) -> str:
    """The jars of ``jars_dir`` whose artifact is in :data:`DRIVER_FIRST_ARTIFACTS`, as one
    classpath string (empty when there are none)."""
    jars = sorted(p for p in jars_dir.glob("*.jar") if artifact(p) in DRIVER_FIRST_ARTIFACTS)
    return os.pathsep.join(str(p) for p in jars)


@contextlib.contextmanager
def launching_with(java_home: Path | None) -> Iterator[None]:
    """While pyspark launches its JVM, ``JAVA_HOME`` is ``java_home`` (unchanged when None); the
    process's own ``JAVA_HOME`` is restored afterwards, so other Java processes it starts keep theirs."""
    if java_home is None:
        yield
        return
    before = os.environ.get("JAVA_HOME")
    os.environ["JAVA_HOME"] = str(java_home)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("JAVA_HOME", None)
        else:
            os.environ["JAVA_HOME"] = before
