"""A topic's open slots filled by a flow, where its kept replicas stay put and the filling must keep
the strict rack rule and the quotas.

Once the replicas an exact flow keeps are fixed (:mod:`ferry.plan.place.exact_keeps`), the
placement's greedy step and its augmenting paths fill the open slots one at a time, and a path that
finds no broker a partition's racks allow pushes out a kept replica: on the 100k skewed start over
six racks of 22 brokers (`benchmarks/plan_quality.py --shapes --seed 1`) one topic kept a replica
fewer than its flow and plan one move above the bound. The filling is a flow of its own:

    slot --[the rack's bounds, less what the partition holds there]--> (slot, rack)
         --[1, a broker not holding the partition]--> broker --[room under its quota]--> sink

with each slot supplying its open replicas; a broker the partition was dropped from costs -1, a
replica that returns (kept after all). Where the flow fills every slot, no kept replica moves and as
many dropped ones return as can.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ferry.plan.balance.solvers.flow_parts import OPTIMAL, min_cost_flow, with_lows
from ferry.plan.racks import RackLayout
from ferry.plan.topic_work import Slot, TopicWork


def fill_exactly(work: TopicWork, layout: RackLayout, quota: Mapping[int, int]) -> bool:
    """Fill every open slot of ``work`` (strict racks) under ``quota`` (per target broker) by the
    flow of the module docstring; ``False``, and ``work`` unchanged, where none fills them all."""
    slots = [s for s in work.slots if s.open > 0]
    if not slots:
        return True
    arcs = _Arcs()
    sink = _network(arcs, work, slots, layout, quota)
    tail, head, low, cap, cost = (np.array(v, dtype=np.int64) for v in arcs.columns())
    supply = np.zeros(sink + 1, dtype=np.int64)
    supply[: len(slots)] = [s.open for s in slots]
    status, flows = min_cost_flow(with_lows((tail, head, low, cap, cost), supply))
    if status != OPTIMAL or flows is None:
        return False
    taken = flows[np.array([arc for arc, _, _ in arcs.choices], dtype=np.int64)]
    for (_, j, b), used in zip(arcs.choices, taken.tolist(), strict=True):
        if used:
            work.add(slots[j], b)
    return True


@dataclass
class _Arcs:
    """The flow's arcs (tail, head, lower bound, capacity, cost), and per arc into a broker its
    index, slot and broker."""

    tails: list[int] = field(default_factory=list)
    heads: list[int] = field(default_factory=list)
    lows: list[int] = field(default_factory=list)
    caps: list[int] = field(default_factory=list)
    costs: list[int] = field(default_factory=list)
    choices: list[tuple[int, int, int]] = field(default_factory=list)

    def add(self, tail: int, head: int, low: int, cap: int, cost: int = 0) -> None:
        self.tails.append(tail)
        self.heads.append(head)
        self.lows.append(low)
        self.caps.append(cap)
        self.costs.append(cost)

    def columns(self) -> tuple[list[int], ...]:
        return self.tails, self.heads, self.lows, self.caps, self.costs


def _network(
    arcs: _Arcs, work: TopicWork, slots: list[Slot], layout: RackLayout, quota: Mapping[int, int]
) -> int:
    """The arcs of the module docstring's flow over ``slots`` (nodes: the slots, a (slot, rack) per
    slot and rack, the target brokers in layout order, the sink); returns the sink."""
    racks = len(layout.members)
    pair_at = len(slots)
    broker_at = pair_at + len(slots) * racks
    for j, slot in enumerate(slots):
        held = [0] * racks
        for b in slot.replicas:
            held[layout.rack_of[b]] += 1
        for k, (lo, hi) in enumerate(layout.bounds(slot.rf)):
            if hi <= held[k]:
                continue
            pair = pair_at + j * racks + k
            arcs.add(j, pair, max(0, lo - held[k]), hi - held[k])
            for b in layout.members[k]:
                if b not in slot.replicas:
                    arcs.choices.append((len(arcs.tails), j, b))
                    arcs.add(
                        pair, broker_at + layout.position[b], 0, 1, -1 if b in slot.state.replicas else 0
                    )
    sink = broker_at + len(layout.brokers)
    for i, b in enumerate(layout.brokers):
        arcs.add(broker_at + i, sink, 0, max(0, quota.get(b, 0) - work.load[b]))
    return sink
