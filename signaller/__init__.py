"""signaller: a PostgreSQL change-data-capture sidecar speaking Debezium's formats and signals.

The command line is ``signaller.runtime.cli``; the layout is described in the README's architecture section.
"""
