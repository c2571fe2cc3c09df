"""What a plan does to the cluster, counted for the HTML report: per broker before and after,
per topic, and which broker's data goes where. Pure: a snapshot and the plan's targets in, numbers
out."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ferry.model import ClusterSnapshot, TopicPartition

Targets = Mapping[TopicPartition, tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class BrokerLoad:
    """One broker's replicas, preferred leaderships and bytes."""

    replicas: int = 0
    leaders: int = 0
    bytes: int = 0


@dataclass(frozen=True, slots=True)
class PlanView:
    """Brokers in rack order (``racks`` aligned), their loads before and after, per-topic spreads
    over the target brokers before and after, and bytes moved from each source to each destination."""

    brokers: tuple[int, ...]
    racks: tuple[str, ...]
    before: tuple[BrokerLoad, ...]
    after: tuple[BrokerLoad, ...]
    topic_spread: Mapping[str, tuple[int, int]]
    moved: Mapping[tuple[int, int], int]

    def worst_topics(self, count: int = 20) -> list[tuple[str, int, int]]:
        """The ``count`` topics with the largest spread before or after: (topic, before, after)."""
        ranked = sorted(self.topic_spread.items(), key=lambda item: (-max(item[1]), -item[1][0], item[0]))
        return [(topic, before, after) for topic, (before, after) in ranked[:count]]


def plan_view(snapshot: ClusterSnapshot, targets: Targets, target_brokers: Sequence[int]) -> PlanView:
    """The view of a plan that moves ``snapshot``'s partitions to ``targets`` over ``target_brokers``."""
    racks = snapshot.racks
    brokers = tuple(sorted({*snapshot.broker_ids, *target_brokers}, key=lambda b: (racks.get(b) or "", b)))
    after_replicas = {p.tp: targets.get(p.tp, p.replicas) for p in snapshot.partitions}
    before = _loads(snapshot, brokers, {p.tp: p.replicas for p in snapshot.partitions})
    after = _loads(snapshot, brokers, after_replicas)
    return PlanView(
        brokers=brokers,
        racks=tuple(racks.get(b) or "-" for b in brokers),
        before=before,
        after=after,
        topic_spread=_topic_spreads(snapshot, after_replicas, target_brokers),
        moved=_moved(snapshot, targets),
    )


def _loads(
    snapshot: ClusterSnapshot, brokers: Sequence[int], replicas: Mapping[TopicPartition, tuple[int, ...]]
) -> tuple[BrokerLoad, ...]:
    count: Counter[int] = Counter()
    lead: Counter[int] = Counter()
    size: Counter[int] = Counter()
    for p in snapshot.partitions:
        reps = replicas[p.tp]
        count.update(reps)
        lead[reps[0]] += 1
        for b in reps:
            size[b] += p.bytes_on(b)  # a new replica counts the partition's size
    return tuple(BrokerLoad(count[b], lead[b], size[b]) for b in brokers)


def _topic_spreads(
    snapshot: ClusterSnapshot, after: Mapping[TopicPartition, tuple[int, ...]], targets: Sequence[int]
) -> dict[str, tuple[int, int]]:
    before_counts: dict[str, Counter[int]] = {}
    after_counts: dict[str, Counter[int]] = {}
    for p in snapshot.partitions:
        before_counts.setdefault(p.tp.topic, Counter()).update(p.replicas)
        after_counts.setdefault(p.tp.topic, Counter()).update(after[p.tp])

    def spread(counts: Counter[int]) -> int:
        values = [counts[b] for b in targets]
        return max(values, default=0) - min(values, default=0)

    return {t: (spread(before_counts[t]), spread(after_counts[t])) for t in sorted(before_counts)}


def _moved(snapshot: ClusterSnapshot, targets: Targets) -> dict[tuple[int, int], int]:
    """Bytes per (source, destination): each replica a partition gives up paired with one it gains,
    in replica order; a gained replica with none given up (a higher replication factor) comes from
    the partition's first replica, which holds a copy to send."""
    out: Counter[tuple[int, int]] = Counter()
    for tp, target in targets.items():
        state = snapshot.partition(tp)
        gained = [b for b in target if b not in state.replicas]
        lost = [b for b in state.replicas if b not in target]
        for i, dest in enumerate(gained):
            source = lost[i] if i < len(lost) else state.replicas[0]
            out[source, dest] += state.bytes_on(source)
    return dict(out)
