"""Many topics' demands at once (:func:`topic_demands`): what
:func:`~ferry.plan.prepare.topic_demand.topic_demand` gives one topic at a time, worked out over flat
arrays of every partition of a run of topics.

One topic at a time, a million partitions in 80,000 topics spent most of the time of preparing in
Python loops and dicts per topic and broker (per broker the sizes it would shed, per broker and rack
the room a replica leaving it finds). Here a run of topics becomes a handful of arrays (per replica
its topic, partition, broker position, rack and size), each partition gets the id of its *shape*
(:data:`~ferry.plan.prepare.topic_demand.Shape`: few distinct ones, each classified once), and the
per-broker figures are counts and sorts over (topic, broker) pairs. Topics the arrays do not cover
are prepared one at a time as before: those with a partition holding more replicas than its factor
(which of them may stay is decided per replica set, :mod:`ferry.plan.prepare.shrink_groups`), and
every topic of a layout of more than :data:`MAX_RACKS` racks (brokers without racks each count as
one; a per-rack figure per broker is then a row as wide as the cluster).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, repeat

import numpy as np

from ferry.model.cluster import PartitionState
from ferry.model.goal import RackMode
from ferry.plan.prepare.demand import FreeLayouts, TopicDemand
from ferry.plan.prepare.quotas import TopicQuota
from ferry.plan.prepare.topic_demand import exact_posable, pinned_partition, shape_profile, topic_demand
from ferry.plan.racks import RackLayout
from ferry.plan.topic_work import TopicWork

MAX_RACKS = 64
"""Most racks a layout may have for :func:`topic_demands` to work in bulk."""
CHUNK = 1 << 16
"""Partitions per run of topics worked out together: bounds the arrays of (topic, broker) figures
(a run of small topics times every broker) whatever the cluster's size."""


def topic_demands(
    topics: Sequence[Sequence[PartitionState]],
    factors: Sequence[Sequence[int]],
    layout: RackLayout,
    quotas: Sequence[TopicQuota],
    mode: RackMode,
    *,
    chunk: int = CHUNK,
) -> list[TopicDemand]:
    """``topic_demand(work, layout, quotas[i], mode)`` for every topic ``i`` (its partitions, each
    to end with its factor of ``factors[i]``), in bulk where it can, over runs of whole topics of
    about ``chunk`` partitions.

    From the partitions, not from a topic's scratch state (:class:`~ferry.plan.topic_work.TopicWork`):
    an engine that places the topics elsewhere needs only the demands here, and building a million
    partitions' scratch state only to read it took most of a second. The few topics that are
    prepared one at a time get theirs."""
    out: list[TopicDemand] = []
    start = 0
    while start < len(topics):
        end, partitions = start, 0
        while end < len(topics) and (end == start or partitions + len(topics[end]) <= chunk):
            partitions += len(topics[end])
            end += 1
        out.extend(_run(topics[start:end], factors[start:end], layout, quotas[start:end], mode))
        start = end
    return out


def _one(
    parts: Sequence[PartitionState], rfs: Sequence[int], layout: RackLayout, quota: TopicQuota, mode: RackMode
) -> TopicDemand:
    """One topic's demand, worked out on its own scratch state."""
    return topic_demand(TopicWork.start(parts[0].tp.topic, parts, rfs, layout.position), layout, quota, mode)


def _run(
    topics: Sequence[Sequence[PartitionState]],
    factors: Sequence[Sequence[int]],
    layout: RackLayout,
    quotas: Sequence[TopicQuota],
    mode: RackMode,
) -> list[TopicDemand]:
    if len(layout.members) > MAX_RACKS:
        return [_one(p, f, layout, q, mode) for p, f, q in zip(topics, factors, quotas, strict=True)]
    flat = _Flat.of(topics, factors, layout)
    shapes = _Shapes.of(flat, layout, mode)
    pinned = shapes.pinned[shapes.number]
    held = _per_broker(flat, layout, np.ones(len(flat.topic), dtype=bool))
    free = _per_broker(flat, layout, ~pinned)
    shed = _shed(flat, layout, quotas)
    strict = mode is RackMode.STRICT
    floor, opened = _rack_sums(flat, shapes, ~pinned, strict, len(layout.members))
    room = _rack_room(flat, shapes, layout, ~pinned) if strict else None
    starts = flat.bounds[:-1]
    shrinking = (np.maximum.reduceat(flat.count - flat.rf, starts) > 0).tolist()
    single = (
        (np.maximum.reduceat(flat.rf, starts) == 1) & (np.minimum.reduceat(flat.rf, starts) == 1)
    ).tolist()
    held_rows, free_rows, shed_rows = held.tolist(), free.tolist(), shed.tolist()
    floor_rows, opened_rows = floor.tolist(), opened.tolist()
    pinned_array = np.flatnonzero(pinned)
    cuts, bounds = np.searchsorted(pinned_array, flat.bounds).tolist(), flat.bounds.tolist()
    pinned_at: list[int] = pinned_array.tolist()
    lists = _Lists.of(flat)
    out = []
    for t, quota in enumerate(quotas):
        if shrinking[t]:
            out.append(_one(topics[t], factors[t], layout, quota, mode))
            continue
        first, last = bounds[t], bounds[t + 1]
        at = pinned_at[cuts[t] : cuts[t + 1]]
        pins = tuple(
            pinned_partition(j - first, lists.brokers(j, layout), lists.rf[j], flat.states[j], layout, mode)
            for j in at
        )
        held_t = tuple(held_rows[t])
        out.append(
            TopicDemand(
                quota,
                held_t,
                tuple(free_rows[t]) if pins else held_t,  # one tuple, not two
                tuple(shed_rows[t]),
                pins,
                tuple(flat.states[j].size for j in at),
                tuple(floor_rows[t]),
                tuple(opened_rows[t]) if strict else (),
                room[t] if room is not None else (),
                last - first,
                single[t],
                (),
                lists.layouts(first, last) if exact_posable(strict, pins, ()) else FreeLayouts(),
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class _Lists:
    """What :class:`FreeLayouts` reads of a run, as Python lists (sliced per topic)."""

    rf: list[int]
    size: list[int]
    starts: list[int]
    """Per partition, where its replicas start within its topic's."""
    replica_starts: list[int]
    position: list[int]

    @classmethod
    def of(cls, flat: _Flat) -> _Lists:
        own = flat.starts[:-1] - flat.starts[flat.bounds[flat.topic]]
        return cls(
            flat.rf.tolist(), flat.size.tolist(), own.tolist(), flat.starts.tolist(), flat.position.tolist()
        )

    def brokers(self, j: int, layout: RackLayout) -> list[int]:
        """Partition ``j``'s replicas on target brokers, in its order (their positions, read back)."""
        return [layout.brokers[p] for p in self.position[self.replica_starts[j] : self.replica_starts[j + 1]]]

    def layouts(self, first: int, last: int) -> FreeLayouts:
        """The topic of partitions ``first`` to ``last`` (exclusive) as :class:`FreeLayouts`."""
        low, high = self.replica_starts[first], self.replica_starts[last]
        return FreeLayouts(
            tuple(self.rf[first:last]),
            tuple(self.size[first:last]),
            (*self.starts[first:last], high - low),
            tuple(self.position[low:high]),
        )


@dataclass(frozen=True, slots=True)
class _Flat:
    """A run of topics, flat: per partition (topic order, then the topic's own) and per replica on a
    target broker (partition order, then the partition's own)."""

    states: list[PartitionState]
    bounds: np.ndarray
    """Per topic, where its partitions start (and, last, where the run ends)."""
    topic: np.ndarray
    """Per partition, its topic in the run."""
    rf: np.ndarray
    current: np.ndarray
    """Per partition, its replication factor now (replicas anywhere, not only on targets)."""
    count: np.ndarray
    """Per partition, its replicas on target brokers."""
    size: np.ndarray
    starts: np.ndarray
    """Per partition, where its replicas start (and, last, where they end)."""
    position: np.ndarray
    """Per replica, its broker's layout position."""
    partition: np.ndarray
    """Per replica, its partition."""

    @classmethod
    def of(
        cls, topics: Sequence[Sequence[PartitionState]], factors: Sequence[Sequence[int]], layout: RackLayout
    ) -> _Flat:
        states = list(chain.from_iterable(topics))
        n = len(states)
        sizes = np.fromiter(map(len, topics), dtype=np.int64, count=len(topics))
        current = np.fromiter((len(s.replicas) for s in states), dtype=np.int64, count=n)
        # Every replica's position, -1 off the targets; those are left out, as a topic's scratch
        # state leaves them out of its slots (TopicWork.start).
        anywhere = np.fromiter(
            map(layout.position.get, chain.from_iterable(s.replicas for s in states), repeat(-1)),
            dtype=np.int64,
            count=int(current.sum()),
        )
        on_target = anywhere >= 0
        partition = np.repeat(np.arange(n), current)[on_target]
        count = np.bincount(partition, minlength=n)
        return cls(
            states,
            np.concatenate([[0], np.cumsum(sizes)]),
            np.repeat(np.arange(len(topics)), sizes),
            np.fromiter(chain.from_iterable(factors), dtype=np.int64, count=n),
            current,
            count,
            np.fromiter((s.size for s in states), dtype=np.int64, count=n),
            np.concatenate([[0], np.cumsum(count)]),
            anywhere[on_target],
            partition,
        )


@dataclass(frozen=True, slots=True)
class _Shapes:
    """The distinct shapes of a run's partitions (with whether their topic mixes factors, which
    the classification reads), classified once each."""

    number: np.ndarray
    """Per partition, its shape's number."""
    pinned: np.ndarray
    floor: np.ndarray
    """Per shape, per rack: the lower bound (shapes x racks)."""
    opened: np.ndarray
    full: np.ndarray
    """Per shape, per rack: 1 where the rack is at its upper bound, else 0."""

    @classmethod
    def of(cls, flat: _Flat, layout: RackLayout, mode: RackMode) -> _Shapes:
        racks = len(layout.members)
        rack_at = np.asarray(layout.rack_at, dtype=np.int64)
        mixed = np.minimum.reduceat(flat.rf, flat.bounds[:-1]) != np.maximum.reduceat(
            flat.rf, flat.bounds[:-1]
        )
        # Per partition, replicas per rack: the shape's counts.
        counts = np.bincount(
            flat.partition * racks + rack_at[flat.position], minlength=len(flat.rf) * racks
        ).reshape(len(flat.rf), racks)
        keys = np.column_stack([mixed[flat.topic], flat.rf, flat.current, counts])
        distinct, number = distinct_rows(keys)
        profiles = [
            shape_profile((rf, current, tuple(row)), layout, mode, bool(m))
            for m, rf, current, *row in distinct.tolist()
        ]
        floor = np.zeros((len(profiles), racks), dtype=np.int64)
        opened = np.zeros((len(profiles), racks), dtype=np.int64)
        full = np.zeros((len(profiles), racks), dtype=np.int64)
        for s, profile in enumerate(profiles):
            if profile.floor:
                floor[s] = profile.floor
                opened[s] = profile.opened
            full[s, list(profile.full)] = 1
        pinned = np.fromiter((p.pinned for p in profiles), dtype=bool, count=len(profiles))
        return cls(number, pinned, floor, opened, full)


def _per_broker(flat: _Flat, layout: RackLayout, chosen: np.ndarray) -> np.ndarray:
    """Per topic and broker position, the replicas of the ``chosen`` partitions it holds."""
    brokers, topics = len(layout.brokers), len(flat.bounds) - 1
    taken = np.repeat(chosen, flat.count)
    keys = flat.topic[flat.partition[taken]] * brokers + flat.position[taken]
    return np.bincount(keys, minlength=topics * brokers).reshape(topics, brokers)


def _shed(flat: _Flat, layout: RackLayout, quotas: Sequence[TopicQuota]) -> np.ndarray:
    """Per topic and broker position, the size of the replica an extra would let it keep: of the
    replicas it holds, smallest first, the one at its count less its base."""
    brokers, topics = len(layout.brokers), len(flat.bounds) - 1
    keys = flat.topic[flat.partition] * brokers + flat.position
    sizes = flat.size[flat.partition]
    order = np.lexsort((sizes, keys))
    pairs, first, held = np.unique(keys[order], return_index=True, return_counts=True)
    base = np.array([q.base for q in quotas], dtype=np.int64).reshape(topics, brokers)
    excess = held - base.reshape(-1)[pairs]
    out = np.zeros(topics * brokers, dtype=np.int64)
    over = excess > 0
    out[pairs[over]] = sizes[order][first[over] + excess[over] - 1]
    return out.reshape(topics, brokers)


def _rack_sums(
    flat: _Flat, shapes: _Shapes, free: np.ndarray, strict: bool, racks: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per topic and rack, the lower bounds and the open room of its free partitions (zeros but
    under strict racks, as one topic at a time)."""
    topics = len(flat.bounds) - 1
    floor = np.zeros((topics, racks), dtype=np.int64)
    opened = np.zeros((topics, racks), dtype=np.int64)
    if strict:
        np.add.at(floor, flat.topic[free], shapes.floor[shapes.number[free]])
        np.add.at(opened, flat.topic[free], shapes.opened[shapes.number[free]])
    return floor, opened


def _rack_room(
    flat: _Flat, shapes: _Shapes, layout: RackLayout, free: np.ndarray
) -> list[tuple[tuple[int, ...], ...]]:
    """Per topic, :attr:`TopicDemand.rack_room`: per broker holding free partitions of it, per
    rack, how many of them would have room in that rack once they drop the replica there (the
    rack's count less those full in it, the broker's own rack aside); zeros elsewhere."""
    brokers, racks, topics = len(layout.brokers), len(layout.members), len(flat.bounds) - 1
    taken = np.repeat(free, flat.count)
    partition = flat.partition[taken]
    keys = flat.topic[partition] * brokers + flat.position[taken]
    zeros = (0,) * racks
    if not len(keys):
        return [(zeros,) * brokers] * topics
    order = np.argsort(keys, kind="stable")
    pairs, first, held = np.unique(keys[order], return_index=True, return_counts=True)
    full = np.add.reduceat(shapes.full[shapes.number[partition[order]]], first, axis=0)
    own = np.asarray(layout.rack_at, dtype=np.int64)[pairs % brokers]
    full[np.arange(len(pairs)), own] = 0
    rows, number = distinct_rows(held[:, None] - full)
    shared = [layout.memo.setdefault(("room row", r), r) for r in map(tuple, rows.tolist())]
    out = [[zeros] * brokers for _ in range(topics)]
    for pair, row in zip(pairs.tolist(), number.tolist(), strict=True):
        out[pair // brokers][pair % brokers] = shared[row]
    return [tuple(row) for row in out]


_MIX = np.random.default_rng(0).integers(1, 1 << 62, size=1024, dtype=np.int64) | 1
"""Odd multipliers that hash a row of ints to one (wrapping) int."""


def distinct_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of the 2-d int array ``a`` and per row of ``a`` the number of its own:
    ``np.unique(a, axis=0, return_inverse=True)``, up to the order of the distinct rows, through a
    hash of each row (sorting rows as raw bytes took seconds on a run of 65,536 partitions). Rows
    of one hash that differ fall back to ``np.unique``."""
    if a.shape[1] > len(_MIX):
        distinct, number = np.unique(a, axis=0, return_inverse=True)
        return distinct, number.reshape(-1)
    with np.errstate(over="ignore"):
        hashed = a.astype(np.int64, copy=False) @ _MIX[: a.shape[1]]
    _, first, number = np.unique(hashed, return_index=True, return_inverse=True)
    number = number.reshape(-1)
    distinct = a[first]
    if not np.array_equal(distinct[number], a):
        distinct, number = np.unique(a, axis=0, return_inverse=True)
        number = number.reshape(-1)
    return distinct, number
