"""Replace broker OLD with NEW: exactly OLD's replicas move, each to NEW where NEW can take it.

NEW cannot take a replica of a partition it already holds, nor (strict rack mode) one that would put
two replicas of the partition in NEW's rack; such a replica goes to the least-loaded broker that can
take it. The replica keeps its position in the list, so a preferred leader on OLD becomes one on NEW.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ferry.model.cluster import ClusterSnapshot, PartitionState
from ferry.model.goal import Goal, RackMode
from ferry.model.plan import Move
from ferry.plan.place.takers import least_loaded
from ferry.plan.prepare.scope import target_brokers
from ferry.plan.racks import RackLayout, may_take


@dataclass(frozen=True, slots=True)
class Replaced:
    """The planned replicas of every partition in scope, the moves among them, and the moves any
    plan must make (every replica on a replaced broker)."""

    targets: list[int]
    planned: list[tuple[PartitionState, tuple[int, ...]]]
    moves: list[Move]
    bound: int


def plan_replace(snapshot: ClusterSnapshot, goal: Goal) -> Replaced:
    """The replicas for a goal with ``replace`` pairs (and no other change)."""
    targets = target_brokers(snapshot, goal)
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
    return Replaced(targets, planned, moves, bound)


def _destination(
    replicas: Sequence[int],
    index: int,
    new: int,
    layout: RackLayout,
    load: Counter[int],
    mode: RackMode,
) -> int:
    others = [b for j, b in enumerate(replicas) if j != index and b in layout.rack_of]

    rf = len(replicas)

    def fits(broker: int) -> bool:
        return broker not in replicas and may_take(layout, mode, others, rf, broker)

    def no_worse(broker: int) -> bool:
        # A partition already outside its rack bounds has no broker the rule allows: it may still
        # take one that leaves it no further outside them.
        if broker in replicas:
            return False
        return mode is RackMode.EVEN or layout.violations([*others, broker], rf) <= layout.violations(
            others, rf
        )

    for allowed in (fits, no_worse):
        if allowed(new):
            return new
        taker = least_loaded(layout, load, allowed)
        if taker is not None:
            return taker
    taker = least_loaded(layout, load, lambda b: b not in replicas)
    if taker is None:
        raise RuntimeError("replace: every target broker already holds a replica of the partition")
    return taker
