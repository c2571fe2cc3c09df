"""Immutable cluster state: brokers, partitions and the snapshot that holds them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from typing import NamedTuple


class TopicPartition(NamedTuple):
    """A partition of a topic, ordered by topic then partition number.

    A named tuple rather than a dataclass: plans key dicts by partition millions of times, and a
    tuple hashes in C where a frozen dataclass runs a generated Python ``__hash__``.
    """

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


DIR_MARGIN = 0.05
"""The share of a log dir's size kept free after every replica headed there has arrived: the
planner leaves it and ``ferry execute`` refuses a move that would not."""


@dataclass(frozen=True, slots=True)
class LogDir:
    """One log directory of a broker (JBOD): a disk, as DescribeLogDirs shows it.

    ``total_bytes`` and ``usable_bytes`` are the volume's size and free space (Kafka 3.3+, else
    None; local data only, never remote storage). An ``offline`` dir failed: the broker serves
    nothing from it and creates no future log anywhere while it is down. A ``cordoned`` dir
    (Kafka 4.3, KIP-1066) takes no new replicas.
    """

    path: str
    total_bytes: int | None = None
    usable_bytes: int | None = None
    offline: bool = False
    cordoned: bool = False

    @property
    def open(self) -> bool:
        """Whether new replicas may go into it: online and not cordoned."""
        return not self.offline and not self.cordoned

    @property
    def room(self) -> int | None:
        """Bytes that may still go into it: its free space less :data:`DIR_MARGIN` of its size
        (a copy into it keeps its source until it has caught up); None where it does not say."""
        if self.usable_bytes is None or self.total_bytes is None:
            return None
        return self.usable_bytes - int(DIR_MARGIN * self.total_bytes)


@dataclass(frozen=True, slots=True)
class Broker:
    """A broker and its rack (``None`` when the cluster has no rack information).

    ``alive`` is False for a broker that still holds replicas but was down (fenced or unregistered)
    when the snapshot was taken: it must stay in the snapshot, or its replicas would name an unknown
    broker, but nothing may be moved onto it. ``capacity_bytes`` is its disk's size where known (a
    live snapshot sums DescribeLogDirs' ``TotalBytes`` over its online log dirs). ``cordoned``: every
    log dir of it is cordoned (Kafka 4.3, KIP-1066), so it takes no new partitions;
    ``cordoned_log_dirs``: the paths of those of its dirs that are (a broker with only some of them
    cordoned takes new replicas in its other dirs). ``log_dirs``: each of its dirs, where known
    (a live snapshot), sorted by path. ``fetch_last_tiered``: a new replica on it of a tiered topic
    copies only what its leader has not uploaded (KIP-1023).
    """

    id: int
    rack: str | None = None
    alive: bool = True
    capacity_bytes: int | None = None
    cordoned: bool = False
    cordoned_log_dirs: tuple[str, ...] = ()
    log_dirs: tuple[LogDir, ...] = ()
    fetch_last_tiered: bool = False

    def log_dir(self, path: str) -> LogDir | None:
        """Its dir at ``path``, None when it has no such dir (or its dirs are unknown)."""
        return next((d for d in self.log_dirs if d.path == path), None)

    def __post_init__(self) -> None:
        if self.id < 0:
            raise ValueError(f"broker id must be >= 0, got {self.id}")
        if self.capacity_bytes is not None and self.capacity_bytes <= 0:
            raise ValueError(f"capacity of broker {self.id} must be > 0 bytes, got {self.capacity_bytes}")


@dataclass(frozen=True, slots=True)
class PartitionState:
    """What the cluster says about one partition.

    ``replicas`` is ordered: the first replica is the preferred leader. ``leader``, ``isr`` and
    ``size_bytes`` are optional because a hand-written snapshot may not know them; a planner that
    needs a size treats an unknown one as 0.
    """

    tp: TopicPartition
    replicas: tuple[int, ...]
    leader: int | None = None
    isr: tuple[int, ...] | None = None
    size_bytes: int | None = None
    replica_bytes: tuple[tuple[int, int], ...] = field(default=(), compare=False)
    """(broker, bytes on its disk) per replica, where measured (DescribeLogDirs): replicas of one
    partition differ in size (a follower that lags, segments deleted at different times). A
    measurement, not part of what the partition is: two states differing only here are equal."""
    replica_dirs: tuple[tuple[int, str], ...] = field(default=(), compare=False)
    """(broker, log dir) per replica, where known (DescribeLogDirs), by broker id; a measurement
    like ``replica_bytes``."""
    untiered_bytes: int | None = field(default=None, compare=False)
    """Of a tiered topic: the bytes of the leader's local log not yet uploaded, what a new replica
    on a broker with ``fetch_last_tiered`` copies (estimated from offsets); a measurement."""

    def bytes_to_copy(self, broker: Broker) -> int:
        """What a new replica on ``broker`` copies: the leader's local bytes, or only those not yet
        uploaded where the broker fetches from the last tiered offset and they are known."""
        if broker.fetch_last_tiered and self.untiered_bytes is not None:
            return self.untiered_bytes
        return self.size

    def __post_init__(self) -> None:
        if not self.replicas:
            raise ValueError(f"{self.tp}: replicas must not be empty")
        if len(set(self.replicas)) != len(self.replicas):
            raise ValueError(f"{self.tp}: duplicate replica in {list(self.replicas)}")

    @property
    def replication_factor(self) -> int:
        return len(self.replicas)

    @property
    def size(self) -> int:
        """Size in bytes, 0 when unknown."""
        return self.size_bytes or 0

    def dir_on(self, broker: int) -> str | None:
        """The log dir of this partition's replica on ``broker``, None where unknown."""
        return next((d for b, d in self.replica_dirs if b == broker), None)

    def off_named_dirs(self, named: Mapping[int, str]) -> list[int]:
        """The brokers of ``named`` (broker -> dir) whose replica of this partition is not in the dir
        named for it: held elsewhere on the broker, not held there yet, or in a dir not known."""
        return [b for b, path in named.items() if self.dir_on(b) != path]

    def bytes_on(self, broker: int) -> int:
        """Bytes of this partition's replica on ``broker``: as measured there, else its size."""
        for b, n in self.replica_bytes:
            if b == broker:
                return n
        return self.size

    @property
    def current_leader(self) -> int:
        """The leader if known, else the preferred leader (first replica)."""
        return self.leader if self.leader is not None and self.leader >= 0 else self.replicas[0]

    @classmethod
    def checked(
        cls,
        tp: TopicPartition,
        replicas: tuple[int, ...],
        leader: int | None,
        isr: tuple[int, ...] | None,
        size_bytes: int | None,
    ) -> PartitionState:
        """A partition whose replicas a reader has checked already (some, none twice), without
        measurements: built through the slots directly, skipping the frozen class's guarded
        ``__setattr__`` per field and ``__post_init__``'s checks, in under half the time (a
        snapshot file builds a million)."""
        out = object.__new__(cls)
        # One call per slot, written out: a loop over the slots took twice as long.
        _set_tp(out, tp)
        _set_replicas(out, replicas)
        _set_leader(out, leader)
        _set_isr(out, isr)
        _set_size(out, size_bytes)
        _set_replica_bytes(out, ())
        _set_replica_dirs(out, ())
        _set_untiered(out, None)
        return out


_SLOTS = {name: PartitionState.__dict__[name].__set__ for name in PartitionState.__slots__}
"""Each field's slot setter, by name (used by :meth:`PartitionState.checked`)."""
_set_tp, _set_replicas, _set_leader, _set_isr = (
    _SLOTS["tp"],
    _SLOTS["replicas"],
    _SLOTS["leader"],
    _SLOTS["isr"],
)
_set_size, _set_replica_bytes, _set_replica_dirs, _set_untiered = (
    _SLOTS["size_bytes"],
    _SLOTS["replica_bytes"],
    _SLOTS["replica_dirs"],
    _SLOTS["untiered_bytes"],
)


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """Brokers and partitions at one moment; partitions are kept sorted by topic-partition.

    ``tiered_topics``: the topics with ``remote.storage.enable`` (KIP-405), whose older segments
    live in remote storage: their sizes are local bytes, all a new replica copies.
    """

    brokers: tuple[Broker, ...]
    partitions: tuple[PartitionState, ...]
    tiered_topics: frozenset[str] = frozenset()
    _by_tp: Mapping[TopicPartition, PartitionState] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        # attrgetter, not a lambda: it reads the key in C, a million times per big snapshot.
        ordered = tuple(sorted(self.partitions, key=attrgetter("tp")))
        object.__setattr__(self, "partitions", ordered)
        object.__setattr__(self, "brokers", tuple(sorted(self.brokers, key=lambda b: b.id)))
        by_tp = {p.tp: p for p in ordered}
        if len(by_tp) != len(ordered):
            raise ValueError("duplicate topic-partition in snapshot")
        object.__setattr__(self, "_by_tp", by_tp)

    @classmethod
    def of(
        cls, brokers: Iterable[Broker], partitions: Iterable[PartitionState], tiered: Iterable[str] = ()
    ) -> ClusterSnapshot:
        return cls(tuple(brokers), tuple(partitions), frozenset(tiered))

    def partition(self, tp: TopicPartition) -> PartitionState:
        return self._by_tp[tp]

    def has(self, tp: TopicPartition) -> bool:
        """Whether the snapshot holds partition ``tp``."""
        return tp in self._by_tp

    @property
    def broker_ids(self) -> tuple[int, ...]:
        return tuple(b.id for b in self.brokers)

    @property
    def dead_broker_ids(self) -> tuple[int, ...]:
        """Brokers that were down when the snapshot was taken."""
        return tuple(b.id for b in self.brokers if not b.alive)

    @property
    def racks(self) -> dict[int, str | None]:
        return {b.id: b.rack for b in self.brokers}

    @property
    def topics(self) -> tuple[str, ...]:
        return tuple(sorted({p.tp.topic for p in self.partitions}))
