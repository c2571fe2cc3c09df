"""What the byte balance (:mod:`ferry.plan.disk.byte_balance`) works on: each target broker's target bytes
and band (:class:`DiskTargets`, water-filled over racks under the rack rule), and the replicas and
bytes as the plan changes them (:class:`Disk`)."""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ferry.model.cluster import ClusterSnapshot, PartitionState
from ferry.model.goal import Goal
from ferry.plan.racks import RackLayout, may_take

TOLERANCE = 0.0225
"""How far a broker's bytes may end from its target, as a fraction of the target: at most 5 % of
the mean between the fullest and the emptiest broker (the band's width, 4.5 %, leaves room for
rounding)."""


@dataclass(frozen=True, slots=True)
class DiskTargets:
    """Per target broker (layout order): the bytes it should hold and its weight."""

    target: tuple[float, ...]
    weight: tuple[float, ...]

    def band(self, i: int) -> tuple[float, float]:
        return self.target[i] * (1 - TOLERANCE), self.target[i] * (1 + TOLERANCE)


def disk_targets(
    layout: RackLayout,
    parts: Sequence[PartitionState],
    factors: Sequence[int],
    fixed: Sequence[int],
    goal: Goal,
) -> DiskTargets:
    """Water-fill the bytes over racks by weight; see the module docstring.

    Args:
        fixed: per broker (layout order), bytes of partitions out of scope, which stay.
    """
    weight = tuple(float(goal.capacity.get(b, 0)) if goal.capacity else 1.0 for b in layout.brokers)
    racks = len(layout.members)
    lows, highs = [0.0] * racks, [0.0] * racks
    for p, rf in zip(parts, factors, strict=True):
        for k, (lo, hi) in enumerate(layout.bounds_under(rf, goal.rack_mode)):
            lows[k] += lo * p.size
            highs[k] += hi * p.size
    at = [[layout.position[b] for b in m] for m in layout.members]
    rack_fixed = [sum(fixed[i] for i in members) for members in at]
    rack_weight = [sum(weight[i] for i in members) for members in at]
    total = sum(p.size * rf for p, rf in zip(parts, factors, strict=True)) + sum(fixed)
    floors = [f + lo for f, lo in zip(rack_fixed, lows, strict=True)]
    ceilings = [f + hi for f, hi in zip(rack_fixed, highs, strict=True)]
    level = _level(rack_weight, floors, ceilings, total)
    shares = [min(hi, max(lo, level * w)) for w, lo, hi in zip(rack_weight, floors, ceilings, strict=True)]
    target = [0.0] * len(layout.brokers)
    for k, members in enumerate(at):
        for i in members:
            target[i] = shares[k] * weight[i] / rack_weight[k] if rack_weight[k] else 0.0
    return DiskTargets(tuple(target), weight)


def _level(weights: Sequence[float], lows: Sequence[float], highs: Sequence[float], total: float) -> float:
    """Bytes per unit of weight at which the racks, each held within its (low, high), add up to
    ``total`` (bisection: the fill is monotone in the level)."""
    top = max((hi / w for w, hi in zip(weights, highs, strict=True) if w > 0), default=0.0)
    lo, hi = 0.0, max(top, 1.0)
    for _ in range(100):
        mid = (lo + hi) / 2
        fill = sum(min(h, max(low, mid * w)) for w, low, h in zip(weights, lows, highs, strict=True))
        lo, hi = (mid, hi) if fill < total else (lo, mid)
    return hi


class Disk:
    """Scratch state of one plan: the planned replicas and every target broker's bytes."""

    def __init__(self, layout: RackLayout, parts: Sequence[PartitionState], fixed: Sequence[int], goal: Goal):
        self.layout = layout
        self.parts = parts
        self.mode = goal.rack_mode
        self.bytes = [float(n) for n in fixed]
        self.replicas: list[list[int]] = []
        self.held: list[list[tuple[int, int]]] = [[] for _ in layout.brokers]
        """Per broker position, sorted (bytes, partition) of the replicas it holds in scope."""
        for p, state in enumerate(parts):
            self.replicas.append([])
            for b in state.replicas:
                if b in layout.position:
                    self.add(p, b)

    def size(self, p: int, broker: int) -> int:
        """Bytes of partition ``p``'s replica on ``broker``: measured where it is, else its size."""
        return self.parts[p].bytes_on(broker)

    def add(self, p: int, broker: int) -> None:
        i = self.layout.position[broker]
        n = self.size(p, broker)
        self.replicas[p].append(broker)
        self.bytes[i] += n
        insort(self.held[i], (n, p))

    def drop(self, p: int, broker: int) -> None:
        i = self.layout.position[broker]
        n = self.size(p, broker)
        self.replicas[p].remove(broker)
        self.bytes[i] -= n
        held = self.held[i]
        del held[bisect_right(held, (n, p)) - 1]

    def counts(self, p: int) -> list[int]:
        return self.layout.counts(self.replicas[p])

    def bounds(self, rf: int) -> tuple[tuple[int, int], ...]:
        return self.layout.bounds_under(rf, self.mode)

    def may_move(self, p: int, rf: int, source: int, dest: int) -> bool:
        """Whether ``p``'s replica may go from ``source`` to ``dest`` under the rack rule."""
        return may_take(self.layout, self.mode, self.replicas[p], rf, dest, without=source)

    def may_add(self, p: int, rf: int, dest: int) -> bool:
        """Whether an open slot of ``p`` may go to ``dest`` under the rack rule."""
        return may_take(self.layout, self.mode, self.replicas[p], rf, dest)


def fixed_bytes(snapshot: ClusterSnapshot, goal: Goal, layout: RackLayout) -> list[int]:
    """Per target broker, bytes of partitions the plan does not touch."""
    fixed = [0] * len(layout.brokers)
    for p in snapshot.partitions:
        if not goal.in_scope(p.tp.topic):
            for b in p.replicas:
                if b in layout.position:
                    fixed[layout.position[b]] += p.bytes_on(b)
    return fixed


def byte_changes(planned: Iterable[tuple[PartitionState, Sequence[int]]]) -> dict[int, int]:
    """Per broker, the bytes a placement adds to it (negative: takes off it) against the
    partitions' current replicas: a leaving replica what it measured there, a new one its size."""
    changes: dict[int, int] = {}
    for state, replicas in planned:
        for sign, brokers in (
            (-1, set(state.replicas) - set(replicas)),
            (1, set(replicas) - set(state.replicas)),
        ):
            for b in brokers:
                changes[b] = changes.get(b, 0) + sign * state.bytes_on(b)
    return changes
