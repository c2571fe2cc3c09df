"""What one topic asks of the global balance pass: its quota, the replicas each broker holds, the
partitions that cannot keep every replica (:class:`Pinned`), and where every partition stands
(:class:`FreeLayouts`), built by :mod:`ferry.plan.prepare.topic_demand`; and the sums over many
topics' demands that the program's rows read in bulk."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain

import numpy as np

from ferry.plan.prepare.quotas import TopicQuota
from ferry.plan.prepare.shrink_groups import Group
from ferry.plan.racks import RackBounds


@dataclass(frozen=True, slots=True)
class Pinned:
    """A partition that cannot keep every replica it has on target brokers.

    Attributes:
        index: position of the partition within its topic.
        replicas: its current replicas on target brokers.
        rf: the replication factor it must end with.
        bounds: per rack (lower, upper) replicas; ``None`` when racks do not constrain it.
    """

    index: int
    replicas: tuple[int, ...]
    rf: int
    bounds: RackBounds | None
    in_sync: tuple[int, ...] = ()
    """When the replication factor goes down: the in-sync replicas (an out-of-sync one may stay only
    beside one of them)."""


@dataclass(frozen=True, slots=True)
class FreeLayouts:
    """Where a topic's partitions stand, flat, for the exact pass
    (:mod:`ferry.plan.balance.repair.per_partition`).

    Partition ``j`` of the topic has replication factor ``rf[j]``, ``size[j]`` bytes and its
    current replicas on target brokers (layout positions) at ``replicas[starts[j]:starts[j + 1]]``.
    Flat tuples: a million partitions cost a few ints each.
    """

    rf: tuple[int, ...] = ()
    size: tuple[int, ...] = ()
    starts: tuple[int, ...] = (0,)
    replicas: tuple[int, ...] = ()

    def __len__(self) -> int:
        return len(self.rf)

    def held(self, j: int) -> tuple[int, ...]:
        return self.replicas[self.starts[j] : self.starts[j + 1]]


@dataclass(frozen=True, slots=True)
class TopicDemand:
    """What the balance pass needs to know of one topic.

    Attributes:
        quota: the topic's quota.
        held: per broker (layout order), replicas of the topic it holds now.
        free: per broker, the part of ``held`` that belongs to partitions that are not pinned.
        shed: per broker, size of the replica it would shed without an extra (0 if none).
        pinned: the pinned partitions.
    """

    quota: TopicQuota
    held: tuple[int, ...]
    free: tuple[int, ...]
    shed: tuple[int, ...]
    pinned: tuple[Pinned, ...]
    sizes: tuple[int, ...] = ()
    """Size of each pinned partition (same order as ``pinned``), to keep big replicas in place."""
    rack_floor: tuple[int, ...] = ()
    """Per rack, replicas the partitions that are not pinned must keep there (their lower bounds)."""
    rack_open: tuple[int, ...] = ()
    """Per rack, new replicas the partitions that are not pinned could take there without dropping
    anything: ``min(open slots, room under the rack's upper bound)`` summed over them. Empty: racks do
    not cap where new replicas go."""
    rack_room: tuple[tuple[int, ...], ...] = ()
    """Per broker (layout order), per rack: how many of the partitions that are not pinned and hold a
    replica there would have room in that rack once they drop it."""
    partitions: int = 0
    """How many partitions the topic has (each needs a preferred leader)."""
    single_replica: bool = False
    """Every partition has one replica: its only replica must lead it."""
    shrink_groups: tuple[Group, ...] = ()
    """Partitions that only have too many replicas, by replica set (neither free nor pinned)."""
    layouts: FreeLayouts = field(default_factory=FreeLayouts)
    """Every partition, for :mod:`ferry.plan.balance.repair.per_partition`: with strict racks, when no
    partition only sheds replicas or lowers its factor; empty otherwise."""

    @property
    def exact(self) -> bool:
        """Whether :mod:`ferry.plan.balance.repair.per_partition` solves the topic partition by partition:
        every partition described, more than one replica each. Its rack-room rows are then left to that
        pass (:mod:`ferry.plan.balance.assign_extras`). Single-replica topics join that pass only as
        partners: their partitions also count in the leader rows, which it does not pose."""
        return len(self.layouts) == self.partitions > 0 and not self.single_replica


def singles_with_extras(demands: Sequence[TopicDemand]) -> bool:
    """Whether a topic with single-replica partitions has extras: unless they are pooled with the
    others' (:attr:`ferry.plan.balance.setting.Setting.pool_singles`), the balance program gives
    those a column per broker, never a pool (:mod:`ferry.plan.balance.program.pools`)."""
    return any(d.single_replica and d.quota.extras > 0 for d in demands)


def base_loads(brokers: int, demands: Sequence[TopicDemand]) -> np.ndarray:
    """Per broker (layout order), the sum of every topic's base quota."""
    if not demands:
        return np.zeros(brokers, dtype=np.int64)
    distinct, rows = distinct_bases(demands)
    loads: np.ndarray = distinct.T @ np.bincount(rows, minlength=len(distinct))
    return loads


def extra_bounds(demands: Sequence[TopicDemand], racks: int) -> tuple[np.ndarray, np.ndarray]:
    """Per topic and rack, the (fewest, most) extras its quota's rack rows allow there, as a
    topics x racks x 2 array; and per topic its extras."""
    bounds = np.fromiter(
        chain.from_iterable(chain.from_iterable(d.quota.rack_extras for d in demands)),
        dtype=np.int64,
        count=2 * racks * len(demands),
    ).reshape(len(demands), racks, 2)
    extras = np.fromiter((d.quota.extras for d in demands), dtype=np.int64, count=len(demands))
    return bounds, extras


def distinct_bases(demands: Iterable[TopicDemand]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct base quotas of ``demands``, one row each, and per topic the row of its own:
    topics of one replica count mostly share theirs, so a topics x brokers array is never needed."""
    index: dict[tuple[int, ...], int] = {}
    rows = np.fromiter((index.setdefault(d.quota.base, len(index)) for d in demands), dtype=np.int64)
    return np.array(list(index), dtype=np.int64), rows
