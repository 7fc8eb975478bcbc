"""PostgreSQL logical-replication source: pgoutput decoding, relation cache, type conversion."""
