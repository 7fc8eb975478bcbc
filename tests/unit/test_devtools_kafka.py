"""The KRaft cluster id the local stack formats storage with."""

from __future__ import annotations

import re
from unittest import mock

from devtools import kafka


def test_cluster_ids_are_22_url_safe_characters() -> None:
    for _ in range(2000):
        assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]{21}", kafka.new_cluster_id())


def test_an_id_with_a_leading_dash_is_never_returned() -> None:
    # uuid bytes whose base64 starts with "-" (0xF8 -> '-' in the URL-safe alphabet), then ordinary ones.
    dash_first = mock.Mock(bytes=bytes([0xF8]) + bytes(15))
    ordinary = mock.Mock(bytes=bytes(16))
    with mock.patch.object(kafka.uuid, "uuid4", side_effect=[dash_first, dash_first, ordinary]):
        assert kafka.new_cluster_id() == "A" * 22
