"""Balance statistics of a placement: spreads, rack violations, replicas off target brokers."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import chain, groupby

from ferry.model.cluster import TopicPartition
from ferry.plan.racks import RackLayout

Placement = Sequence[tuple[TopicPartition, Sequence[int]]]


def _spread(counts: Counter[int], brokers: Iterable[int]) -> int:
    values = [counts.get(b, 0) for b in brokers]
    return max(values) - min(values) if values else 0


def balance(placement: Placement, targets: Sequence[int], racks: RackLayout) -> dict[str, int]:
    """Balance figures of ``placement`` over the ``targets`` brokers.

    ``racks`` must cover every broker that appears in the placement (use a layout of all brokers),
    so violations are counted before a plan as well as after it.
    """
    replicas: Counter[int] = Counter()
    leaders: Counter[int] = Counter()
    per_topic: dict[str, Counter[int]] = {}
    violations = 0
    # Partitions share few distinct replica sets (racks follow brokers), so each is checked once.
    breaks: dict[tuple[int, ...], bool] = {}
    # Counted a topic at a time: Counter over a whole topic's replicas runs in C, per partition not.
    for topic, group in groupby(placement, key=lambda item: item[0].topic):
        sets = [tuple(reps) for _, reps in group]
        counts = Counter(chain.from_iterable(sets))
        per_topic.setdefault(topic, Counter()).update(counts)
        replicas.update(counts)
        leaders.update(reps[0] for reps in sets if reps)
        for key in sets:
            broken = breaks.get(key)
            if broken is None:
                broken = breaks[key] = racks.violations(key) > 0
            violations += broken
    target_set = set(targets)
    return {
        "replica_spread": _spread(replicas, targets),
        "topic_replica_spread_max": max((_spread(c, targets) for c in per_topic.values()), default=0),
        "leader_spread": _spread(leaders, targets),
        "rack_violations": violations,
        "replicas_off_target": sum(n for b, n in replicas.items() if b not in target_set),
        "max_replicas_per_broker": max((replicas.get(b, 0) for b in targets), default=0),
        "min_replicas_per_broker": min((replicas.get(b, 0) for b in targets), default=0),
    }
