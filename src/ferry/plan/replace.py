"""Replace broker OLD with NEW: exactly OLD's replicas move, each to NEW where NEW can take it.

NEW cannot take a replica of a partition it already holds, nor (strict rack mode) one that would put
two replicas of the partition in NEW's rack; such a replica goes to the least-loaded broker that can
take it. The replica keeps its position in the list, so a preferred leader on OLD becomes one on NEW.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ferry.model.cluster import ClusterSnapshot, PartitionState
from ferry.model.goal import Goal, RackMode
from ferry.model.plan import Move, Plan
from ferry.plan.racks import RackLayout
from ferry.plan.report import build_report


def plan_replace(snapshot: ClusterSnapshot, goal: Goal) -> Plan:
    """Plan for a goal with ``replace`` pairs (and no other change)."""
    olds = {old for old, _ in goal.replace}
    targets = sorted((set(snapshot.broker_ids) - olds) | {new for _, new in goal.replace})
    layout = RackLayout.of(snapshot.racks, targets)
    mapping = dict(goal.replace)
    scope = [p for p in snapshot.partitions if goal.in_scope(p.tp.topic)]
    load: Counter[int] = Counter(b for p in scope for b in p.replicas)
    planned: list[tuple[PartitionState, tuple[int, ...]]] = []
    moves = []
    for state in scope:
        replicas = list(state.replicas)
        for i, b in enumerate(replicas):
            if b in mapping:
                pick = _destination(replicas, i, mapping[b], layout, load, goal.rack_mode)
                load[b] -= 1
                load[pick] += 1
                replicas[i] = pick
        planned.append((state, tuple(replicas)))
        if tuple(replicas) != state.replicas:
            moves.append(Move(state.tp, state.replicas, tuple(replicas), state.size))
    bound = sum(1 for p in scope for b in p.replicas if b in mapping)
    return Plan.of(moves, build_report(snapshot, goal, targets, planned, moves, bound))


def _destination(
    replicas: Sequence[int],
    index: int,
    new: int,
    layout: RackLayout,
    load: Counter[int],
    mode: RackMode,
) -> int:
    others = [b for j, b in enumerate(replicas) if j != index and b in layout.rack_of]

    def fits(broker: int) -> bool:
        if broker in replicas:
            return False
        if mode is RackMode.EVEN:
            return True
        return layout.violations([*others, broker], len(replicas)) <= layout.violations(others, len(replicas))

    if fits(new):
        return new
    candidates = [b for b in layout.brokers if fits(b)] or [b for b in layout.brokers if b not in replicas]
    return min(candidates, key=lambda b: (load[b], b))
