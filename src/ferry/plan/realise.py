"""Make the balance program's choice hold partition by partition where its rack-room rows were loose.

The program's rack-room rows (:mod:`ferry.plan.room`) count the open slots each rack can fill,
summed over a topic's partitions; which partition takes which slot they leave open. On a wide
cluster of small topics (10 partitions, 30 replicas over 200 brokers in 10 racks) a topic's quotas
can then keep fewer replicas than the program counted, and its placement moves more than the bound.

For the topics :attr:`~ferry.plan.terms.TopicDemand.layouts` describes (strict racks, every
partition free) this pass

1. finds each topic's most kept replicas under its quotas, exactly, by min-cost flow
   (:func:`kept_exactly`);
2. solves the topics that fall short of the program's count again, a chunk at a time, with every
   partition's kept replicas and additions per rack as columns and each broker's total over the
   chunk held as solved, so no row of the program changes (:mod:`ferry.plan.rejoin`);
3. takes the new quotas, with every partition's kept replicas, where they keep more.

The program's optimum stays the lower bound on moves: this pass only finds plans that reach it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ferry.plan.racks import RackLayout
from ferry.plan.rejoin import CHUNK, rejoin
from ferry.plan.terms import Balance, TopicDemand


def realise(layout: RackLayout, demands: Sequence[TopicDemand], solved: Balance) -> Balance:
    """``solved`` with the quotas and keeps of its short topics solved again (module docstring)."""
    topics = [t for t, d in enumerate(demands) if exact_posed(d, solved.quotas[t])]
    if not topics:
        return solved
    exact = {t: _kept(layout, demands[t], solved.quotas[t], solved.kept[t]) for t in topics}
    short = [t for t in topics if exact[t] < solved.kept[t]]
    # Topics at their count that can give an extra away: a short topic alone, every broker's total
    # held, has nothing to trade with.
    partners = [t for t in topics if exact[t] >= solved.kept[t] and demands[t].quota.extras > 0]
    quotas, keeps = list(solved.quotas), [dict(k) for k in solved.keeps]
    for n, start in enumerate(range(0, len(short), CHUNK)):
        chunk = short[start : start + CHUNK] + _cycled(partners, n * CHUNK, CHUNK)
        found = rejoin(layout, [demands[t] for t in chunk], [quotas[t] for t in chunk])
        if found is None or sum(found.kept) <= sum(exact[t] for t in chunk):
            continue
        for j, t in enumerate(chunk):
            quotas[t], keeps[t], exact[t] = found.quotas[j], found.keeps[j], found.kept[j]
    return Balance(quotas, list(solved.kept), keeps)


def _kept(layout: RackLayout, d: TopicDemand, quota: Sequence[int], counted: int) -> int:
    """What the topic keeps at best: ``counted`` (the program's count) once a lower bound reaches it."""
    found = kept_exactly(layout, d, quota, fix_settled=True)
    return found if found >= counted else kept_exactly(layout, d, quota)


def _cycled(items: Sequence[int], start: int, count: int) -> list[int]:
    """``count`` of ``items`` from ``start`` on, wrapping around, each at most once."""
    if not items:
        return []
    return [items[(start + i) % len(items)] for i in range(min(count, len(items)))]


def exact_posed(d: TopicDemand, quota: Sequence[int]) -> bool:
    """Whether the topic is one this pass handles: all partitions described, more than one
    replica each (single-replica partitions also count in the leader rows), quotas adding up."""
    return len(d.layouts) == d.partitions > 0 and not d.single_replica and sum(quota) == sum(d.layouts.rf)


@dataclass
class _Network:
    """One topic's flow: arcs (tail, head, low, high), node supplies, which arcs keep a replica."""

    arcs: list[tuple[int, int, int, int]] = field(default_factory=list)
    supply: list[int] = field(default_factory=list)
    keep_arcs: list[int] = field(default_factory=list)

    def node(self, supply: int = 0) -> int:
        self.supply.append(supply)
        return len(self.supply) - 1


def kept_exactly(
    layout: RackLayout, d: TopicDemand, quota: Sequence[int], *, fix_settled: bool = False
) -> int:
    """The most replicas the topic's partitions can keep with every broker ending on its quota and
    every partition within its rack bounds; -1 where no placement meets them. One flow::

        partition --[rack bounds]--> (partition, rack) --[keep: 1]--> broker --[quota]--> rack
                  --[rack bounds: new replicas in a rack it has none in]----------------> rack
        (partition, rack) --[new replicas beside the ones it has there]-----------------> rack
        rack --[exactly the rack's quotas]--> sink

    Exact where a rack holds at most one replica of a partition (the usual strict layout): a
    rack's new replicas then go to any of its brokers with room.

    Args:
        fix_settled: keep the partitions that need nothing (complete, within their rack bounds,
            on no broker above its quota) where they are, outside the flow: a lower bound then,
            found in a fraction of the time.
    """
    held = [0] * len(quota)
    for i in d.layouts.replicas:
        held[i] += 1
    over = {i for i, (h, q) in enumerate(zip(held, quota, strict=True)) if h > q}
    rack_at = layout.rack_at
    settled = [fix_settled and _settled(layout, rack_at, d, j, over) for j in range(len(d.layouts))]
    left = list(quota)
    fixed = 0
    for j in (j for j, s in enumerate(settled) if s):
        for i in d.layouts.held(j):
            left[i] -= 1
            fixed += 1
    moving = [j for j, s in enumerate(settled) if not s]
    if not moving:
        return fixed
    network = _Network()
    _topic_flow(network, layout, d, left, moving)
    found = _solve(network)
    return -1 if found is None else fixed + found


def _settled(layout: RackLayout, rack_at: Sequence[int], d: TopicDemand, j: int, over: set[int]) -> bool:
    held, rf = d.layouts.held(j), d.layouts.rf[j]
    if len(held) != rf or any(i in over for i in held):
        return False
    counts = [0] * len(layout.members)
    for i in held:
        counts[rack_at[i]] += 1
    return all(lo <= c <= hi for c, (lo, hi) in zip(counts, layout.bounds(rf), strict=True))


def _topic_flow(
    network: _Network, layout: RackLayout, d: TopicDemand, quota: Sequence[int], partitions: Sequence[int]
) -> None:
    """Add one topic's flow (:func:`kept_exactly`) over ``partitions`` to ``network``."""
    arcs, node, rack_at = network.arcs, network.node, layout.rack_at
    racks = [node() for _ in layout.members]
    sink = node(-sum(d.layouts.rf[j] for j in partitions))
    for k, members in enumerate(layout.members):
        total = sum(quota[layout.position[b]] for b in members)
        arcs.append((racks[k], sink, total, total))
    brokers: dict[int, int] = {}
    for j in partitions:
        rf = d.layouts.rf[j]
        part = node(rf)
        by_rack: dict[int, list[int]] = {}
        for i in d.layouts.held(j):
            by_rack.setdefault(rack_at[i], []).append(i)
        for k, (lo, hi) in enumerate(layout.bounds(rf)):
            here = by_rack.get(k)
            if here is None:
                if hi > 0:
                    arcs.append((part, racks[k], lo, hi))
                continue
            inner = node()
            arcs.append((part, inner, lo, hi))
            arcs.append((inner, racks[k], 0, hi))
            for i in here:
                if i not in brokers:
                    brokers[i] = node()
                    arcs.append((brokers[i], racks[k], 0, quota[i]))
                network.keep_arcs.append(len(arcs))
                arcs.append((inner, brokers[i], 0, 1))


def _solve(network: _Network) -> int | None:
    """Kept replicas at a min-cost flow; ``None`` when no flow meets the bounds."""
    from ortools.graph.python import min_cost_flow

    tails, heads, lows, highs = np.array(network.arcs, dtype=np.int64).reshape(-1, 4).T
    supply = np.array(network.supply, dtype=np.int64)
    # A lower bound is flow that must pass: it leaves the tail's supply and joins the head's.
    np.subtract.at(supply, tails, lows)
    np.add.at(supply, heads, lows)
    costs = np.zeros(len(tails), dtype=np.int64)
    keep_arcs = np.array(network.keep_arcs, dtype=np.int64)
    costs[keep_arcs] = -1
    flow = min_cost_flow.SimpleMinCostFlow()
    flow.add_arcs_with_capacity_and_unit_cost(tails, heads, highs - lows, costs)
    flow.set_nodes_supplies(np.arange(len(supply)), supply)
    if flow.solve() != flow.OPTIMAL:
        return None
    return int(flow.flows(keep_arcs).sum()) if len(keep_arcs) else 0
