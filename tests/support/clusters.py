"""Generated and named clusters for planner tests (cruise-control's DeterministicCluster idea)."""

from __future__ import annotations

import random

from ferry.model import Broker, ClusterSnapshot, PartitionState, TopicPartition


def generated(
    *,
    brokers: int,
    racks: int,
    topics: int,
    partitions: int,
    rf: int,
    seed: int,
    occupied: int | None = None,
    skew: float = 0.0,
) -> ClusterSnapshot:
    """A random cluster: replicas on the first ``occupied`` brokers (default all), racks round robin.

    ``skew`` > 0 makes low broker ids likelier to hold replicas (an unbalanced cluster). Racks are
    assigned ``r{id % racks}``, so unequal rack sizes appear whenever ``racks`` does not divide
    ``brokers``; ``racks=0`` gives no rack information.
    """
    rnd = random.Random(seed)
    nodes = [Broker(i, f"r{i % racks}" if racks else None) for i in range(brokers)]
    pool = list(range(occupied if occupied is not None else brokers))
    weights = [1.0 / (1 + skew * i) for i in range(len(pool))]
    states = []
    for t in range(topics):
        for p in range(partitions):
            states.append(_in_sync(rnd, t, p, _weighted_sample(rnd, pool, weights, rf)))
    return ClusterSnapshot.of(nodes, states)


def _in_sync(rnd: random.Random, t: int, p: int, replicas: list[int]) -> PartitionState:
    """Partition ``p`` of topic ``t`` on ``replicas``, led by the first, all in sync, of a random size."""
    tp = TopicPartition(f"topic-{t:03d}", p)
    return PartitionState(tp, tuple(replicas), replicas[0], tuple(replicas), rnd.randint(1, 10**9))


def _weighted_sample(rnd: random.Random, pool: list[int], weights: list[float], k: int) -> list[int]:
    chosen: list[int] = []
    options = list(zip(pool, weights, strict=True))
    for _ in range(k):
        pick = rnd.choices(range(len(options)), weights=[w for _, w in options])[0]
        chosen.append(options.pop(pick)[0])
    return chosen


def balanced(brokers: int, racks: int, topics: int, partitions: int, rf: int) -> ClusterSnapshot:
    """A perfectly balanced, rack-clean cluster: partition ``p`` starts at broker ``p`` round robin."""
    nodes = [Broker(i, f"r{i % racks}" if racks else None) for i in range(brokers)]
    states = []
    for t in range(topics):
        for p in range(partitions):
            start = (p + t) % brokers
            replicas = tuple((start + i) % brokers for i in range(rf))
            tp = TopicPartition(f"topic-{t:03d}", p)
            states.append(PartitionState(tp, replicas, replicas[0], replicas, 1000 * (p + 1)))
    return ClusterSnapshot.of(nodes, states)


def with_new_brokers(snapshot: ClusterSnapshot, count: int, racks: int) -> ClusterSnapshot:
    """The same cluster plus ``count`` empty brokers, racks continuing round robin."""
    first = max(snapshot.broker_ids) + 1
    extra = [Broker(i, f"r{i % racks}" if racks else None) for i in range(first, first + count)]
    return ClusterSnapshot.of((*snapshot.brokers, *extra), snapshot.partitions)


def unequal_racks(rack_sizes: tuple[int, ...], shapes: list[tuple[int, int]], seed: int) -> ClusterSnapshot:
    """Racks of the given sizes (``r0``, ``r1``, ...) and one topic per (partitions, rf) in ``shapes``,
    replicas placed at random (rack rule ignored, as on a cluster that grew by hand)."""
    rnd = random.Random(seed)
    racks = [f"r{k}" for k, n in enumerate(rack_sizes) for _ in range(n)]
    nodes = [Broker(i, rack) for i, rack in enumerate(racks)]
    states = []
    for t, (partitions, rf) in enumerate(shapes):
        for p in range(partitions):
            states.append(_in_sync(rnd, t, p, rnd.sample(range(len(nodes)), rf)))
    return ClusterSnapshot.of(nodes, states)
