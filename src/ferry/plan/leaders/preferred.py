"""Preferred-leader spreading: choose the first replica of every partition.

Each broker should lead ``floor(P / B)`` or ``ceil(P / B)`` of the ``P`` planned partitions. A
partition keeps its current leader when that broker is still a replica (fewest leader changes); the
others get the replica broker leading the fewest partitions so far. Then, while a broker leads too
few or too many, leadership shifts along the shortest path of partitions (broker ``a`` leads ``p``,
``p`` has a replica on ``b``, ...) from a broker with leadership to spare to one that lacks it, so
each shift changes as few partitions as possible.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import deque
from collections.abc import Mapping, Sequence


def choose_leaders(
    replicas: Sequence[Sequence[int]],
    current: Sequence[int | None],
    brokers: Sequence[int],
    holding: Mapping[int, list[int]] | None = None,
) -> list[int]:
    """The preferred leader of each partition.

    Args:
        replicas: the planned replica set of every partition.
        current: each partition's current leader (``None`` if unknown).
        brokers: the target brokers; every replica is one of them.
        holding: :func:`holders` of ``replicas``, where the caller keeps it (built here otherwise).
    """
    leaders: list[int] = []
    led = dict.fromkeys(brokers, 0)
    for reps, cur in zip(replicas, current, strict=True):
        if cur is not None and cur in reps:
            leaders.append(cur)
            led[cur] += 1
        else:
            leaders.append(-1)
    for p, reps in enumerate(replicas):
        if leaders[p] == -1:
            pick = min(reps, key=lambda b: (led[b], b))
            leaders[p] = pick
            led[pick] += 1
    _rebalance(replicas, leaders, led, holding)
    return leaders


def holders(replicas: Sequence[Sequence[int]], brokers: Sequence[int]) -> dict[int, list[int]]:
    """Per broker, the partitions with a replica on it, in ascending order."""
    holding: dict[int, list[int]] = {b: [] for b in brokers}
    for p, reps in enumerate(replicas):
        for b in reps:
            holding[b].append(p)
    return holding


def leading(leaders: Sequence[int], brokers: Sequence[int]) -> dict[int, list[int]]:
    """Per broker, the partitions it leads, in ascending order."""
    led_by: dict[int, list[int]] = {b: [] for b in brokers}
    for p, b in enumerate(leaders):
        led_by[b].append(p)
    return led_by


def move(lists: Mapping[int, list[int]], p: int, leaves: int, takes: int) -> None:
    """Partition ``p`` from broker ``leaves``'s list to ``takes``'s, both kept in ascending order
    (the lists of :func:`holders` and :func:`leading`)."""
    del lists[leaves][bisect_left(lists[leaves], p)]
    insort(lists[takes], p)


def _rebalance(
    replicas: Sequence[Sequence[int]],
    leaders: list[int],
    led: dict[int, int],
    holding: Mapping[int, list[int]] | None,
) -> None:
    if not led:
        return
    if holding is None:
        holding = holders(replicas, list(led))
    low, extra = divmod(len(leaders), len(led))
    high = low + (extra > 0)
    _direct(replicas, leaders, led, holding, low, high)
    # First lift every broker to the floor, then bring every broker down to the ceiling; a broker
    # at the ceiling may give to one below it, which keeps exactly `extra` brokers at `high`.
    # Kept up to date by every pass of a leadership, the lift's and the pushes': built afresh per
    # push it was most of a 100k plan's time where the leaders took hundreds of pushes, and per
    # phase of the lift about a quarter of the leader step (docs/benchmarks.md).
    led_by = leading(leaders, list(led))
    _lift(replicas, leaders, led, holding, led_by, low)
    for broker in sorted(led):
        while led[broker] > high and _push(broker, replicas, leaders, led, led_by, high):
            pass


def _direct(
    replicas: Sequence[Sequence[int]],
    leaders: list[int],
    led: dict[int, int],
    holding: Mapping[int, list[int]],
    low: int,
    high: int,
) -> None:
    """One-step shifts in a single sweep; they settle most of the imbalance cheaply."""
    for broker in sorted(led):
        for p in holding[broker]:
            if led[broker] >= low:
                break
            giver = leaders[p]
            if giver != broker and led[giver] > low:
                leaders[p] = broker
                led[giver] -= 1
                led[broker] += 1
    for p, reps in enumerate(replicas):
        giver = leaders[p]
        if led[giver] <= high:
            continue
        taker = min(reps, key=lambda b: (led[b], b))
        if led[taker] < high:
            leaders[p] = taker
            led[giver] -= 1
            led[taker] += 1


def _lift(
    replicas: Sequence[Sequence[int]],
    leaders: list[int],
    led: dict[int, int],
    holding: Mapping[int, list[int]],
    led_by: Mapping[int, list[int]],
    low: int,
) -> None:
    """Bring every broker that can be brought to ``low`` there, each leadership along a shortest path
    (broker ``a`` leads ``p``, ``p`` has a replica on ``b``, ...) from a broker leading more.

    In phases: one search labels every broker with its distance from the brokers leading more than
    ``low``, then every short broker takes what it can along paths that go one label down at each
    step. A pass of a leadership along a path never shortens a distance, so the labels hold for the
    phase; one search per leadership was most of a 100k plan's time where ~500 had to travel.
    """
    while True:
        short = [b for b in sorted(led) if led[b] < low]
        level = _levels(replicas, led_by, [b for b in led if led[b] > low], set(short))
        short = [b for b in short if b in level]
        if not short:
            return
        path = _Paths(holding, leaders, led_by, led, level, low)
        for broker in short:
            while led[broker] < low and path.take(broker):
                pass


def _levels(
    replicas: Sequence[Sequence[int]], led_by: Mapping[int, list[int]], start: list[int], ends: set[int]
) -> dict[int, int]:
    """Per broker, the fewest passes that bring a leadership to it from one of ``start``: every
    broker closer than the farthest of ``ends`` that is reached, and those ends."""
    level = dict.fromkeys(start, 0)
    queue = deque(start)
    missing = len(ends - level.keys())
    while queue and missing:
        broker = queue.popleft()
        for p in led_by[broker]:
            for taker in replicas[p]:
                if taker not in level:
                    level[taker] = level[broker] + 1
                    queue.append(taker)
                    missing -= taker in ends
    return level


class _Paths:
    """One phase of :func:`_lift`: paths down the labels, each broker's partitions scanned once
    (past ones that lead nowhere), brokers that reach no spare leadership left out."""

    def __init__(
        self,
        holding: Mapping[int, list[int]],
        leaders: list[int],
        led_by: Mapping[int, list[int]],
        led: dict[int, int],
        level: dict[int, int],
        low: int,
    ) -> None:
        self.holding, self.leaders, self.led_by = holding, leaders, led_by
        self.led, self.level, self.low = led, level, low
        self.next = dict.fromkeys(level, 0)
        self.dead: set[int] = set()

    def take(self, target: int) -> bool:
        """Pass one leadership to ``target``; whether a path was left."""
        trail: list[int] = [target]
        via: list[int] = []
        while trail:
            broker = trail[-1]
            if self.led[broker] > self.low:
                self._walk(trail, via)
                return True
            giver, p = self._step(broker)
            if giver is not None:
                trail.append(giver)
                via.append(p)
                continue
            self.dead.add(trail.pop())
            if via:
                via.pop()
                self.next[trail[-1]] += 1
        return False

    def _step(self, broker: int) -> tuple[int | None, int]:
        """The next leader one label down of a partition ``broker`` holds, and that partition."""
        want, mine, i = self.level[broker] - 1, self.holding[broker], self.next[broker]
        while i < len(mine):
            p = mine[i]
            giver = self.leaders[p]
            if self.level.get(giver) == want and giver not in self.dead:
                self.next[broker] = i
                return giver, p
            i += 1
        self.next[broker] = i
        return None, -1

    def _walk(self, trail: list[int], via: list[int]) -> None:
        """Each partition on the path passes its leadership one step towards the path's start."""
        self.led[trail[-1]] -= 1
        self.led[trail[0]] += 1
        for receiver, giver, p in zip(trail[:-1], trail[1:], via, strict=True):
            self.leaders[p] = receiver
            move(self.led_by, p, giver, receiver)


def _push(
    source: int,
    replicas: Sequence[Sequence[int]],
    leaders: list[int],
    led: dict[int, int],
    led_by: dict[int, list[int]],
    high: int,
) -> bool:
    """Move one leadership away from ``source`` to a broker leading less than ``high``; BFS forward.
    ``led_by``: per broker, the partitions it leads in ascending order, kept so here (built afresh
    per push it was most of a 100k plan's time where the leaders took hundreds of pushes)."""
    back: dict[int, tuple[int, int]] = {}
    queue = deque([source])
    seen = {source}
    while queue:
        broker = queue.popleft()
        for p in led_by.get(broker, []):
            for taker in replicas[p]:
                if taker in seen:
                    continue
                seen.add(taker)
                back[taker] = (p, broker)
                if led[taker] < high:
                    node = taker
                    while node != source:
                        part, prev = back[node]
                        leaders[part] = node
                        move(led_by, part, prev, node)
                        node = prev
                    led[taker] += 1
                    led[source] -= 1
                    return True
                queue.append(taker)
    return False
