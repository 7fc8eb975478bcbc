"""MariaDB (and MySQL's wire-compatible binlog) as a source: ``source`` (the bundle the registry builds),
``reader`` (the binlog stream), ``changes`` (row changes and table plans), ``values`` (column types →
Debezium values), ``positions`` (binlog coordinates, GTID sets, offsets), ``source_block`` (the
``source`` block), ``catalog`` (``information_schema``); for incremental snapshots ``chunks`` and
``chunk_sql`` (keyset chunks, watermarks, read-only visibility), ``schemas`` (tables as snapshots see
them), ``row_text`` (server text → driver values), ``connection`` and ``signal_writer``."""
