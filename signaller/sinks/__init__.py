"""Change sinks: where change events go (Kafka); their bytes come from :mod:`signaller.wire`. The schema
registry client (:mod:`signaller.sinks.registry`) is the I/O half of the Avro format: wire/ stays without I/O."""
