"""The step of a full plan that a budget allows, and how far from the full plan it leaves the cluster.

Imbalance is measured against the full plan: with ``--balance replicas`` the replicas each broker
holds of each topic beyond what the full plan leaves it, summed over topics and brokers (the
replicas still out of place; where the replication factor goes up, the replicas still missing if
they are more), with ``--balance bytes`` or a drain the same in bytes per broker. The full plan has none, and
one replica move removes at most one replica of it (or its own bytes): no plan of ``N`` moves
leaves less than the imbalance before minus ``N``.

The step is chosen greedily: the unit (:mod:`ferry.plan.budget.units`) that removes the most
imbalance per move (``--max-moves``) or per byte (``--max-bytes``) first, its gain worked out
again when it comes up (a gain only shrinks as others are taken), each partition's units in
their order. A move the full plan makes for the rack rule or a topic's own spread may remove no
imbalance by itself; it comes after those that do. Every replica a step moves goes where the
full plan puts it, so the next plan, made from the cluster the step leaves, needs no more moves
than the full plan had left.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ferry.errors import PreconditionError
from ferry.model.cluster import Broker, PartitionState
from ferry.model.goal import BalanceMode, Goal
from ferry.plan.budget.units import Unit, step_replicas, units_of
from ferry.plan.racks import RackLayout

Planned = tuple[PartitionState, tuple[int, ...]]
Weigh = Callable[[PartitionState, int], tuple[Hashable, int]]
"""A replica's imbalance key (what it counts toward) and weight."""


@dataclass(frozen=True, slots=True)
class Step:
    """The step's replicas per partition (every partition of the full plan, in its order) and the
    budget's figures for the report."""

    planned: list[Planned]
    figures: dict[str, object]


def take_step(layout: RackLayout, goal: Goal, full: Sequence[Planned], brokers: Mapping[int, Broker]) -> Step:
    """The step of ``full`` (every in-scope partition with its full plan's replicas, preferred
    leader first) that ``goal``'s budget allows; ``brokers``: the snapshot's, by id (bytes count
    what new replicas copy)."""
    by_topic = goal.balance is BalanceMode.REPLICAS and goal.drain_above is None
    weigh = _by_topic if by_topic else _by_broker
    # A partition whose replicas stay (its leader may change) copies nothing, and weighs the same now
    # and after the full plan: it adds nothing to either side of the imbalance.
    moving = [i for i, (state, target) in enumerate(full) if set(target) != set(state.replicas)]
    units = [u for i in moving for u in units_of(i, full[i], layout, goal.rack_mode, brokers)]
    tally = _Tally([(full[i][0], full[i][0].replicas) for i in moving], [full[i] for i in moving], weigh)
    before = tally.imbalance
    taken = _choose(units, full, tally, _Budget(goal.max_moves, goal.max_bytes))
    if units and not taken:
        raise _too_small(units, full)
    every = len(taken) == len(units)
    by_partition: dict[int, list[Unit]] = {}
    for unit in sorted(taken, key=lambda u: (u.partition, u.order)):
        by_partition.setdefault(unit.partition, []).append(unit)
    if every:
        planned = [(state, tuple(target)) for state, target in full]
    else:
        planned = [(state, state.replicas) for state, _ in full]
        for i, taken_here in by_partition.items():
            state, target = full[i]
            planned[i] = (state, step_replicas(state, target, taken_here))
    figures = _figures(goal, units, taken, before, tally.imbalance, weigh)
    return Step(planned, figures)


def _by_topic(state: PartitionState, broker: int) -> tuple[Hashable, int]:
    return (state.tp.topic, broker), 1


def _by_broker(state: PartitionState, broker: int) -> tuple[Hashable, int]:
    return broker, state.bytes_on(broker)


class _Tally:
    """Per key, what the cluster holds beyond the full plan (negative: short of it), and the sums
    of both sides: a replica moved from a broker over its share to one under it takes one off each."""

    def __init__(self, now: Iterable[Planned], full: Iterable[Planned], weigh: Weigh) -> None:
        self.weigh = weigh
        if weigh is _by_topic:
            # One replica weighs one: counted in C, about a third of the time of the loop below.
            excess: Counter[Hashable] = Counter((s.tp.topic, b) for s, replicas in now for b in replicas)
            excess.subtract(Counter((s.tp.topic, b) for s, replicas in full for b in replicas))
        else:
            excess = Counter()
            for sign, placement in ((1, now), (-1, full)):
                for state, replicas in placement:
                    for b in replicas:
                        key, n = weigh(state, b)
                        excess[key] += sign * n
        self.excess: Counter[Hashable] = excess
        self.over = sum(n for n in excess.values() if n > 0)
        self.short = -sum(n for n in excess.values() if n < 0)

    @property
    def imbalance(self) -> int:
        """The larger side: with the replication factor unchanged both are the same, and with it
        raised (lowered) the replicas still to add (to drop) count too."""
        return max(self.over, self.short)

    def _change(self, unit: Unit, state: PartitionState) -> tuple[dict[Hashable, int], int, int]:
        change: dict[Hashable, int] = {}
        weigh = self.weigh
        for b in unit.leaves:
            key, n = weigh(state, b)
            change[key] = change.get(key, 0) - n
        for b in unit.joins:
            key, n = weigh(state, b)
            change[key] = change.get(key, 0) + n
        over, short = self.over, self.short
        excess = self.excess
        for key, d in change.items():
            was = excess.get(key, 0)
            now = was + d
            # The positive part of the excess counts over, the negative part short.
            over += (now if now > 0 else 0) - (was if was > 0 else 0)
            short += (-now if now < 0 else 0) - (-was if was < 0 else 0)
        return change, over, short

    def gain(self, unit: Unit, state: PartitionState) -> int:
        """How much imbalance ``unit`` removes as things stand."""
        _, over, short = self._change(unit, state)
        return self.imbalance - max(over, short)

    def take(self, unit: Unit, state: PartitionState) -> None:
        change, self.over, self.short = self._change(unit, state)
        for key, d in change.items():
            self.excess[key] = self.excess.get(key, 0) + d


@dataclass(slots=True)
class _Budget:
    moves: int | None
    bytes: int | None

    def fits(self, unit: Unit) -> bool:
        return (self.moves is None or unit.moves <= self.moves) and (
            self.bytes is None or unit.bytes <= self.bytes
        )

    def spend(self, unit: Unit) -> None:
        if self.moves is not None:
            self.moves -= unit.moves
        if self.bytes is not None:
            self.bytes -= unit.bytes

    def cost(self, unit: Unit) -> float:
        """The share of the budget ``unit`` takes (of the tighter limit when both are set)."""
        moves = -1.0 if self.moves is None else unit.moves / max(self.moves, 1)
        data = -1.0 if self.bytes is None else unit.bytes / max(self.bytes, 1)
        return moves if moves > data else data

    @property
    def spent(self) -> bool:
        return self.moves == 0 or self.bytes == 0


def _choose(
    units: Sequence[Unit],
    full: Sequence[Planned],
    tally: _Tally,
    budget: _Budget,
) -> list[Unit]:
    """Units within ``budget``, most imbalance removed per cost first (``tally`` follows them)."""
    # Costs are shares of the whole budget, fixed once, so every unit is weighed on one scale.
    scale = _Budget(budget.moves, budget.bytes)
    successor = {(u.partition, u.order): j for j, u in enumerate(units)}

    def entry(j: int) -> tuple[float, float, int, int, int]:
        unit = units[j]
        cost = scale.cost(unit)
        # A unit that costs nothing of the budget (a replica dropped) goes first whatever it gains.
        ratio = math.inf if cost == 0 else tally.gain(unit, full[unit.partition][0]) / cost
        return (-ratio, cost, unit.partition, unit.order, j)

    heap = [entry(j) for j, u in enumerate(units) if u.order == 0]
    heapq.heapify(heap)
    taken: list[Unit] = []
    while heap and not budget.spent:
        *_, j = heapq.heappop(heap)
        fresh = entry(j)
        if heap and fresh > heap[0]:
            heapq.heappush(heap, fresh)  # its gain shrank since it was queued: weigh it again later
            continue
        unit = units[j]
        if not budget.fits(unit):
            continue
        budget.spend(unit)
        taken.append(unit)
        tally.take(unit, full[unit.partition][0])
        following = successor.get((unit.partition, unit.order + 1))
        if following is not None:
            heapq.heappush(heap, entry(following))
    return taken


def _too_small(units: Sequence[Unit], full: Sequence[Planned]) -> PreconditionError:
    """No unit fits the budget: every change left is bigger than it and cannot be cut smaller
    without breaking the rack rule."""
    unit = min((u for u in units if u.order == 0), key=lambda u: (u.moves, u.bytes, u.partition))
    tp = full[unit.partition][0].tp
    return PreconditionError(
        f"the budget allows none of the moves left: the smallest, of {tp}, moves {unit.moves} "
        f"replica{'s' if unit.moves != 1 else ''} ({unit.bytes} bytes) at once to keep the rack rule",
        hint="raise --max-moves or --max-bytes to at least that",
    )


def _figures(
    goal: Goal, units: Sequence[Unit], taken: Sequence[Unit], before: int, after: int, weigh: Weigh
) -> dict[str, object]:
    moves, data = sum(u.moves for u in taken), sum(u.bytes for u in taken)
    left_moves = sum(u.moves for u in units) - moves
    left_bytes = sum(u.bytes for u in units) - data
    steps = [
        math.ceil(left / limit)
        for left, limit in ((left_moves, goal.max_moves), (left_bytes, goal.max_bytes))
        if limit is not None
    ]
    return {
        "max_moves": goal.max_moves,
        "max_bytes": goal.max_bytes,
        "moves": moves,
        "bytes": data,
        "imbalance_unit": "replicas" if weigh is _by_topic else "bytes",
        "imbalance_before": before,
        "imbalance_after": after,
        "imbalance_after_full_plan": 0,
        "full_plan_moves": moves + left_moves,
        "full_plan_bytes": data + left_bytes,
        "steps_left": max(steps, default=0) if left_moves or left_bytes else 0,
    }
