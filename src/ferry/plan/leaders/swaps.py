"""Replica swaps that make an even preferred-leader spread reachable.

Placement fixes each topic's replica counts per broker but not which partitions share brokers. Two
placements with the same moves can differ in whether leaders can be spread evenly: with 4 brokers,
``t0 = [1], [0]`` and ``t1 = [2, 3], [0, 1]``, brokers 0 and 1 must lead three partitions between
them. Swapping replica ``b`` of partition ``p`` with replica ``c`` of ``q`` (same topic) keeps every
broker's per-topic count, so quotas and balance hold; it is taken only when it costs no extra move and
breaks no rack bound, and when it lets a broker short of leadership take over ``p``.

Only when no such swap exists within a topic are wider changes considered, each at no extra move and
only where neither the cluster's nor any topic's spread grows: a partition puts a new replica on
another broker (relocation); two topics trade one replica each (cross-topic swap); or ``p`` takes
``c`` from ``q`` while ``q`` returns to a broker it had before (rotation). Those searches are bounded
(``_BUDGET`` candidates each): on big clusters leader balance does not need them. Where even these
find nothing (an even spread can need two replica changes at once, or one more move than the
balance program's bound), the planner falls back to :mod:`ferry.plan.balance.repair.whole_plan` on small
inputs.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ferry.model.cluster import PartitionState
from ferry.plan.leaders.preferred import choose_leaders, holders, leading, move
from ferry.plan.racks import RackLayout

_BUDGET = 200_000
"""Candidate pairs the cross-topic search may look at per swap."""


@dataclass(slots=True)
class _Swap:
    """``p`` trades its replica ``b`` for ``q``'s replica ``c`` (``q`` takes ``b``, or ``d`` if set);
    ``p == q``: ``p`` just puts its replica ``b`` on ``c``."""

    p: int
    q: int
    b: int
    c: int
    d: int | None = None


@dataclass(slots=True)
class _Swapper:
    states: Sequence[PartitionState]
    replicas: list[list[int]]
    layout: RackLayout
    by_topic: dict[str, list[int]]
    counts: dict[str, Counter[int]]
    total: Counter[int]

    @classmethod
    def of(cls, states: Sequence[PartitionState], replicas: list[list[int]], layout: RackLayout) -> _Swapper:
        by_topic: dict[str, list[int]] = {}
        counts: dict[str, Counter[int]] = {}
        for p, state in enumerate(states):
            by_topic.setdefault(state.tp.topic, []).append(p)
            counts.setdefault(state.tp.topic, Counter()).update(replicas[p])
        total = Counter(b for reps in replicas for b in reps)
        return cls(states, replicas, layout, by_topic, counts, total)

    def find(self, leaders: Sequence[int], takers: Sequence[int], givers: set[int]) -> _Swap | None:
        """A free swap that moves a partition's leadership from a giver to a taker."""
        for c in takers:
            for members in self.by_topic.values():
                holders = [q for q in members if c in self.replicas[q] and leaders[q] != c]
                if not holders:
                    continue
                candidates = [p for p in members if leaders[p] in givers and c not in self.replicas[p]]
                for q in holders:
                    for p in candidates:
                        swap = self._candidate(leaders, p, q, c)
                        if swap is not None:
                            return swap
        return (
            self._find_relocation(leaders, takers, givers)
            or self._find_across(leaders, takers, givers)
            or self._find_rotation(leaders, takers, givers)
        )

    def _find_relocation(
        self, leaders: Sequence[int], takers: Sequence[int], givers: set[int]
    ) -> _Swap | None:
        """``p`` moves its new replica ``b`` to ``c`` instead: no other partition changes."""
        budget = _BUDGET
        everyone = range(len(self.replicas))
        for c in takers:
            for p in everyone:
                if leaders[p] not in givers or c in self.replicas[p]:
                    continue
                orig = self.states[p].replicas
                for b in self.replicas[p]:
                    budget -= 1
                    if budget < 0:
                        return None
                    if b in orig or c in orig or not self._moves_keep_balance(p, b, c):
                        continue
                    if self._racks_no_worse(p, b, c):
                        return _Swap(p, p, b, c)
        return None

    def _moves_keep_balance(self, p: int, b: int, c: int) -> bool:
        """Whether one replica of ``p``'s topic leaving ``b`` for ``c`` keeps global and topic spreads."""
        return self._spread_holds(self.total, b, c) and self._spread_holds(self._topic(p), b, c)

    def _find_across(self, leaders: Sequence[int], takers: Sequence[int], givers: set[int]) -> _Swap | None:
        budget = _BUDGET
        everyone = range(len(self.replicas))
        for c in takers:
            holders = [q for q in everyone if c in self.replicas[q] and leaders[q] != c]
            candidates = [p for p in everyone if leaders[p] in givers and c not in self.replicas[p]]
            for q in holders:
                for p in candidates:
                    budget -= 1
                    if budget < 0:
                        return None
                    swap = self._candidate(leaders, p, q, c)
                    if swap is not None:
                        return swap
        return None

    def _find_rotation(self, leaders: Sequence[int], takers: Sequence[int], givers: set[int]) -> _Swap | None:
        """``p`` drops ``b`` and takes ``c`` from ``q``, which returns to a replica ``d`` it had before.

        ``q`` saves the move ``p`` makes, so moves stay equal; ``b`` loses a replica and ``d`` gains one.
        """
        budget = _BUDGET
        everyone = range(len(self.replicas))
        for c in takers:
            candidates = [p for p in everyone if leaders[p] in givers and c not in self.replicas[p]]
            for q in everyone:
                orig_q = self.states[q].replicas
                if c not in self.replicas[q] or c in orig_q or leaders[q] == c:
                    continue
                for d in (d for d in orig_q if d not in self.replicas[q] and d in self.layout.rack_of):
                    for p in candidates:
                        budget -= 1
                        if budget < 0:
                            return None
                        swap = self._rotation(p, q, c, d)
                        if swap is not None:
                            return swap
        return None

    def _rotation(self, p: int, q: int, c: int, d: int) -> _Swap | None:
        # p makes at most one move more, q one move less (c was new there, d original): never costlier.
        for b in self.replicas[p]:
            if b == d or not self._rotation_keeps_balance(p, q, b, c, d):
                continue
            if self._racks_no_worse(p, b, c) and self._racks_no_worse(q, c, d):
                return _Swap(p, q, b, c, d)
        return None

    def _rotation_keeps_balance(self, p: int, q: int, b: int, c: int, d: int) -> bool:
        if not self._spread_holds(self.total, b, d):
            return False
        first, second = self._topic(p), self._topic(q)
        if first is second:
            return self._spread_holds(first, b, d)
        return self._spread_holds(first, b, c) and self._spread_holds(second, c, d)

    def _candidate(self, leaders: Sequence[int], p: int, q: int, c: int) -> _Swap | None:
        orig_p, orig_q = set(self.states[p].replicas), set(self.states[q].replicas)
        for b in self.replicas[p]:
            if b == leaders[p] or b in self.replicas[q]:
                continue
            extra = (c not in orig_p) - (b not in orig_p) + (b not in orig_q) - (c not in orig_q)
            if extra > 0 or not self._topics_stay_even(p, q, b, c):
                continue
            if self._racks_no_worse(p, b, c) and self._racks_no_worse(q, c, b):
                return _Swap(p, q, b, c)
        return None

    def _topics_stay_even(self, p: int, q: int, b: int, c: int) -> bool:
        first, second = self._topic(p), self._topic(q)
        if first is second:
            return True
        return self._spread_holds(first, b, c) and self._spread_holds(second, c, b)

    def _topic(self, p: int) -> Counter[int]:
        """Per-broker replica counts of ``p``'s topic."""
        return self.counts[self.states[p].tp.topic]

    def _spread_holds(self, counts: Counter[int], loses: int, gains: int) -> bool:
        """Whether one replica leaving ``loses`` for ``gains`` keeps the spread of ``counts`` (a
        topic's or the cluster's) at most one, or no worse than it is."""
        brokers = self.layout.brokers
        before = max(counts[x] for x in brokers) - min(counts[x] for x in brokers)
        after = Counter(counts)
        _shift(after, loses, gains)
        return max(after[x] for x in brokers) - min(after[x] for x in brokers) <= max(1, before)

    def _racks_no_worse(self, p: int, leaves: int, takes: int) -> bool:
        """Whether ``p`` with ``takes`` in place of ``leaves`` is no further outside its rack bounds."""
        reps = self.replicas[p]
        new = [takes if x == leaves else x for x in reps]
        return self.layout.outside(new) <= self.layout.outside(reps)

    def apply(self, swap: _Swap, leaders: list[int]) -> None:
        p_reps = self.replicas[swap.p]
        p_reps[p_reps.index(swap.b)] = swap.c
        leaders[swap.p] = swap.c
        if swap.p == swap.q:
            _shift(self._topic(swap.p), swap.b, swap.c)
            _shift(self.total, swap.b, swap.c)
            return
        back = swap.b if swap.d is None else swap.d
        q_reps = self.replicas[swap.q]
        q_reps[q_reps.index(swap.c)] = back
        _shift(self._topic(swap.p), swap.b, swap.c)
        _shift(self._topic(swap.q), swap.c, back)
        _shift(self.total, swap.b, back)


def leaders_with_swaps(
    states: Sequence[PartitionState], replicas: list[list[int]], layout: RackLayout
) -> list[int]:
    """Preferred leaders spread at most one apart, swapping replicas (in ``replicas``) where needed."""
    leaders = choose_leaders(replicas, [s.current_leader for s in states], layout.brokers)
    swapper: _Swapper | None = None
    # Kept up to date as swaps change replicas: built afresh each round it was most of the time of a
    # 100k plan whose placement took some 220 swaps (docs/benchmarks.md).
    holding: dict[int, list[int]] | None = None
    for _ in range(len(leaders)):
        led = dict.fromkeys(layout.brokers, 0)
        for b in leaders:
            led[b] += 1
        if not led or max(led.values()) - min(led.values()) <= 1:
            break
        swapper = swapper or _Swapper.of(states, replicas, layout)
        holding = holding or holders(replicas, layout.brokers)
        low, extra = divmod(len(leaders), len(led))
        high = low + (extra > 0)
        floor = low if min(led.values()) < low else high
        short = [b for b in led if led[b] < floor]
        spare = [b for b in led if led[b] > floor]
        takers = _reach(short, _passers(holding, leaders))
        givers = set(_reach(spare, _receivers(replicas, leading(leaders, layout.brokers))))
        wanted = min(sum(floor - led[b] for b in short), sum(led[b] - floor for b in spare))
        if not _swap_some(swapper, leaders, _Round(takers, givers, led, floor, wanted), holding):
            break
        # Each swap hands one leadership to a broker that can pass it on; the leader pass walks the paths.
        leaders = choose_leaders(replicas, leaders, layout.brokers, holding)
    return leaders


@dataclass(slots=True)
class _Round:
    """What one round of swaps aims at: ``wanted`` leaderships from ``givers`` to ``takers``, the
    brokers that can pass a leadership on to one leading fewer than ``floor`` (``led``: leaders per
    broker, kept up to date by the round's swaps)."""

    takers: list[int]
    givers: set[int]
    led: dict[int, int]
    floor: int
    wanted: int


def _swap_some(swapper: _Swapper, leaders: list[int], aim: _Round, holding: dict[int, list[int]]) -> int:
    """Up to ``aim.wanted`` swaps against the current replicas; how many were made.

    Each swap moves one leadership from the givers' side to the takers' side. A round makes as many
    swaps as leaderships must cross, and one leader pass then walks them all: a pass is
    O(partitions), and a plan can need hundreds of swaps (docs/benchmarks.md).
    """
    made = 0
    while made < aim.wanted:
        # Brokers still short first (in reach order), so the swaps spread over them.
        takers = sorted(aim.takers, key=lambda b: aim.led[b] >= aim.floor)
        swap = swapper.find(leaders, takers, aim.givers)
        if swap is None:
            break
        aim.led[leaders[swap.p]] -= 1
        aim.led[swap.c] += 1
        swapper.apply(swap, leaders)
        _hold(holding, swap)
        made += 1
    return made


Step = Callable[[int], Iterable[int]]


def _passers(holding: Mapping[int, list[int]], leaders: Sequence[int]) -> Step:
    """Brokers that can pass a leadership to ``b``: leaders of partitions ``b`` is a replica of
    (``holding``: :func:`~ferry.plan.leaders.preferred.holders`)."""
    return lambda b: (leaders[p] for p in holding.get(b, ()))


def _hold(holding: dict[int, list[int]], swap: _Swap) -> None:
    """``holding`` after ``swap``, each broker's partitions still in ascending order."""
    move(holding, swap.p, swap.b, swap.c)
    if swap.p != swap.q:
        move(holding, swap.q, swap.c, swap.b if swap.d is None else swap.d)


def _receivers(replicas: Sequence[Sequence[int]], led_by: Mapping[int, list[int]]) -> Step:
    """Brokers that can take a leadership from ``b``: replicas of partitions ``b`` leads (``led_by``:
    :func:`~ferry.plan.leaders.preferred.leading`)."""
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


def _shift(counts: Counter[int], loses: int, gains: int) -> None:
    # Counter.update with a dict would merge equal keys (loses == gains): one at a time.
    counts.subtract([loses])
    counts.update([gains])
