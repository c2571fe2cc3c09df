"""The ClusterAdmin contract on the real cluster through KafkaPythonAdmin (see support/admin_contract)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence

import pytest
from kafka_helpers import create_topics, produce, wait_until
from support.admin_contract import ClusterAdminContract

from ferry.errors import PreconditionError
from ferry.kafka.admin import ClusterAdmin
from ferry.kafka.client import KafkaPythonAdmin, ready_brokers
from ferry.sandbox import Sandbox, SandboxState

RACKS = {1: "r0", 2: "r1", 3: "r0", 4: "r1"}


class RealCluster:
    """The ContractCluster driver over the session's sandbox."""

    def __init__(self, sandbox: Sandbox, bootstrap: str, admin: KafkaPythonAdmin) -> None:
        self.sandbox = sandbox
        self.bootstrap = bootstrap
        self.admin: ClusterAdmin = admin
        self.racks: Mapping[int, str | None] = RACKS

    def new_topic(self, assignments: Mapping[int, Sequence[int]], *, min_insync: int | None = None) -> str:
        name = f"contract-{uuid.uuid4().hex[:8]}"
        spec: dict[str, object] = {"assignments": {p: list(r) for p, r in assignments.items()}}
        if min_insync is not None:
            spec["configs"] = {"min.insync.replicas": str(min_insync)}
        create_topics(self.bootstrap, {name: spec})
        wait_until(lambda: self._has_leaders(name, len(assignments)), 30, f"{name} to have leaders")
        return name

    def produce(self, topic: str, size: int) -> None:
        states = self.admin.describe_partitions([topic])
        for p in states:
            produce(self.bootstrap, topic, size, partition=p.tp.partition)
        # acks=all covers the ISR; the log-dir sizes of followers lag a moment behind.
        wait_until(lambda: self._sized(topic, size), 30, f"every replica of {topic} to hold the data")

    def stop_broker(self, broker_id: int) -> None:
        self.sandbox.kill(broker_id)
        wait_until(
            lambda: not self._in_any_shared_isr(broker_id), 30, f"broker {broker_id} to leave the ISRs"
        )

    def start_broker(self, broker_id: int) -> None:
        self.sandbox.restart(broker_id, ready_brokers)
        wait_until(lambda: self._in_every_isr(broker_id), 60, f"broker {broker_id} to rejoin the ISRs")

    def _has_leaders(self, topic: str, count: int) -> bool:
        try:
            states = self.admin.describe_partitions([topic])
        except PreconditionError:
            return False  # metadata not yet propagated to the broker that answered
        return len(states) == count and all(p.leader is not None for p in states)

    def _sized(self, topic: str, size: int) -> bool:
        sizes = self.admin.describe_replica_sizes([topic])
        alive = {b.id for b in self.admin.describe_brokers()}
        states = self.admin.describe_partitions([topic])
        return all(sizes.get(p.tp, {}).get(b, 0) >= size for p in states for b in p.replicas if b in alive)

    def _in_any_shared_isr(self, broker_id: int) -> bool:
        # Kafka never shrinks an ISR to nothing, so a sole remaining member is not waited for.
        return any(
            broker_id in (p.isr or ()) and len(p.isr or ()) > 1 for p in self.admin.describe_partitions()
        )

    def _in_every_isr(self, broker_id: int) -> bool:
        return all(
            broker_id in (p.isr or ()) for p in self.admin.describe_partitions() if broker_id in p.replicas
        )


class TestKafkaPythonAdminContract(ClusterAdminContract):
    @pytest.fixture
    def cluster(
        self, kafka_sandbox: tuple[Sandbox, SandboxState], bootstrap: str, admin: KafkaPythonAdmin
    ) -> Iterator[RealCluster]:
        yield RealCluster(kafka_sandbox[0], bootstrap, admin)
