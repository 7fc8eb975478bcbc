"""signaller's benchmark harness: ``python -m bench.run`` (``make bench``).

Each benchmark is a function in its own module (``bench.streaming``, later ``bench.snapshot``,
``bench.apply``, ...) that returns one *section* of the results file: a mapping of figure names
to summaries built with :func:`bench.stats.summarize`. ``bench.results`` writes the file and
prints the table; see ``bench/README.md`` for every field.
"""
