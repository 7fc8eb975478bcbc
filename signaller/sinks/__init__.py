"""Change sinks: where change events go (Kafka) and how they are encoded."""
