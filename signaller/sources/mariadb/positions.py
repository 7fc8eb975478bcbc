"""Binlog positions and GTID sets: what the MariaDB source resumes from, and the integer position the
capture loop carries (see ``sources.base``: one ``int`` per source that grows with the log).

* :func:`position` maps a binlog coordinate ``(file, pos)`` to ``(file number << 32) | pos``: files are
  numbered ``<basename>.000001`` upwards and a position within a file is below 4 GiB (MariaDB's
  ``max_binlog_size`` is at most 1 GiB), so the integer orders exactly like the log;
* :class:`GtidSet` is MariaDB's replication state: per replication domain, the newest GTID
  ``domain-server-sequence`` applied (``@@gtid_binlog_pos`` / ``@slave_connect_state`` text);
* :class:`Resume` is a committed point: the binlog coordinate after a transaction, the GTID set
  including it, and what Debezium's MySQL/MariaDB offset holds beside them (:meth:`Resume.offset_keys`:
  ``file``, ``pos``, ``gtids``, ``ts_sec``, ``server_id``; ``event``/``row`` are always 0 at a
  transaction boundary and left out, as Debezium leaves them out).

Pure values; nothing here does I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from signaller.errors import StateError

_GTID = re.compile(r"(\d+)-(\d+)-(\d+)")


def file_number(name: str) -> int:
    """The number of binlog file ``name`` (``mariadb-bin.000042`` → 42); ``StateError`` if it has none."""
    _, _, suffix = name.rpartition(".")
    if not suffix.isdigit():
        msg = f"binlog file name {name!r} has no number (expected <basename>.<digits>, e.g. mariadb-bin.000001)"
        raise StateError(msg)
    return int(suffix)


def position(file: str, pos: int) -> int:
    """The capture loop's integer position of binlog coordinate ``(file, pos)``."""
    return (file_number(file) << 32) | pos


def split_position(value: int) -> tuple[int, int]:
    """``(file number, byte position)`` of an integer :func:`position`."""
    return value >> 32, value & 0xFFFFFFFF


@dataclass(frozen=True)
class GtidSet:
    """MariaDB's GTID position: the newest ``(server, sequence)`` per domain. Immutable."""

    domains: tuple[tuple[int, int, int], ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> GtidSet:
        """A set from ``'0-1-74,1-2-9'`` (blank or None: empty); ``StateError`` naming the text if malformed."""
        newest: dict[int, tuple[int, int]] = {}
        for part in (text or "").replace("\n", "").split(","):
            part = part.strip()
            if not part:
                continue
            match = _GTID.fullmatch(part)
            if match is None:
                msg = f"not a MariaDB GTID: {part!r} in {text!r} (expected domain-server-sequence, e.g. 0-1-74)"
                raise StateError(msg)
            domain, server, sequence = (int(group) for group in match.groups())
            if domain not in newest or sequence > newest[domain][1]:
                newest[domain] = (server, sequence)
        return cls(tuple(sorted((domain, server, seq) for domain, (server, seq) in newest.items())))

    def with_gtid(self, domain: int, server: int, sequence: int) -> GtidSet:
        """This set with GTID ``domain-server-sequence`` applied (it replaces the domain's entry)."""
        rest = [entry for entry in self.domains if entry[0] != domain]
        return GtidSet(tuple(sorted([*rest, (domain, server, sequence)])))

    def __str__(self) -> str:
        return ",".join(f"{d}-{s}-{q}" for d, s, q in self.domains)


def gtid_text(domain: int, server: int, sequence: int) -> str:
    """A GTID as MariaDB and Debezium write it (``source.gtid``, the transaction id): ``domain-server-sequence``."""
    return f"{domain}-{server}-{sequence}"


def gtid_number(domain: int, server: int, sequence: int) -> int:
    """A GTID as one integer (the stream items' ``xid``): ``domain << 96 | server << 64 | sequence``."""
    return (domain << 96) | (server << 64) | sequence


def gtid_of_number(number: int) -> str:
    """:func:`gtid_text` of a :func:`gtid_number`."""
    return gtid_text(gtid_domain(number), (number >> 64) & 0xFFFFFFFF, gtid_sequence(number))


def gtid_domain(number: int) -> int:
    """The replication domain of a :func:`gtid_number`."""
    return number >> 96


def gtid_sequence(number: int) -> int:
    """The sequence number (within its domain) of a :func:`gtid_number`."""
    return number & 0xFFFFFFFFFFFFFFFF


def transaction_number(domain: int, sequence: int) -> int:
    """The :func:`gtid_number` of transaction ``sequence`` of ``domain`` when its server does not matter (what a
    visibility check compares: within a domain, sequences order the binlog whatever server wrote them)."""
    return gtid_number(domain, 0, sequence)


@dataclass(frozen=True)
class Resume:
    """A point to resume after: binlog ``file``/``pos`` (the first byte after a transaction, or any event
    boundary between transactions), the GTID set applied up to there, the time of the last event (s) and the
    server id that wrote it."""

    file: str
    pos: int
    gtids: GtidSet
    ts_sec: int = 0
    server_id: int = 0

    @property
    def position(self) -> int:
        """The integer position (:func:`position`)."""
        return position(self.file, self.pos)

    def offset_keys(self) -> dict[str, Any]:
        """Debezium's MySQL/MariaDB offset keys of this point."""
        keys: dict[str, Any] = {}
        if self.server_id:
            keys["server_id"] = self.server_id
        if self.gtids.domains:
            keys["gtids"] = str(self.gtids)
        keys["file"] = self.file
        keys["pos"] = self.pos
        if self.ts_sec:
            keys["ts_sec"] = self.ts_sec
        return keys

    @classmethod
    def from_offset_keys(cls, keys: Mapping[str, Any], origin: str = "the stored offsets") -> Resume:
        """The point stored as ``keys`` (:meth:`offset_keys`, or Debezium's own offset); ``StateError`` naming the
        bad key when one is missing or malformed, or when the stored position is mid-transaction (``event``/``row``
        set: signaller stores transaction boundaries only)."""
        file, pos = keys.get("file"), keys.get("pos")
        if not isinstance(file, str) or not isinstance(pos, int) or pos < 0:
            msg = (f"{origin}: binlog offsets need 'file' (text) and 'pos' (an integer >= 0); "
                   f"got file={file!r}, pos={pos!r}")
            raise StateError(msg)
        if keys.get("event") or keys.get("row"):
            msg = (f"{origin}: the offset is inside a transaction (event={keys.get('event')!r}, "
                   f"row={keys.get('row')!r}); "
                   "signaller resumes at transaction boundaries only")
            raise StateError(msg)
        gtids = keys.get("gtids")
        return cls(file, pos, GtidSet.parse(gtids if isinstance(gtids, str) else None),
                   int(keys.get("ts_sec") or 0), int(keys.get("server_id") or 0))
