"""PostgreSQL logical-replication source: pgoutput decoding, the replication stream (``reader``), the
relation cache, type conversion, and the snapshot side (``chunks``, ``chunk_sql``, ``schemas``), each
implementing an interface of ``signaller.sources.base``."""
