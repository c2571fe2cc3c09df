"""A topic placed again from the replicas an exact flow keeps, where the greedy placement kept fewer.

The placement (:mod:`ferry.plan.place.placement`) drops the smallest replicas of brokers above
their quota and then fills the open slots; where those drops leave a partition no broker its racks
allow, a path pushes out a kept replica (or one that came back, which a later path takes again),
one move more than the quotas imply. For the strict
layouts the exact pass describes (:mod:`ferry.plan.balance.repair.kept_flow`) a min-cost flow
finds which replicas stay in a placement that keeps the most under the same quotas; the topic is
then placed again from scratch with those kept, and that placement is taken where it keeps more.
Rare (on "large: 10,000 topics, add 6 to 54" of `benchmarks/plan_quality.py`, two topics of
10,000 kept one replica fewer than their quotas allow) and cheap: one flow of one topic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ferry.model.goal import RackMode
from ferry.plan.balance.repair.kept_flow import kept_replicas
from ferry.plan.place.drops import apply_keeps
from ferry.plan.place.exact_fill import fill_exactly
from ferry.plan.place.placement import place
from ferry.plan.prepare.topic_demand import free_layouts
from ferry.plan.racks import RackLayout
from ferry.plan.topic_work import TopicWork


def worth_placing_again(work: TopicWork, kept: int, mode: RackMode, fallbacks: int) -> bool:
    """Whether the placement of ``work`` lost replicas kept before it (``kept``), or fell back, on a
    topic the exact flow describes: strict racks, no partition lowering its replication factor.
    Partitions whose kept replicas the balance pass chose (two replicas in one rack, say) are in
    the flow too, free to keep others where that keeps more: on the skewed start of
    `benchmarks/plan_quality.py --shapes` their greedy placement lost one replica at 100k
    partitions."""
    return (
        (work.kept < kept or fallbacks > 0)
        and mode is RackMode.STRICT
        and all(s.rf >= len(s.state.replicas) for s in work.slots)
    )


def place_again(
    work: TopicWork, layout: RackLayout, quota: Sequence[int], by_broker: Mapping[int, int], fallbacks: int
) -> int:
    """``work`` (placed, having lost kept replicas or fallen back) placed again from an exact
    flow's kept replicas where that keeps more (module docstring); returns the fallbacks of the
    placement kept."""
    fresh = TopicWork.start(
        work.topic, [s.state for s in work.slots], [s.rf for s in work.slots], layout.position
    )
    keeps = kept_replicas(layout, free_layouts(fresh, layout), quota)
    if keeps is None:
        return fallbacks
    apply_keeps(fresh, dict(enumerate(keeps)))
    # The greedy filling and its paths may push out a kept replica where a flow fills every slot.
    again = 0 if fill_exactly(fresh, layout, by_broker) else place(fresh, layout, by_broker, RackMode.STRICT)
    if again > fallbacks or fresh.kept <= work.kept:
        return fallbacks
    work.slots, work.load, work.kept = fresh.slots, fresh.load, fresh.kept
    return again
