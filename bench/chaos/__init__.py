"""The chaos run (``make chaos``, issue 17): the whole pipeline (PostgreSQL → sidecar → Kafka → Spark apply
job → Delta) under load with faults, then a verdict and its figures.

One module per job:

* :mod:`bench.chaos.plan`: what a run does, as data (rates, sizes, durations, the seeded fault schedule);
* :mod:`bench.chaos.private_stack`: a PostgreSQL and a Kafka broker of the run's own (own home directory,
  own ports), so that restarting and killing them never touches anybody else's services;
* :mod:`bench.chaos.tables`: the captured tables, their seed rows, and the source read back as rows;
* :mod:`bench.chaos.load`: the writer (mixed changes at a rate; one TRUNCATE, one ADD COLUMN, one large
  transaction);
* :mod:`bench.chaos.supervisor`: a process restarted whenever it exits, as an operator's supervisor would;
* :mod:`bench.chaos.pipeline`: the sidecar's connector JSON and the apply job's configuration;
* :mod:`bench.chaos.signals`: incremental-snapshot signals through the four channels, and their ledger;
* :mod:`bench.chaos.faults`: the fault injector;
* :mod:`bench.chaos.probes`: recovery markers (fault → change in Kafka and Delta) and the slot monitor;
* :mod:`bench.chaos.topics`: a topic read back, replayed, with its duplicates and stale READs;
* :mod:`bench.chaos.verdict`: source vs topic vs Delta, signals, WAL;
* :mod:`bench.chaos.report`: the results files (JSON and Markdown);
* :mod:`bench.chaos.run`: the run itself (``python -m bench.chaos [--quick] [--seed N]``).
"""
