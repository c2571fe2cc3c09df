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
    for broker in sorted(led):
        while led[broker] < low and _shift(broker, replicas, leaders, led, holding, low):
            pass
    led_by = leading(leaders, list(led))
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


def _shift(
    target: int,
    replicas: Sequence[Sequence[int]],
    leaders: list[int],
    led: dict[int, int],
    holding: Mapping[int, list[int]],
    low: int,
) -> bool:
    """Move one leadership to ``target`` from a broker leading more than ``low``; BFS backwards."""
    parent: dict[int, tuple[int, int]] = {}
    queue = deque([target])
    seen = {target}
    while queue:
        broker = queue.popleft()
        for p in holding[broker]:
            giver = leaders[p]
            if giver in seen:
                continue
            seen.add(giver)
            parent[giver] = (p, broker)
            if led[giver] > low:
                _walk(giver, parent, leaders, led)
                return True
            queue.append(giver)
    return False


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
                        del led_by[prev][bisect_left(led_by[prev], part)]
                        insort(led_by[node], part)
                        node = prev
                    led[taker] += 1
                    led[source] -= 1
                    return True
                queue.append(taker)
    return False


def _walk(giver: int, parent: dict[int, tuple[int, int]], leaders: list[int], led: dict[int, int]) -> None:
    """Apply the path found by :func:`_shift`: each partition on it passes leadership one step."""
    led[giver] -= 1
    node = giver
    while node in parent:
        p, receiver = parent[node]
        leaders[p] = receiver
        node = receiver
    led[node] += 1
