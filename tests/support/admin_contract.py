"""One ClusterAdmin contract, run against FakeAdmin (unit) and the real cluster (integration).

Each test sets a cluster up through a :class:`ContractCluster` driver, then asserts only what the
ClusterAdmin answers. ``tests/unit/kafka/test_fake_admin_contract.py`` and
``tests/integration/test_admin_contract_kafka.py`` subclass :class:`ClusterAdminContract` and give
the ``cluster`` fixture; a fake that drifts from Kafka fails the same test Kafka passes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import pytest

from ferry.errors import PreconditionError
from ferry.kafka.admin import ClusterAdmin
from ferry.model import TopicPartition


class ContractCluster(Protocol):
    """What a contract test may do to a cluster, real or fake."""

    admin: ClusterAdmin
    racks: Mapping[int, str | None]
    """Every broker's rack; brokers 1..4 over racks r0/r1, as the sandbox starts them."""

    def new_topic(self, assignments: Mapping[int, Sequence[int]], *, min_insync: int | None = None) -> str:
        """Create a topic with a fresh name and these replicas; return once it is visible."""
        ...

    def produce(self, topic: str, size: int) -> None:
        """Write about ``size`` bytes to each partition; return once every live replica has them."""
        ...

    def stop_broker(self, broker_id: int) -> None:
        """Stop a broker; return once the cluster has fenced it."""
        ...

    def start_broker(self, broker_id: int) -> None:
        """Start it again; return once it is back in every ISR."""
        ...


class ClusterAdminContract:
    """The contract; subclasses provide a ``cluster`` fixture yielding a ContractCluster."""

    def test_brokers_with_racks_all_alive(self, cluster: ContractCluster) -> None:
        brokers = cluster.admin.describe_brokers()
        assert {b.id: b.rack for b in brokers} == dict(cluster.racks)
        assert all(b.alive for b in brokers)
        assert cluster.admin.describe_brokers(include_fenced=True) == brokers

    def test_new_topic_has_its_replicas_first_replica_leading_full_isr(
        self, cluster: ContractCluster
    ) -> None:
        topic = cluster.new_topic({0: [1, 2], 1: [2, 3], 2: [4, 1]})
        states = cluster.admin.describe_partitions([topic])
        assert [(p.tp, p.replicas) for p in states] == [
            (TopicPartition(topic, 0), (1, 2)),
            (TopicPartition(topic, 1), (2, 3)),
            (TopicPartition(topic, 2), (4, 1)),
        ]
        for p in states:
            assert p.leader == p.replicas[0]
            assert p.isr is not None and sorted(p.isr) == sorted(p.replicas)
            assert p.size_bytes is None  # sizes come from describe_replica_sizes

    def test_all_topics_include_a_new_one(self, cluster: ContractCluster) -> None:
        topic = cluster.new_topic({0: [3]})
        assert TopicPartition(topic, 0) in {p.tp for p in cluster.admin.describe_partitions()}

    def test_unknown_topic_is_a_precondition_error(self, cluster: ContractCluster) -> None:
        with pytest.raises(PreconditionError, match="'contract-no-such-topic' does not exist"):
            cluster.admin.describe_partitions(["contract-no-such-topic"])

    def test_sizes_per_replica_grow_with_data_and_stay_in_scope(self, cluster: ContractCluster) -> None:
        topic = cluster.new_topic({0: [1, 4], 1: [2, 3]})
        other = cluster.new_topic({0: [2]})
        cluster.produce(topic, 200_000)
        sizes = cluster.admin.describe_replica_sizes([topic])
        assert set(sizes) == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
        assert set(sizes[TopicPartition(topic, 0)]) == {1, 4}
        assert set(sizes[TopicPartition(topic, 1)]) == {2, 3}
        assert all(n >= 200_000 for per_broker in sizes.values() for n in per_broker.values())
        assert TopicPartition(other, 0) not in sizes

    def test_min_insync_is_the_topic_value_or_the_default(self, cluster: ContractCluster) -> None:
        strict = cluster.new_topic({0: [1, 2, 3]}, min_insync=2)
        plain = cluster.new_topic({0: [1, 2]})
        assert cluster.admin.describe_min_insync([strict, plain]) == {strict: 2, plain: 1}
        assert cluster.admin.describe_min_insync([]) == {}

    def test_no_reassignments_on_a_quiet_topic(self, cluster: ContractCluster) -> None:
        topic = cluster.new_topic({0: [1, 2]})
        assert cluster.admin.list_reassignments([topic]) == ()

    def test_a_stopped_broker_is_fenced_out_of_isr_and_has_no_sizes(self, cluster: ContractCluster) -> None:
        topic = cluster.new_topic({0: [4, 1], 1: [2, 4], 2: [1, 2]})
        cluster.produce(topic, 50_000)
        cluster.stop_broker(4)
        try:
            assert 4 not in {b.id for b in cluster.admin.describe_brokers()}
            fenced = {b.id: b for b in cluster.admin.describe_brokers(include_fenced=True)}[4]
            assert (fenced.rack, fenced.alive) == (cluster.racks[4], False)
            states = {p.tp.partition: p for p in cluster.admin.describe_partitions([topic])}
            assert [states[i].replicas for i in range(3)] == [(4, 1), (2, 4), (1, 2)]
            assert (states[0].leader, states[0].isr) == (1, (1,))
            assert (states[1].leader, states[1].isr) == (2, (2,))
            sizes = cluster.admin.describe_replica_sizes([topic])
            assert set(sizes[TopicPartition(topic, 0)]) == {1}
            assert set(sizes[TopicPartition(topic, 2)]) == {1, 2}
        finally:
            cluster.start_broker(4)
        states = cluster.admin.describe_partitions([topic])
        assert all(p.isr is not None and sorted(p.isr) == sorted(p.replicas) for p in states)
