"""PySpark jobs that consume signaller's (and Debezium's) change topics.

``apply_changes`` applies them to Delta tables with sequence-guarded MERGEs. Pure pieces
(Connect schema → Spark types, the sequence, the MERGE plan) live apart from the job wiring.
"""
