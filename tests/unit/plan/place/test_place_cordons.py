"""A cordoned broker keeps what it holds and takes nothing new: the replicas a plan would add on it
go to the emptiest broker the rack rule allows, with no more moves than before."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.clusters import generated, with_new_brokers

from ferry.model import ClusterSnapshot, Goal
from ferry.plan.planner import plan


def cordon(cluster: ClusterSnapshot, brokers: set[int]) -> ClusterSnapshot:
    return ClusterSnapshot.of(
        [replace(b, cordoned=b.id in brokers) for b in cluster.brokers], cluster.partitions
    )


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 1000), st.integers(0, 3), st.sampled_from([0, 2, 3]))
def test_no_replica_lands_on_a_cordoned_broker_and_the_moves_stay_as_many(
    seed: int, which: int, racks: int
) -> None:
    base = with_new_brokers(
        generated(brokers=9, racks=racks, topics=4, partitions=10, rf=2, seed=seed), 3, racks
    )
    closed = {sorted(base.broker_ids)[-1 - which]}
    free = plan(base, Goal())
    fenced = plan(cordon(base, closed), Goal())
    assert free.report is not None and fenced.report is not None
    assert all(not set(m.adding) & closed for m in fenced.moves)
    # A replica bound for the cordoned broker goes elsewhere (a move still), or to one the plan
    # was taking off that partition (then it stays: one move less).
    assert fenced.report.replica_moves <= free.report.replica_moves
    assert fenced.report.after["rack_violations"] <= free.report.after["rack_violations"]
    held = {b: sum(b in p.replicas for p in base.partitions) for b in closed}
    after = {m.tp: m.target for m in fenced.moves}
    for b in closed:  # it keeps no more than it had
        assert sum(b in after.get(p.tp, p.replicas) for p in base.partitions) <= held[b]


def test_a_cordoned_broker_keeps_its_replicas_where_balance_allows() -> None:
    base = generated(brokers=9, racks=3, topics=4, partitions=12, rf=3, seed=2)
    fenced = plan(cordon(base, {4}), Goal())
    kept = [p for p in base.partitions if 4 in p.replicas]
    after = {m.tp: m.target for m in fenced.moves}
    assert kept and any(4 in after.get(p.tp, p.replicas) for p in kept)
