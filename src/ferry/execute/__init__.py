"""The executor: journal, scheduling (order, batches, throttles), progress, and the run loop.

Pure modules (``states``, ``strategies``, ``batching``, ``throttles``, ``progress``) take values and
return values; ``journal`` owns the SQLite file; the run loop talks to Kafka only through
:class:`ferry.kafka.admin.ClusterAdmin`.
"""
