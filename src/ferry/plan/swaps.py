"""Replica swaps that make an even preferred-leader spread reachable.

Placement fixes each topic's replica counts per broker but not which partitions share brokers. Two
placements with the same moves can differ in whether leaders can be spread evenly: with 4 brokers,
``t0 = [1], [0]`` and ``t1 = [2, 3], [0, 1]``, brokers 0 and 1 must lead three partitions between
them. Swapping replica ``b`` of partition ``p`` with replica ``c`` of ``q`` (same topic) keeps every
broker's per-topic count, so quotas and balance hold; it is taken only when it costs no extra move and
breaks no rack bound, and when it lets a broker short of leadership take over ``p``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ferry.model.cluster import PartitionState
from ferry.plan.leaders import choose_leaders
from ferry.plan.racks import RackLayout


@dataclass(slots=True)
class _Swap:
    p: int
    q: int
    b: int
    c: int


def leaders_with_swaps(
    states: Sequence[PartitionState], replicas: list[list[int]], layout: RackLayout
) -> list[int]:
    """Preferred leaders spread at most one apart, swapping replicas (in ``replicas``) where needed."""
    leaders = choose_leaders(replicas, [s.current_leader for s in states], layout.brokers)
    by_topic: dict[str, list[int]] = {}
    for p, state in enumerate(states):
        by_topic.setdefault(state.tp.topic, []).append(p)
    for _ in range(len(leaders)):
        led = dict.fromkeys(layout.brokers, 0)
        for b in leaders:
            led[b] += 1
        if not led or max(led.values()) - min(led.values()) <= 1:
            break
        low, extra = divmod(len(leaders), len(led))
        high = low + (extra > 0)
        floor = low if min(led.values()) < low else high
        takers = _reach([b for b in led if led[b] < floor], _passers(replicas, leaders))
        givers = set(_reach([b for b in led if led[b] > floor], _receivers(replicas, leaders)))
        swap = _find(states, replicas, leaders, layout, by_topic, takers, givers)
        if swap is None:
            break
        _apply(swap, replicas, leaders)
        # The swap hands one leadership to a broker that can pass it on; the leader pass walks the path.
        leaders = choose_leaders(replicas, leaders, layout.brokers)
    return leaders


Step = Callable[[int], Iterable[int]]


def _passers(replicas: Sequence[Sequence[int]], leaders: Sequence[int]) -> Step:
    """Brokers that can pass a leadership to ``b``: leaders of partitions ``b`` is a replica of."""
    holding: dict[int, list[int]] = {}
    for p, reps in enumerate(replicas):
        for b in reps:
            holding.setdefault(b, []).append(p)
    return lambda b: (leaders[p] for p in holding.get(b, ()))


def _receivers(replicas: Sequence[Sequence[int]], leaders: Sequence[int]) -> Step:
    """Brokers that can take a leadership from ``b``: replicas of partitions ``b`` leads."""
    led_by: dict[int, list[int]] = {}
    for p, b in enumerate(leaders):
        led_by.setdefault(b, []).append(p)
    return lambda b: (x for p in led_by.get(b, ()) for x in replicas[p])


def _reach(start: Sequence[int], step: Step) -> list[int]:
    """Brokers reachable from ``start`` along ``step``, in breadth-first order."""
    seen = dict.fromkeys(sorted(start))
    queue = deque(seen)
    while queue:
        for nxt in step(queue.popleft()):
            if nxt not in seen:
                seen[nxt] = None
                queue.append(nxt)
    return list(seen)


def _find(
    states: Sequence[PartitionState],
    replicas: Sequence[list[int]],
    leaders: Sequence[int],
    layout: RackLayout,
    by_topic: dict[str, list[int]],
    takers: Sequence[int],
    givers: set[int],
) -> _Swap | None:
    """A free swap that moves a partition's leadership from a giver to a taker."""
    for c in takers:
        for members in by_topic.values():
            holders = [q for q in members if c in replicas[q] and leaders[q] != c]
            if not holders:
                continue
            candidates = [p for p in members if leaders[p] in givers and c not in replicas[p]]
            for q in holders:
                for p in candidates:
                    swap = _candidate(states, replicas, leaders, layout, p, q, c)
                    if swap is not None:
                        return swap
    return None


def _candidate(
    states: Sequence[PartitionState],
    replicas: Sequence[list[int]],
    leaders: Sequence[int],
    layout: RackLayout,
    p: int,
    q: int,
    c: int,
) -> _Swap | None:
    orig_p, orig_q = set(states[p].replicas), set(states[q].replicas)
    for b in replicas[p]:
        if b == leaders[p] or b in replicas[q]:
            continue
        extra = (c not in orig_p) - (b not in orig_p) + (b not in orig_q) - (c not in orig_q)
        if extra > 0:
            continue
        new_p = [c if x == b else x for x in replicas[p]]
        new_q = [b if x == c else x for x in replicas[q]]
        if _rack_cost(layout, new_p) <= _rack_cost(layout, replicas[p]) and _rack_cost(
            layout, new_q
        ) <= _rack_cost(layout, replicas[q]):
            return _Swap(p, q, b, c)
    return None


def _rack_cost(layout: RackLayout, reps: Sequence[int]) -> int:
    """How far a replica set is outside its per-rack (lower, upper) bounds."""
    counts = [0] * len(layout.names)
    for b in reps:
        counts[layout.rack_of[b]] += 1
    bounds = layout.bounds(len(reps))
    return sum(max(0, n - hi) + max(0, lo - n) for n, (lo, hi) in zip(counts, bounds, strict=True))


def _apply(swap: _Swap, replicas: Sequence[list[int]], leaders: list[int]) -> None:
    p_reps, q_reps = replicas[swap.p], replicas[swap.q]
    p_reps[p_reps.index(swap.b)] = swap.c
    q_reps[q_reps.index(swap.c)] = swap.b
    leaders[swap.p] = swap.c
