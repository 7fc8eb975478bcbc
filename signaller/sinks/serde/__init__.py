"""Record encodings: Kafka Connect JsonConverter-compatible JSON (Avro later)."""
