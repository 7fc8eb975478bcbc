"""Durable offsets: the stream position and the snapshot progress, in one versioned record."""

from signaller.state.offsets import FORMAT_VERSION, Offsets
from signaller.state.stores import FileOffsetStore, KafkaOffsetStore, OffsetStore, open_store

__all__ = ["FORMAT_VERSION", "FileOffsetStore", "KafkaOffsetStore", "OffsetStore", "Offsets", "open_store"]
