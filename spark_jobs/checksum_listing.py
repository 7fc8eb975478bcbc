"""A Delta table's files and idempotent-write ids from its checksum file, without its state.

Delta keeps a table's state (its files, write ids) as a Spark job over its log: the first thing
that needs it for a new version (``txnVersion``, ``filterFiles``, a read's file listing) replays
the log in Spark jobs (~0.4-0.7 s for the bench's table on the bench's machine). The job commits
a new version every batch, so every batch paid it, once per table it reads or writes.

Delta also writes both into the version's checksum file (``_delta_log/<version>.crc``) while the
table has at most 50 files and 100 write ids (``allFilesInCrc``, ``setTransactionsInCrc``):
:func:`checksum_listing` takes them from there, :func:`read_latest` reads a table from there.
Where the checksum file is missing or does not list them (a larger table, a writer that writes no
checksum), the callers use Delta's state as before. Call on the driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ChecksumListing:
    """A transaction's read version as its checksum file lists it: its files and its write ids.
    Each method records the read in the transaction as the Delta method it replaces does, so that
    concurrent commits conflict with it as with Delta's own reads."""

    files: Any  # Scala Seq[AddFile], with their statistics
    versions: dict[str, int]  # app id -> the newest batch id the table holds for it

    def applied_version(self, txn: Any, app_id: str) -> int:
        """The newest batch id the table holds for ``app_id``, -1 for none (``txnVersion``)."""
        txn.readTxn().addOne(app_id)
        return self.versions.get(app_id, -1)

    def read_all(self, spark: Any, txn: Any) -> Any:
        """Every file of the table (``filterFiles()``: the predicate ``true``, every file read)."""
        jvm = spark._jvm
        predicates = jvm.java.util.ArrayList()
        predicates.add(jvm.org.apache.spark.sql.catalyst.expressions.Literal.TrueLiteral())
        everything = jvm.org.apache.spark.api.python.PythonUtils.toSeq(predicates)
        partition_only = getattr(txn, "trackReadPredicates$default$2")()
        rewrite_filter = getattr(txn, "trackReadPredicates$default$3")()
        txn.trackReadPredicates(everything, partition_only, rewrite_filter)
        txn.trackFilesRead(self.files)
        return self.files


def checksum_listing(txn: Any) -> ChecksumListing | None:
    """The :class:`ChecksumListing` of ``txn``'s read version, or None when its checksum file is
    missing or does not list the files or the write ids (the caller then reads the state)."""
    checksum = txn.snapshot().checksumOpt()
    if not checksum.isDefined():
        return None
    files, transactions = checksum.get().allFiles(), checksum.get().setTransactions()
    if not files.isDefined() or not transactions.isDefined():
        return None
    versions = {str(t.appId()): int(t.version()) for t in iterate(transactions.get())}
    return ChecksumListing(files.get(), versions)


def read_latest(spark: Any, path: str) -> Any:
    """The Delta table at ``path``, its latest version, as a DataFrame: its files from the
    checksum file where it lists them (no Spark job to list them; files outside a filter on the
    result are still skipped by their Parquet statistics), else ``spark.read`` (Delta's state,
    with Delta's file skipping)."""
    jvm = spark._jvm
    log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path)
    snapshot = log.update(False, jvm.scala.Option.empty(), jvm.scala.Option.empty())  # not stale, no catalog table
    checksum = snapshot.checksumOpt()
    if checksum.isDefined() and checksum.get().allFiles().isDefined():
        return dataframe(spark, log.createDataFrame(snapshot, checksum.get().allFiles().get(), False,
                                                    jvm.scala.Option.empty()))
    return spark.read.format("delta").load(path)


def dataframe(spark: Any, jdf: Any) -> Any:
    """A PySpark DataFrame of a JVM ``Dataset[Row]``."""
    from pyspark.sql.classic.dataframe import DataFrame

    return DataFrame(jdf, spark)


def iterate(seq: Any) -> list[Any]:
    """The elements of a Scala collection."""
    out = []
    it = seq.iterator()
    while it.hasNext():
        out.append(it.next())
    return out
