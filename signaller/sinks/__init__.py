"""Change sinks: where change events go (Kafka); their bytes come from :mod:`signaller.wire`."""
