"""A topic whose greedy placement loses a kept replica is placed again from an exact flow's kept
replicas, and keeps as many as its quotas allow."""

from __future__ import annotations

from ferry.model import PartitionState, RackMode, TopicPartition
from ferry.plan.planner import place_topic
from ferry.plan.racks import RackLayout
from ferry.plan.topic_work import TopicWork

# One topic of "large: 10,000 topics, add 6 to 54" (benchmarks/plan_quality.py): 60 brokers in 6
# racks (rack = id % 6), its partitions (replicas, bytes) and the quotas the balance pass gave it.
PARTITIONS = [
    ((0, 1, 2), 5738577236),
    ((43, 44, 45), 5501926955),
    ((42, 43, 44), 5098398676),
    ((48, 49, 50), 7908451843),
    ((51, 52, 53), 3358253914),
    ((23, 24, 25), 8294686285),
    ((51, 52, 53), 9587412221),
    ((52, 53, 0), 2762021378),
    ((49, 50, 51), 2695694049),
    ((47, 48, 49), 8046843767),
]
QUOTA_ONE = {0, 1, 2, 4, 10, 16, 22, 23, 24, 25, 28, 30, 34, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53}
QUOTA_ONE |= {55, 56, 57, 58, 59}
KEPT = 17
"""What the quotas allow (the balance program's count): 30 replicas, 13 of them over quota."""


def test_the_placement_keeps_what_the_quotas_allow_where_greedy_drops_lose_one() -> None:
    layout = RackLayout.of({b: f"r{b % 6}" for b in range(60)}, range(60))
    states = [
        PartitionState(TopicPartition("t", p), replicas, replicas[0], replicas, size)
        for p, (replicas, size) in enumerate(PARTITIONS)
    ]
    work = TopicWork.start("t", states, [3] * len(states), set(range(60)))
    quota = [1 if b in QUOTA_ONE else 0 for b in layout.brokers]
    assert place_topic(work, layout, quota, {}, RackMode.STRICT) == 0
    kept = sum(len(set(s.replicas) & set(s.state.replicas)) for s in work.slots)
    assert kept == work.kept == KEPT
    assert all(len(s.replicas) == 3 and len({b % 6 for b in s.replicas}) == 3 for s in work.slots)
    assert sorted(b for s in work.slots for b in s.replicas) == sorted(QUOTA_ONE)
