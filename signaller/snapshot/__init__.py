"""The incremental snapshot engine (DBLog watermark chunks, as Debezium implements them)."""
