"""The ``ClusterAdmin`` seam: everything ferry asks of a Kafka cluster, as plain values.

``snapshot`` and (later) ``execute`` depend only on this Protocol; ``client.KafkaPythonAdmin`` is
the real implementation and a ``FakeAdmin`` in tests/support is the other (kafka-kit's ``stub``).
Every method is one batched request per broker at most, never one per partition.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ferry.kafka.freeze import FreezeState
from ferry.kafka.resources import ConfigKey
from ferry.model import Broker, PartitionState, TopicPartition


@dataclass(frozen=True, slots=True)
class OngoingReassignment:
    """A partition in motion (KIP-455): ``replicas`` is target + original while it lasts."""

    tp: TopicPartition
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]

    @property
    def target(self) -> tuple[int, ...]:
        """Where the move goes: its replicas without the ones it removes."""
        return tuple(b for b in self.replicas if b not in self.removing_replicas)


@dataclass(frozen=True, slots=True)
class Disks:
    """A broker's log dirs taken together."""

    capacity_bytes: int | None
    """Their size, ``None`` where a dir does not say (before Kafka 3.3)."""
    cordoned: bool
    """Every online dir is cordoned: the broker takes no new partitions."""
    cordoned_dirs: tuple[str, ...] = ()
    """The paths of its cordoned dirs, sorted (all of them when ``cordoned``)."""


@dataclass(frozen=True, slots=True)
class PartitionHealth:
    """One partition's replicas as its leader sees them (DescribeTopicPartitions, KIP-966)."""

    tp: TopicPartition
    replicas: tuple[int, ...]
    leader: int | None
    isr: tuple[int, ...]
    elr: tuple[int, ...] = ()
    """Eligible leader replicas: out of the ISR since it went under min ISR, still safe to lead."""


@dataclass(frozen=True, slots=True)
class LogOffsets:
    """A partition's log on its leader, in offsets (ListOffsets)."""

    end: int
    """The log end offset: every message ever produced to it moves it on by one."""
    local_start: int
    """The first offset still on the leader's disk (tiered topics: where the local log starts)."""


ReplicaSizes = Mapping[TopicPartition, Mapping[int, int]]
"""Bytes on disk per partition, per broker holding a replica."""


class ClusterAdmin(Protocol):
    """Read access to a cluster's layout; implementations raise ``KafkaError`` on failure."""

    def describe_brokers(self, *, include_fenced: bool = False) -> tuple[Broker, ...]:
        """Registered, unfenced brokers with their racks.

        With ``include_fenced`` also the registered brokers that are fenced (down, or shutting
        down), marked ``alive=False``: their racks are still known to the controller.
        """
        ...

    def describe_partitions(self, topics: Collection[str] | None = None) -> tuple[PartitionState, ...]:
        """Replicas, leader and ISR of every partition of ``topics`` (all topics when None).

        ``size_bytes`` is left unknown; sizes come from :meth:`describe_replica_sizes`.
        """
        ...

    def describe_replica_sizes(self, topics: Collection[str] | None = None) -> ReplicaSizes:
        """Replica sizes from DescribeLogDirs, summed over each broker's log directories."""
        ...

    def describe_disks(self) -> Mapping[int, Disks]:
        """Each live broker's disks from DescribeLogDirs: ``TotalBytes`` summed over its online log
        dirs, and whether every one of them is cordoned (Kafka 4.3, KIP-1066)."""
        ...

    def list_reassignments(self, topics: Collection[str] | None = None) -> tuple[OngoingReassignment, ...]:
        """Ongoing reassignments (ListPartitionReassignments), restricted to ``topics`` if given."""
        ...

    def describe_min_insync(self, topics: Collection[str]) -> Mapping[str, int]:
        """The effective ``min.insync.replicas`` of each topic (topic, broker or cluster level)."""
        ...

    def describe_health(self, topics: Collection[str] | None = None) -> tuple[PartitionHealth, ...]:
        """Replicas, leader, ISR and ELR of every partition of ``topics`` (all topics when None)."""
        ...

    def log_offsets(self, partitions: Collection[TopicPartition]) -> Mapping[TopicPartition, LogOffsets]:
        """Log end and local start offsets of ``partitions``, from their leaders (one ListOffsets
        request per leader and kind of offset); a partition without a leader is left out."""
        ...

    def close(self) -> None:
        """Release connections; safe to call twice."""
        ...

    # -- writes used by the executor (ferry.execute) ---------------------------------------------

    def cluster_id(self) -> str | None:
        """The cluster's id (DescribeCluster), recorded in the journal to recognise the cluster."""
        ...

    def alter_reassignments(
        self, targets: Mapping[TopicPartition, Sequence[int] | None]
    ) -> Mapping[TopicPartition, str | None]:
        """Submit (a replica list) or cancel (None) reassignments: one AlterPartitionReassignments.

        Returns:
            Per partition, None when accepted or a one-line reason when the controller refused it
            (e.g. ``NoReassignmentInProgressError`` for a cancel with nothing to cancel).
        """
        ...

    def describe_throttle_configs(self, keys: Collection[ConfigKey]) -> Mapping[ConfigKey, str]:
        """The values of ``keys`` set on the resource itself (topic or per-broker dynamic config).

        Entries not set at that level (defaults, cluster-wide broker defaults) are absent. KRaft
        brokers apply config changes a few milliseconds apart, so a read right after a write may
        still show the old value.
        """
        ...

    def alter_configs(self, writes: Mapping[ConfigKey, str | None]) -> None:
        """IncrementalAlterConfigs: SET each entry to its value, DELETE it when the value is None."""
        ...

    def elect_preferred_leaders(
        self, partitions: Collection[TopicPartition]
    ) -> Mapping[TopicPartition, str | None]:
        """Preferred-leader election (ElectLeaders) for ``partitions``.

        Returns:
            Per partition, None when the preferred replica leads (elected now or already), or a
            one-line reason (e.g. the preferred replica is not in the ISR).
        """
        ...

    # -- the freeze switch (ferry.kafka.freeze) --------------------------------------------------

    def read_freeze(self) -> FreezeState | None:
        """The latest freeze record in the control topic; None when there is none (or no topic).

        Bounded by the client's timeout: the executor reads it every poll.
        """
        ...

    def write_freeze(self, state: FreezeState) -> None:
        """Write ``state`` as the latest freeze record, creating the control topic when missing.

        Returns once the record is acknowledged by every in-sync replica, so any reader after
        that sees it.
        """
        ...
