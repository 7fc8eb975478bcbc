"""Fixtures of the fuzz tier: the integration tier's (a real PostgreSQL and Kafka per test)."""

from tests.integration.conftest import capture

__all__ = ["capture"]
