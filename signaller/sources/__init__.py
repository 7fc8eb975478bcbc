"""Change sources: where change events come from. ``base`` declares what a source implements (log
reader, chunk reader, table schema provider, bundled as a ``Source``; the stream items); each database
is a folder implementing it (``postgres``), named by ``registry`` from ``connector.class``."""
