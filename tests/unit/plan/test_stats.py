"""The report's balance figures, counted in bulk, equal a partition-by-partition count."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from ferry.model import TopicPartition
from ferry.plan.measure.stats import Placement, balance
from ferry.plan.racks import RackLayout


def _spread(counts: Counter[int], brokers: list[int]) -> int:
    values = [counts.get(b, 0) for b in brokers]
    return max(values) - min(values) if values else 0


def reference(placement: Placement, targets: list[int], racks: RackLayout) -> dict[str, int]:
    """The figures counted one partition at a time, straight from their definitions."""
    replicas: Counter[int] = Counter(b for _, reps in placement for b in reps)
    leaders: Counter[int] = Counter(reps[0] for _, reps in placement if reps)
    per_topic: dict[str, Counter[int]] = {}
    for tp, reps in placement:
        per_topic.setdefault(tp.topic, Counter()).update(reps)
    on_target = [replicas.get(b, 0) for b in targets]
    in_rack: dict[int, list[int]] = {}
    for b in targets:
        in_rack.setdefault(racks.rack_of[b], []).append(b)
    return {
        "replica_spread": _spread(replicas, targets),
        "topic_replica_spread_max": max((_spread(c, targets) for c in per_topic.values()), default=0),
        "rack_replica_spread_max": max((_spread(replicas, m) for m in in_rack.values()), default=0),
        "topic_rack_spread_max": max(
            (_spread(c, m) for c in per_topic.values() for m in in_rack.values()), default=0
        ),
        "leader_spread": _spread(leaders, targets),
        "rack_violations": sum(1 for _, reps in placement if racks.violations(reps) > 0),
        "replicas_off_target": sum(n for b, n in replicas.items() if b not in targets),
        "max_replicas_per_broker": max(on_target, default=0),
        "min_replicas_per_broker": min(on_target, default=0),
    }


@st.composite
def placements(draw: st.DrawFn) -> tuple[Placement, list[int], RackLayout]:
    brokers = draw(st.lists(st.integers(0, 30), min_size=1, max_size=12, unique=True))
    rack = st.sampled_from(["a", "b", "c", None])
    names = draw(st.lists(rack, min_size=len(brokers), max_size=len(brokers)))
    racks = dict(zip(brokers, names, strict=True))
    targets = sorted(draw(st.lists(st.sampled_from(brokers), unique=True)))
    topics = draw(st.lists(st.sampled_from(["t0", "t1", "t2", "t3"]), max_size=30))
    placement = [
        (TopicPartition(topic, i), draw(st.lists(st.sampled_from(brokers), max_size=4, unique=True)))
        for i, topic in enumerate(topics)  # interleaved too: the counts must not assume topic order
    ]
    return placement, targets, RackLayout.of(racks, brokers)


@settings(max_examples=400, deadline=None)
@given(placements())
def test_bulk_figures_equal_the_partition_by_partition_count(
    case: tuple[Placement, list[int], RackLayout],
) -> None:
    placement, targets, racks = case
    assert balance(placement, targets, racks) == reference(placement, targets, racks)


def test_a_partition_with_two_replicas_in_one_of_three_racks_is_one_violation() -> None:
    racks = RackLayout.of({1: "a", 2: "a", 3: "b", 4: "c"}, [1, 2, 3, 4])
    placement = [(TopicPartition("t", 0), [1, 2, 3]), (TopicPartition("t", 1), [1, 3, 4])]
    figures = balance(placement, [1, 2, 3, 4], racks)
    assert figures["rack_violations"] == 1
    assert figures["replica_spread"] == 1 and figures["leader_spread"] == 2  # both led by 1
