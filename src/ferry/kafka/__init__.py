"""Talking to Kafka: the ClusterAdmin seam, its kafka-python implementation and live snapshots.

Only :mod:`ferry.kafka.client` imports kafka-python; import it explicitly where a real connection is
wanted, so that importing this package stays cheap and free of kafka-python.
"""
