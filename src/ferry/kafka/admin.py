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
from ferry.model import Broker, LogDir, PartitionState, TopicPartition


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

    def local_share_from(self, offset: int) -> float:
        """The share of the local log from ``offset`` (the local start where it is earlier) to
        its end: what a copy starting there takes of the leader's local bytes (0: no local log)."""
        span = self.end - self.local_start
        return (self.end - max(offset, self.local_start)) / span if span > 0 else 0.0


@dataclass(frozen=True, slots=True)
class ReplicaDir:
    """Where one replica lives inside its broker, and a move between its dirs in flight."""

    path: str
    """The dir of its current log."""
    size: int
    """Bytes of its current log."""
    future_path: str | None = None
    """The dir an intra-broker move (AlterReplicaLogDirs) copies it into; None: no move."""
    future_size: int = 0
    """Bytes copied so far into the future log."""

    @property
    def copying(self) -> bool:
        """Whether a move between its broker's dirs is in flight."""
        return self.future_path is not None

    def settled_in(self, path: str) -> bool:
        """Whether its log is in ``path``, with no move between dirs left."""
        return self.path == path and not self.copying


@dataclass(frozen=True, slots=True)
class BrokerDirs:
    """One broker's log dirs and the replicas of the asked topics in them (DescribeLogDirs)."""

    dirs: tuple[LogDir, ...]
    replicas: Mapping[TopicPartition, ReplicaDir]

    def dir(self, path: str) -> LogDir | None:
        return next((d for d in self.dirs if d.path == path), None)


ReplicaTarget = tuple[TopicPartition, int]
"""A replica: its partition and its broker."""


@dataclass(frozen=True, slots=True)
class Tiering:
    """Tiered storage (KIP-405) where it matters to a move."""

    topics: frozenset[str] = frozenset()
    """Topics with ``remote.storage.enable``: a new replica copies only the leader's local log."""
    from_last_tiered: frozenset[int] = frozenset()
    """Brokers with ``follower.fetch.last.tiered.offset.enable`` (KIP-1023): a new replica there
    copies only what its leader has not uploaded yet."""


ReplicaSizes = Mapping[TopicPartition, Mapping[int, int]]
"""Bytes on disk per partition, per broker holding a replica."""


def disks_of(found: BrokerDirs) -> Disks:
    """A broker's dirs taken together: the size of its online ones (None where one does not say)
    and its cordons."""
    online = [d for d in found.dirs if not d.offline]
    sizes = [d.total_bytes for d in online]
    capacity = sum(n for n in sizes if n is not None) if online and None not in sizes else None
    closed = tuple(d.path for d in online if d.cordoned)
    return Disks(capacity, bool(online) and len(closed) == len(online), closed)


def replica_dir(found: Mapping[int, BrokerDirs], broker: int, tp: TopicPartition) -> ReplicaDir | None:
    """Where ``tp``'s replica on ``broker`` lives, as ``found`` shows it; None where it does not."""
    held = found.get(broker)
    return held.replicas.get(tp) if held is not None else None


def settled_in(found: Mapping[int, BrokerDirs], broker: int, tp: TopicPartition, path: str) -> bool:
    """Whether ``tp``'s replica on ``broker`` is in its dir ``path``, as ``found`` shows it, with no
    move between dirs left: a named dir reached (:meth:`ReplicaDir.settled_in`)."""
    replica = replica_dir(found, broker, tp)
    return replica is not None and replica.settled_in(path)


def replica_sizes(by_broker: Mapping[int, BrokerDirs]) -> ReplicaSizes:
    """Bytes of each replica's current log, per partition and broker (future logs left out: an
    intra-broker copy in progress is not a second replica)."""
    sizes: dict[TopicPartition, dict[int, int]] = {}
    for broker, found in by_broker.items():
        for tp, replica in found.replicas.items():
            sizes.setdefault(tp, {})[broker] = replica.size
    return sizes


NOT_THERE_YET = "replica not on the broker yet: the dir is recorded as its preferred one"
""":meth:`ClusterAdmin.alter_replica_log_dirs`'s answer for a replica its broker does not hold."""


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

    def describe_log_dirs(
        self, topics: Collection[str] | None = None, *, within_s: float | None = None
    ) -> Mapping[int, BrokerDirs]:
        """Each live broker's log dirs and where the replicas of ``topics`` (all when None; none
        when empty) live in them, future logs included: one DescribeLogDirs request per broker.

        With ``within_s`` the brokers that have not answered within that many seconds (stopped,
        unreachable) are left out of the mapping rather than waited for."""
        ...

    def describe_partition_dirs(
        self, partitions: Collection[TopicPartition], *, within_s: float | None = None
    ) -> Mapping[int, BrokerDirs]:
        """:meth:`describe_log_dirs` for exactly ``partitions``: what a poll measuring moves needs,
        without listing their topics' partitions first nor reading the replicas of the others."""
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

    def log_offsets(
        self, partitions: Collection[TopicPartition], *, within_s: float | None = None
    ) -> Mapping[TopicPartition, LogOffsets]:
        """Log end and local start offsets of ``partitions``, from their leaders (one ListOffsets
        request per leader and kind of offset); a partition without a leader is left out, and with
        ``within_s`` so is one whose leader has not answered within that many seconds."""
        ...

    def describe_tiering(self, topics: Collection[str], brokers: Collection[int]) -> Tiering:
        """Which of ``topics`` are tiered and which of ``brokers`` fetch from the last tiered
        offset (DescribeConfigs)."""
        ...

    def latest_tiered(self, partitions: Collection[TopicPartition]) -> Mapping[TopicPartition, int]:
        """The last offset of each partition in remote storage, -1 where none (ListOffsets)."""
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

    def alter_replica_log_dirs(
        self, targets: Mapping[ReplicaTarget, str]
    ) -> Mapping[ReplicaTarget, str | None]:
        """Move each replica into the log dir named (AlterReplicaLogDirs, one request per broker).

        A replica the broker holds gets a future log in that dir, copied in the background; one it
        does not hold yet gets the dir as its preferred one, used when a reassignment creates it.

        Returns:
            Per replica, None when accepted, :data:`NOT_THERE_YET` when only recorded as preferred,
            or a one-line reason when refused (an offline or cordoned dir, an unknown path).
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

    def config_writes_settle_in(self) -> float:
        """Seconds until no config write of this client that failed can land any more; 0 when none can.

        A write that timed out or failed over may still be applied later: the broker that got it
        forwards it to the controller and keeps trying through a failover. Landing after a restore,
        it would put a throttle back; a restore waits this long and looks again.
        """
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

    def read_freeze(self, *, within_s: float | None = None) -> FreezeState | None:
        """The latest freeze record in the control topic; None when there is none (or no topic).

        Bounded by the client's timeout, with its retries; with ``within_s``, one read bounded by
        that, which raises a transient :class:`~ferry.errors.KafkaError` when the topic's leader
        has not answered by then (stopped, stalled): what a run's poll reads.
        """
        ...

    def write_freeze(self, state: FreezeState) -> None:
        """Write ``state`` as the latest freeze record, creating the control topic when missing.

        Returns once the record is acknowledged by every in-sync replica, so any reader after
        that sees it.
        """
        ...
