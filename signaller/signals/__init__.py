"""Signals: Debezium's ``id``/``type``/``data`` records from every channel, parsed into actions."""
