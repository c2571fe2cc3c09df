"""A local KRaft Kafka cluster on 127.0.0.1, started from the official jars (a dev and test tool).

The seam: ``jars`` fetches the broker's jars through Maven into a cache; ``layout`` turns a
:class:`~ferry.sandbox.layout.ClusterSpec` into node specs, ``server.properties`` and JVM command
lines (pure, unit-tested); ``process`` starts and stops the JVMs; ``state`` records pids and
ports in a JSON file so another process can inspect or stop the cluster; ``cluster`` ties them
together.

The sandbox never talks Kafka itself: readiness is checked by a ``probe`` the caller passes in
(the CLI and the test fixture build it from :mod:`ferry.kafka`), which keeps kafka-python out of
this package.
"""

from ferry.sandbox.cluster import Probe, Sandbox, default_sandbox_dir
from ferry.sandbox.jars import KAFKA_VERSION, ensure_jars, kafka_home
from ferry.sandbox.layout import SCRAM_USERS, ClusterSpec
from ferry.sandbox.state import NodeState, SandboxState

__all__ = [
    "KAFKA_VERSION",
    "SCRAM_USERS",
    "ClusterSpec",
    "NodeState",
    "Probe",
    "Sandbox",
    "SandboxState",
    "default_sandbox_dir",
    "ensure_jars",
    "kafka_home",
]
