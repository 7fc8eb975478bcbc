"""The local development and test stack: PostgreSQL, an Apache Kafka broker (KRaft) and Spark's
jars, installed and run on this machine without Docker. ``signaller stack up|down|status``.

Everything lives under one cache directory (``StackSettings.home``); nothing touches the
machine's own PostgreSQL cluster or Kafka installation.
"""

from signaller.devstack.settings import StackSettings
from signaller.devstack.stack import Stack, StackStatus

__all__ = ["Stack", "StackSettings", "StackStatus"]
