"""Place the open replica slots of one topic on brokers below their quota.

Greedy first: every open slot goes to an allowed broker with room, preferring racks the partition
still needs, then the broker with the most room. A slot that finds no allowed broker with room is
placed by an augmenting path (as in bipartite matching): it takes a broker where it is allowed and
pushes out a replica placed earlier in this pass, or returns to a broker it was dropped from and
pushes out another kept replica there; the pushed-out replica looks for a place the same way. Neither
step adds a replica move, so the plan keeps the number of moves the quotas imply. Only when no such
path exists is a slot placed above a quota (counted in ``fallbacks``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping

from ferry.model.goal import RackMode
from ferry.plan.drops import rack_counts
from ferry.plan.racks import RackLayout
from ferry.plan.topic import Slot, TopicWork


def place(work: TopicWork, layout: RackLayout, quota: Mapping[int, int], mode: RackMode) -> int:
    """Fill every open slot of ``work``; return the number of fallbacks (placements over quota)."""
    fallbacks = 0
    pending = [s for s in work.slots if s.open > 0]
    pending.sort(key=lambda s: (-s.state.size, s.state.tp))
    for slot in pending:
        while slot.open > 0:
            broker = _best(work, slot, layout, quota, mode)
            if broker is not None:
                work.add(slot, broker)
            elif not _augment(work, slot, layout, quota, mode):
                work.add(slot, _least_over(work, slot, layout, quota, mode))
                fallbacks += 1
    return fallbacks


def allowed(slot: Slot, broker: int, layout: RackLayout, mode: RackMode, without: int | None = None) -> bool:
    """Whether ``broker`` may take a replica of ``slot`` (after ``without`` leaves it)."""
    replicas = [b for b in slot.replicas if b != without]
    if broker in replicas:
        return False
    if mode is RackMode.EVEN:
        return True
    bounds = layout.bounds(slot.rf)
    counts = rack_counts(layout, replicas)
    rack = layout.rack_of[broker]
    if counts[rack] >= bounds[rack][1]:
        return False
    counts[rack] += 1
    need = sum(max(0, lo - c) for (lo, _), c in zip(bounds, counts, strict=True))
    return need <= slot.rf - len(replicas) - 1


def _best(
    work: TopicWork, slot: Slot, layout: RackLayout, quota: Mapping[int, int], mode: RackMode
) -> int | None:
    counts = rack_counts(layout, slot.replicas)
    best: tuple[int, int, int] | None = None
    choice = None
    for broker, limit in quota.items():
        room = limit - work.load[broker]
        if room <= 0 or not allowed(slot, broker, layout, mode):
            continue
        key = (counts[layout.rack_of[broker]], -room, broker)
        if best is None or key < best:
            best, choice = key, broker
    return choice


def _least_over(
    work: TopicWork, slot: Slot, layout: RackLayout, quota: Mapping[int, int], mode: RackMode
) -> int:
    candidates = [b for b in quota if allowed(slot, b, layout, mode)]
    if not candidates:
        candidates = [b for b in quota if b not in slot.replicas]
    return min(candidates, key=lambda b: (work.load[b] - quota[b], b))


def _augment(
    work: TopicWork, start: Slot, layout: RackLayout, quota: Mapping[int, int], mode: RackMode
) -> bool:
    """Find and apply an augmenting path that places one replica of ``start``; False if none."""
    holders: dict[int, list[Slot]] = {b: [] for b in quota}
    for s in work.slots:
        for b in s.replicas:
            holders[b].append(s)
    # parent[id(slot)] = (slot that takes the broker, broker, slot pushed out)
    parent: dict[int, tuple[Slot, int]] = {}
    leaving: dict[int, int] = {}
    seen_brokers: set[int] = set()
    seen_slots = {id(start)}
    queue: deque[Slot] = deque([start])
    while queue:
        slot = queue.popleft()
        without = leaving.get(id(slot))
        for broker in quota:
            if broker in seen_brokers or not allowed(slot, broker, layout, mode, without):
                continue
            if work.load[broker] < quota[broker]:
                _apply(work, slot, broker, parent, leaving)
                return True
            seen_brokers.add(broker)
            returning = broker in slot.dropped
            for other in holders[broker]:
                movable = broker in other.new or broker in other.returned or returning
                if other is slot or id(other) in seen_slots or not movable:
                    continue
                seen_slots.add(id(other))
                parent[id(other)] = (slot, broker)
                leaving[id(other)] = broker
                queue.append(other)
    return False


def _apply(
    work: TopicWork,
    slot: Slot,
    broker: int,
    parent: dict[int, tuple[Slot, int]],
    leaving: dict[int, int],
) -> None:
    """Shift replicas along the path that ends with ``slot`` taking free ``broker``."""
    while True:
        work.add(slot, broker)
        link = parent.get(id(slot))
        if link is None:
            return
        taker, freed = link
        # ``slot`` was pushed out of ``freed`` so that ``taker`` could have it.
        work.drop(slot, freed)
        if freed in slot.new:
            slot.new.discard(freed)
        else:
            slot.returned.discard(freed)
            slot.dropped.add(freed)
        del leaving[id(slot)]
        slot, broker = taker, freed
