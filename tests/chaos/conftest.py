"""The chaos tier: ``tests/chaos`` holds the two-minute chaos run (``make test`` runs it; ``make chaos-test``
alone). It runs on a private stack of its own (``bench.chaos.private_stack``: own home directory under the
clone, own ports, ``SIGNALLER_CHAOS_*_PORT`` to move them when two clones run at once). The fifteen-minute
run is not a test: ``make chaos``."""
