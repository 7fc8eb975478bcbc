"""An idempotent Delta append written in the job's own transaction, its write id looked up in the
table's checksum file.

Delta's DataFrame append with an idempotent-write id (``txnAppId``/``txnVersion``) first asks the
table's state whether it already holds the id, and the state of a version this process has not
read yet is a replay of the log in Spark jobs (``spark_jobs.checksum_listing``). The job appends
to its tables every batch (tombstones beside the MERGE; new keys into the target, which is all a
backfill batch writes), so each of those appends paid a replay. :func:`append_once` makes the same
commit (the rows' files written by the transaction with their statistics, the table's own
auto-compaction after it, the write id, a ``WRITE`` in history) and takes the write ids from the
checksum file when it lists them. It reads no file of the table: a blind append, which Delta lets
commit beside any other writer, except one writing the same id (then it fails, as Delta's does).

The rows must have the table's schema exactly (names, types, order): Delta's DataFrame writer
checks and reconciles schemas, a transaction's ``writeFiles`` does not. For any other schema
:func:`append_once` hands the rows to Delta's writer instead. Call on the driver, inside a batch.
"""

from __future__ import annotations

import json
import time
from typing import Any

from spark_jobs.checksum_listing import checksum_listing, iterate


def append_once(spark: Any, rows: Any, path: str, app_id: str, batch_id: int) -> bool:
    """Append ``rows`` to the Delta table at ``path`` unless it already holds ``batch_id`` (or a
    later one) for ``app_id``; the commit records ``(app_id, batch_id)``. Returns False when it
    skipped a written id; True when it wrote, or handed rows of another schema to Delta's writer
    (which skips a written id itself and does not say so)."""
    jvm = spark._jvm
    delta = jvm.org.apache.spark.sql.delta
    log = delta.DeltaLog.forTable(spark._jsparkSession, path)
    txn = log.startTransaction()
    if _shape(_schema(txn.metadata().schema().json())) != _shape(rows.schema):
        _append_with_delta_writer(rows, path, app_id, batch_id)
        return True
    listing = checksum_listing(txn)
    applied = listing.applied_version(txn, app_id) if listing else txn.txnVersion(app_id)
    if applied >= batch_id:
        return False
    actions = jvm.java.util.ArrayList()
    for action in iterate(txn.writeFiles(rows._jdf)):
        actions.add(action)
    now = jvm.scala.Some(jvm.java.lang.Long.valueOf(int(time.time() * 1000)))
    actions.add(delta.actions.SetTransaction(app_id, batch_id, now))
    none = jvm.scala.Option.empty()
    append = jvm.org.apache.spark.sql.SaveMode.Append
    no_columns = jvm.scala.Some(jvm.org.apache.spark.api.python.PythonUtils.toSeq(jvm.java.util.ArrayList()))
    # as Delta's DataFrame writer records an append without partitionBy: {mode: Append, partitionBy: []}
    operation = delta.DeltaOperations.Write(append, no_columns, none, none, none, none, none, none, none)
    txn.commit(jvm.org.apache.spark.api.python.PythonUtils.toSeq(actions), operation)
    return True


def _append_with_delta_writer(rows: Any, path: str, app_id: str, batch_id: int) -> None:
    """Delta's DataFrame append, with the write id as write options (Delta skips a written id)."""
    (rows.write.format("delta").mode("append").option("txnAppId", app_id).option("txnVersion", str(batch_id))
     .save(path))


def _schema(text: str) -> Any:
    from pyspark.sql.types import StructType

    return StructType.fromJson(json.loads(text))


def _shape(data_type: Any) -> Any:
    """A Spark type's names and types, without nullability or metadata (``writeFiles`` checks
    the table's NOT NULL columns itself)."""
    from pyspark.sql.types import ArrayType, MapType, StructType

    if isinstance(data_type, StructType):
        return tuple((f.name, _shape(f.dataType)) for f in data_type.fields)
    if isinstance(data_type, ArrayType):
        return ("array", _shape(data_type.elementType))
    if isinstance(data_type, MapType):
        return ("map", _shape(data_type.keyType), _shape(data_type.valueType))
    return data_type.simpleString()
