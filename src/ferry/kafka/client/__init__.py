"""``KafkaPythonAdmin``: the ClusterAdmin on kafka-python; this package alone imports ``kafka``.

Its modules, by responsibility:

- :mod:`.kafka_admin`: the admin calls (reads, the executor's writes) and ``--command-config``;
- :mod:`.freeze_store`: the freeze record's topic, read and written;
- :mod:`.configs`: config resources grouped per broker and sent side by side;
- :mod:`.errors`: kafka-python's exceptions as one-line ferry errors, and the per-call deadline;
- :mod:`.connect` and :mod:`.probe`: opening a client, the TCP check, the readiness probe.

Every kafka-python exception is turned into a one-line :class:`~ferry.errors.KafkaError` here, so
nothing above this package needs to know kafka-python's error classes.
"""

from ferry.kafka.client.kafka_admin import KafkaPythonAdmin, load_command_config
from ferry.kafka.client.probe import ready_brokers

__all__ = ["KafkaPythonAdmin", "load_command_config", "ready_brokers"]
