"""The Debezium wire format, with no I/O: what the bytes of every record look like.

Modules, each with one job:

* :mod:`~signaller.wire.numbers`: Java/Jackson-exact numbers (``Double.toString``,
  ``Float.toString``, ``BigDecimal``/``BigInteger`` bytes and text);
* :mod:`~signaller.wire.temporal`: Debezium's temporal values rendered as Java renders them
  (``ZonedTimestamp``, ``ZonedTime``, ``MicroDuration``, ``Interval``, calendar arithmetic);
* :mod:`~signaller.wire.connect`: Kafka Connect schema nodes, logical types and Debezium's fixed
  record schemas (``Source``, envelope, heartbeat, transaction metadata, notification);
* :mod:`~signaller.wire.columns`: :class:`~signaller.wire.columns.ColumnCodec`, what a source
  gives the wire format for one column (schema node, payload converter, TOAST placeholder);
* :mod:`~signaller.wire.jackson`: compact JSON exactly as Kafka Connect's Jackson writes it;
* :mod:`~signaller.wire.envelope`: the JsonConverter change-event serializer (key, envelope,
  with and without schemas); one entry point, ``serialize``, for streamed and snapshot READ rows;
* ``signaller.wire._fast`` (private): the envelope serializer's hot path, per-table byte
  fragments and the renderers that splice events between them;
* :mod:`~signaller.wire.records`: heartbeat, transaction BEGIN/END and notification records;
* :mod:`~signaller.wire.serializer`: :class:`~signaller.wire.serializer.RecordSerializer`, the one
  object the runtime asks for the bytes of every record (change events, heartbeats, transaction
  metadata, notifications).
* :mod:`~signaller.wire.avro`: Connect schemas and values in Avro as Confluent's ``AvroData`` writes
  them, Debezium's name adjustment, Avro varints and the Confluent wire-format frame;
* :mod:`~signaller.wire.avro_serializer`: :class:`~signaller.wire.avro_serializer.AvroRecordSerializer`,
  the Avro converters' twin of ``RecordSerializer`` (schema ids from an injected ``SchemaIds``).

Dependencies: ``signaller.model`` and ``signaller.errors`` only; never a source, a sink, the
snapshot engine or the runtime (``tests/unit/test_layering.py`` checks it).
"""
