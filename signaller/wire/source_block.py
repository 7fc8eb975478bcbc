"""The ``source`` block of change events, as a source supplies it: its Connect schema and its values.

Contract
--------
Every Debezium connector writes the same envelope around a connector-specific ``source`` struct
(Debezium's ``SourceInfoStructMaker``). A source whose block is not the built-in one (the
``io.debezium.connector.postgresql.Source`` layout of :data:`~signaller.wire.connect.SOURCE_SCHEMA`,
rendered from byte templates on the hot path) hands the serializers a :class:`SourceBlock`:

* :attr:`SourceBlock.schema`: the ``source`` field's Connect struct node (``optional`` false), used
  in the envelope schema of every table (JSON schema part, Avro registration);
* :meth:`SourceBlock.streamed`: the block of one streamed change (the source's own change type,
  whatever it carries: a binlog file/position, a GTID, ...);
* :meth:`SourceBlock.of_event`: the block of a change built from a
  :class:`~signaller.model.ChangeEvent` (snapshot READs, or any event the capture rebuilds).

Both return the members in schema order, every member present (None for null; a member whose
schema has a default is written as the value given, so give the default rather than None). The
serializers render them with the converter's rules (JsonConverter's Jackson text, Avro's binary
encoding), so the values are plain JSON values (``str``, ``int``, ``bool``, None). Pure: no I/O,
called once per event on the capture loop's thread; nothing here survives a restart.
"""

from __future__ import annotations

from typing import Any, Protocol

from signaller.model.events import ChangeEvent

__all__ = ["SourceBlock"]


class SourceBlock(Protocol):
    """A connector's ``source`` block (see the module docstring). Immutable once built."""

    @property
    def schema(self) -> dict[str, Any]:
        """The ``source`` struct node (``io.debezium.connector.<connector>.Source``), treated as read-only."""
        ...

    def streamed(self, change: Any, /) -> dict[str, Any]:
        """The block of a streamed change (``change.tx`` set; the source's own change type). Pure."""
        ...

    def of_event(self, event: ChangeEvent, ts_us: int, /) -> dict[str, Any]:
        """The block of ``event``; ``ts_us`` is the block's time (the emission time of a READ, the commit
        time otherwise). Pure."""
        ...
