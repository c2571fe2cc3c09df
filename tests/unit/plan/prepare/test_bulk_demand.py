"""Many topics' demands at once (bulk_demand.topic_demands) equal each topic's own
(topic_demand.topic_demand), field by field, whatever the clusters, factors, modes and runs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from support.builders import broker, partition, snapshot

from ferry.model import ClusterSnapshot, Goal, PartitionState
from ferry.model.goal import RackMode
from ferry.plan.prepare.bulk_demand import distinct_rows, topic_demands
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.prepare.quotas import TopicQuota, topic_quota
from ferry.plan.prepare.scope import in_scope, target_brokers
from ferry.plan.prepare.topic_demand import topic_demand
from ferry.plan.racks import RackLayout
from ferry.plan.topic_work import TopicWork

SETTINGS = settings(max_examples=120, deadline=None, derandomize=True)


@dataclass
class Started:
    layout: RackLayout
    topics: list[list[PartitionState]]
    factors: list[list[int]]
    quotas: list[TopicQuota]

    def one_by_one(self, mode: RackMode) -> list[TopicDemand]:
        """Each topic's demand on its own scratch state."""
        return [
            topic_demand(
                TopicWork.start(parts[0].tp.topic, parts, rfs, self.layout.position), self.layout, q, mode
            )
            for parts, rfs, q in zip(self.topics, self.factors, self.quotas, strict=True)
        ]


def started(snap: ClusterSnapshot, goal: Goal) -> Started:
    layout = RackLayout.of(snap.racks, target_brokers(snap, goal))
    topics = [list(parts) for parts in in_scope(snap, goal)]
    factors = [
        [goal.replication_factors.get(p.tp.topic, p.replication_factor) for p in parts] for parts in topics
    ]
    return Started(layout, topics, factors, [topic_quota(layout, rfs, goal.rack_mode) for rfs in factors])


@st.composite
def clusters(draw: st.DrawFn) -> tuple[ClusterSnapshot, Goal]:
    """Topics over racks of 1-4 brokers (or none), some brokers removed, factors changed for some
    topics, replicas at random (rack rule ignored, factors mixed within a topic), sizes unknown or
    tied."""
    sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=5))
    racked = draw(st.booleans())
    brokers = [
        broker(b, f"r{k}" if racked else None)
        for b, k in enumerate(k for k, n in enumerate(sizes) for _ in range(n))
    ]
    everyone = [b.id for b in brokers]
    removed = draw(st.sets(st.sampled_from(everyone), max_size=min(2, len(everyone) - 1)))
    targets = len(everyone) - len(removed)
    parts, factors = [], {}
    for t in range(draw(st.integers(1, 7))):
        for p in range(draw(st.integers(1, 8))):
            replicas = draw(
                st.lists(st.sampled_from(everyone), min_size=1, max_size=min(4, targets), unique=True)
            )
            isr = draw(st.none() | st.lists(st.sampled_from(replicas), unique=True))
            size = draw(st.none() | st.integers(0, 5))
            parts.append(partition(f"t{t}", p, replicas, size=size, isr=isr))
        if draw(st.booleans()):
            factors[f"t{t}"] = draw(st.integers(1, max(1, min(3, targets))))
    goal = Goal(
        brokers=frozenset(everyone) - removed,
        replication_factors=factors,
        rack_mode=draw(st.sampled_from(RackMode)),
    )
    return snapshot(brokers, parts), goal


@SETTINGS
@given(clusters(), st.integers(1, 20))
def test_demands_in_bulk_equal_each_topics_own(cluster: tuple[ClusterSnapshot, Goal], chunk: int) -> None:
    snap, goal = cluster
    s = started(snap, goal)
    bulk = topic_demands(s.topics, s.factors, s.layout, s.quotas, goal.rack_mode, chunk=chunk)
    assert bulk == s.one_by_one(goal.rack_mode)
    # Plain ints, as pickled for the Spark workers and read back.
    assert all(type(d.partitions) is int and type(d.single_replica) is bool for d in bulk)


def test_a_layout_of_many_racks_is_prepared_topic_by_topic_alike() -> None:
    # 70 brokers without racks: 70 racks of one.
    snap = snapshot(range(70), [partition("t", p, [p % 70, (p + 1) % 70, (p + 7) % 70]) for p in range(40)])
    goal = Goal(brokers=frozenset(range(70)))
    s = started(snap, goal)
    assert topic_demands(s.topics, s.factors, s.layout, s.quotas, goal.rack_mode) == s.one_by_one(
        goal.rack_mode
    )


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.lists(st.integers(-3, 3), min_size=3, max_size=3), min_size=1, max_size=40))
def test_distinct_rows_number_each_row_by_its_own(rows: list[list[int]]) -> None:
    a = np.array(rows, dtype=np.int64)
    distinct, number = distinct_rows(a)
    assert np.array_equal(distinct[number], a)
    assert len({tuple(r) for r in distinct.tolist()}) == len(distinct) == len({tuple(r) for r in rows})
