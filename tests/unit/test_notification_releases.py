"""Notifications as the Debezium release a connector reproduces writes them (``notifications.for_release``):
the MariaDB connector's 3.5.0.Final has no DATA_COLLECTIONS_RESOLVED and no chunk figures (measured in
tests/compat/test_mariadb_side_by_side.py); the newest release's (and PostgreSQL's, None) are unchanged."""

from __future__ import annotations

import pytest

from signaller.snapshot import notifications as notes

pytestmark = pytest.mark.unit

IN_PROGRESS = notes.make("IN_PROGRESS", "snap-1", "prefix", data_collections="db.t",
                         current_collection_in_progress="db.t", maximum_key="20", last_processed_key="5",
                         total_rows="4", total_chunks="2", chunk_index="1")


def test_before_3_7_the_chunk_figures_are_left_out() -> None:
    shaped = notes.for_release(IN_PROGRESS, "3.5.0.Final")
    assert shaped is not None
    assert dict(shaped.additional_data) == {"connector_name": "prefix", "data_collections": "db.t",
                                            "current_collection_in_progress": "db.t", "maximum_key": "20",
                                            "last_processed_key": "5"}
    assert (shaped.id, shaped.type, shaped.aggregate_type, shaped.timestamp) == (
        IN_PROGRESS.id, IN_PROGRESS.type, IN_PROGRESS.aggregate_type, IN_PROGRESS.timestamp)


def test_before_3_7_there_is_no_data_collections_resolved() -> None:
    resolved = notes.make("DATA_COLLECTIONS_RESOLVED", "snap-1", "prefix", data_collections="db.t")
    assert notes.for_release(resolved, "3.5.0.Final") is None
    started = notes.make("STARTED", "snap-1", "prefix", data_collections="db.t")
    assert notes.for_release(started, "3.5.0.Final") is started


@pytest.mark.parametrize("release", [None, "3.7.0.Final", "3.7.0.Alpha1", "4.0.0.Final"])
def test_the_newest_releases_are_unchanged(release: str | None) -> None:
    assert notes.for_release(IN_PROGRESS, release) is IN_PROGRESS
    resolved = notes.make("DATA_COLLECTIONS_RESOLVED", "snap-1", "prefix", data_collections="db.t")
    assert notes.for_release(resolved, release) is resolved


def test_a_release_that_is_not_major_minor_is_named() -> None:
    with pytest.raises(ValueError, match="'latest'"):
        notes.for_release(IN_PROGRESS, "latest")
