"""``FakeAdmin``: an in-memory cluster behind the ClusterAdmin Protocol, for unit tests of pure logic.

It answers the way the real cluster does (tests/support/admin_contract.py runs the same tests
against both), so code tested against it behaves the same on Kafka. Tests drive it with the
set-up methods (``create_topic``, ``produce``, ``stop_broker``...), which mirror what an
integration test does to the real cluster.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ferry.errors import PreconditionError
from ferry.kafka.admin import OngoingReassignment, ReplicaSizes
from ferry.model import Broker, PartitionState, TopicPartition

DEFAULT_MIN_INSYNC = 1
"""Kafka's default ``min.insync.replicas``, which the sandbox cluster keeps."""


@dataclass
class _Partition:
    replicas: tuple[int, ...]
    leader: int | None
    isr: tuple[int, ...]
    size: int = 0
    moving: OngoingReassignment | None = None


@dataclass
class FakeAdmin:
    """A cluster of ``brokers`` with no topics; every broker starts alive."""

    brokers: dict[int, Broker] = field(default_factory=dict)
    partitions: dict[TopicPartition, _Partition] = field(default_factory=dict)
    min_insync: dict[str, int] = field(default_factory=dict)
    closed: bool = False

    @classmethod
    def of(cls, brokers: Iterable[Broker]) -> FakeAdmin:
        return cls(brokers={b.id: b for b in brokers})

    # -- set-up, what a test does to a real cluster ------------------------------------------------

    def create_topic(
        self, topic: str, assignments: Mapping[int, Sequence[int]], *, min_insync: int | None = None
    ) -> None:
        """Create ``topic`` with explicit replica assignments; the first replica leads, as in Kafka."""
        if len({len(r) for r in assignments.values()}) > 1:
            # Kafka refuses this too (InvalidReplicationAssignment): one RF per topic at creation.
            raise ValueError("every partition of a new topic needs the same number of replicas")
        for number, replicas in assignments.items():
            unknown = set(replicas) - set(self.brokers)
            if unknown:
                raise ValueError(f"unknown brokers {sorted(unknown)}")
            alive = tuple(r for r in replicas if self.brokers[r].alive)
            self.partitions[TopicPartition(topic, number)] = _Partition(
                tuple(replicas), alive[0] if alive else None, alive
            )
        if min_insync is not None:
            self.min_insync[topic] = min_insync

    def produce(self, topic: str, size: int) -> None:
        """Append ``size`` bytes to every partition of ``topic`` (spread evenly) on live replicas."""
        parts = [p for tp, p in self.partitions.items() if tp.topic == topic]
        for p in parts:
            p.size += size // len(parts)

    def stop_broker(self, broker_id: int) -> None:
        """The broker goes down: fenced, out of every ISR, leadership moves to the next ISR member."""
        self.brokers[broker_id] = replace(self.brokers[broker_id], alive=False)
        for p in self.partitions.values():
            if broker_id in p.isr and len(p.isr) > 1:
                # Kafka keeps the last ISR member in the ISR (it cannot shrink to empty).
                p.isr = tuple(r for r in p.isr if r != broker_id)
            if p.leader == broker_id:
                alive = [r for r in p.isr if self.brokers[r].alive]
                p.leader = alive[0] if alive else None

    def start_broker(self, broker_id: int) -> None:
        """The broker is back and has caught up: in every ISR again."""
        self.brokers[broker_id] = replace(self.brokers[broker_id], alive=True)
        for p in self.partitions.values():
            if broker_id in p.replicas and broker_id not in p.isr:
                p.isr = tuple(r for r in p.replicas if r in p.isr or r == broker_id)
            if p.leader is None and broker_id in p.isr:
                p.leader = broker_id

    def start_reassignment(self, tp: TopicPartition, target: Sequence[int]) -> None:
        """A reassignment in flight (KIP-455): replicas become target + original until it ends."""
        p = self.partitions[tp]
        adding = tuple(b for b in target if b not in p.replicas)
        removing = tuple(b for b in p.replicas if b not in target)
        replicas = (*target, *removing)
        p.replicas = replicas
        p.moving = OngoingReassignment(tp, replicas, adding, removing)

    # -- ClusterAdmin ------------------------------------------------------------------------------

    def describe_brokers(self, *, include_fenced: bool = False) -> tuple[Broker, ...]:
        return tuple(b for _, b in sorted(self.brokers.items()) if include_fenced or b.alive)

    def describe_partitions(self, topics: Collection[str] | None = None) -> tuple[PartitionState, ...]:
        selected = self._selected(topics)
        return tuple(
            PartitionState(tp, p.replicas, leader=p.leader, isr=p.isr) for tp, p in sorted(selected.items())
        )

    def describe_replica_sizes(self, topics: Collection[str] | None = None) -> ReplicaSizes:
        # DescribeLogDirs reaches live brokers only: a down broker's replicas have no size.
        return {
            tp: {b: p.size for b in p.replicas if self.brokers[b].alive}
            for tp, p in self._selected(topics).items()
        }

    def list_reassignments(self, topics: Collection[str] | None = None) -> tuple[OngoingReassignment, ...]:
        return tuple(p.moving for _, p in sorted(self._selected(topics).items()) if p.moving is not None)

    def describe_min_insync(self, topics: Collection[str]) -> Mapping[str, int]:
        return {t: self.min_insync.get(t, DEFAULT_MIN_INSYNC) for t in self._selected_topics(topics)}

    def close(self) -> None:
        self.closed = True

    # -- helpers -----------------------------------------------------------------------------------

    def _selected_topics(self, topics: Collection[str] | None) -> list[str]:
        existing = sorted({tp.topic for tp in self.partitions})
        if topics is None:
            return existing
        for topic in sorted(topics):
            if topic not in existing:
                # The same error, and message, as KafkaPythonAdmin gives for UnknownTopicOrPartition.
                raise PreconditionError(f"topic {topic!r} does not exist", hint="check --topics")
        return sorted(topics)

    def _selected(self, topics: Collection[str] | None) -> dict[TopicPartition, _Partition]:
        wanted = set(self._selected_topics(topics))
        return {tp: p for tp, p in self.partitions.items() if tp.topic in wanted}
