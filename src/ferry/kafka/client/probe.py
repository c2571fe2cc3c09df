"""The readiness probe: which brokers are up, without ever raising while the cluster starts."""

from __future__ import annotations

from ferry.errors import KafkaError
from ferry.kafka.client.connect import accepts_connections
from ferry.kafka.client.kafka_admin import KafkaPythonAdmin


def ready_brokers(bootstrap: str, *, timeout_s: float = 3.0) -> frozenset[int]:
    """Ids of the registered, unfenced brokers, or an empty set while the cluster is unreachable.

    This is the readiness probe of :class:`ferry.sandbox.Sandbox`: it never raises a KafkaError.
    """
    # A plain TCP check first: while the brokers start, it fails fast and quietly, where
    # kafka-python would wait out its bootstrap timeout.
    if not any(accepts_connections(address, timeout_s) for address in bootstrap.split(",")):
        return frozenset()
    try:
        with KafkaPythonAdmin(bootstrap, timeout_s=timeout_s) as admin:
            return frozenset(b.id for b in admin.describe_brokers())
    except KafkaError:
        return frozenset()
