"""Change sources: where change events come from. ``base`` declares what a source implements (log
reader, chunk reader, table schema provider); each database is a folder implementing it (``postgres``)."""
