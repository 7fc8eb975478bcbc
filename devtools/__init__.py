"""Developer tooling of the repository, outside the shipped ``signaller`` package.

The local development and test stack (PostgreSQL, an Apache Kafka broker in KRaft mode and Spark's
jars, installed and run on this machine without Docker), the Kafka/Maven/Debezium launchers, the
environment the tests and benchmarks give a sidecar, and the demo. Entry point:
``python -m devtools stack up|down|status`` and ``python -m devtools demo`` (see :mod:`devtools.cli`).

``pip install signaller`` does not install this package: it needs the repository (``compose/local``
holds the Maven POMs it resolves jars from) and the ``dev`` extra. Everything it runs lives under one
cache directory (``StackSettings.home``); nothing touches the machine's own PostgreSQL cluster or
Kafka installation.
"""

from devtools.settings import StackSettings
from devtools.stack import Stack, StackStatus

__all__ = ["Stack", "StackSettings", "StackStatus"]
