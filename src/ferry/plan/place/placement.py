"""Place the open replica slots of one topic on brokers below their quota.

Greedy first: every open slot goes to an allowed broker with room, preferring racks the partition
still needs, then the broker with the most room. A slot that finds no allowed broker with room is
placed by an augmenting path (as in bipartite matching): it takes a broker where it is allowed and
pushes out a replica placed earlier in this pass, or returns to a broker it was dropped from and
pushes out another kept replica there; the pushed-out replica looks for a place the same way. Neither
step adds a replica move, so the plan keeps the number of moves the quotas imply. When no such
path exists, a path may push out a kept replica (one more move); only when that fails too is a
slot placed above a quota (counted in ``fallbacks``).
"""

from __future__ import annotations

from bisect import insort
from collections import deque
from collections.abc import Iterator, Mapping, Sequence

from ferry.model.goal import RackMode
from ferry.plan.racks import RackLayout, may_take, racks_open
from ferry.plan.topic_work import Slot, TopicWork


def place(work: TopicWork, layout: RackLayout, quota: Mapping[int, int], mode: RackMode) -> int:
    """Fill every open slot of ``work``; return the number of fallbacks (placements over quota)."""
    fallbacks = 0
    pending = [s for s in work.slots if s.open > 0]
    pending.sort(key=lambda s: (-s.state.size, s.state.tp))
    # Brokers below quota: the greedy step looks at these only (most brokers are full early on).
    # Only a broker with a quota can have room: a topic of a few partitions has few of those.
    quoted = [(b, limit) for b, limit in quota.items() if limit > 0]
    roomy = Room.of(work, quoted)
    for slot in pending:
        while slot.open > 0:
            broker = _best(slot, layout, roomy, mode)
            if broker is not None:
                work.add(slot, broker)
                roomy.take(broker)
                continue
            if not (
                _augment(work, slot, layout, quota, mode)
                or _augment(work, slot, layout, quota, mode, costly=True)
            ):
                work.add(slot, _least_over(work, slot, layout, quota, mode))
                fallbacks += 1
            roomy = Room.of(work, quoted)
    return fallbacks


class Room:
    """The brokers below their quota, by room left: the greedy step's candidates in the order it
    ranks them (most room, then lowest id), kept as replicas are placed.

    The greedy step runs once per moved replica, a million times on large plans; looking at every
    broker with room each time was the placing pass's largest cost (a 200-broker cluster has
    dozens). In this order the first broker of a rack holding the fewest of the partition's
    replicas is the answer, most often within the first few looked at.
    """

    __slots__ = ("_brokers", "_levels", "_rooms")

    def __init__(self, rooms: dict[int, int]) -> None:
        self._rooms = rooms
        self._brokers: dict[int, list[int]] = {}
        for broker in sorted(rooms):
            self._brokers.setdefault(rooms[broker], []).append(broker)
        self._levels = sorted(self._brokers)
        """The room values present, ascending."""

    @classmethod
    def of(cls, work: TopicWork, quota: Sequence[tuple[int, int]]) -> Room:
        """Room per broker below its quota (``quota``: (broker, quota) pairs)."""
        # ``get``: the load counts only brokers holding the topic, and Counter's own miss is slow.
        load = work.load.get
        return cls({b: limit - load(b, 0) for b, limit in quota if load(b, 0) < limit})

    def ranked(self) -> Iterator[int]:
        """The brokers with room, most room first, then by id."""
        brokers = self._brokers
        for level in reversed(self._levels):
            yield from brokers[level]

    def take(self, broker: int) -> None:
        """``broker`` took one replica: one less room, and out once it has none."""
        room = self._rooms[broker]
        self._leave(broker, room)
        if room == 1:
            del self._rooms[broker]
            return
        self._rooms[broker] = room - 1
        below = self._brokers.get(room - 1)
        if below is None:
            self._brokers[room - 1] = [broker]
            insort(self._levels, room - 1)
        else:
            insort(below, broker)

    def _leave(self, broker: int, room: int) -> None:
        level = self._brokers[room]
        level.remove(broker)
        if not level:
            del self._brokers[room]
            self._levels.remove(room)


def _best(slot: Slot, layout: RackLayout, roomy: Room, mode: RackMode) -> int | None:
    """The broker with room a greedy step gives ``slot``: in the rack holding fewest of its
    replicas, then with the most room, then the lowest id."""
    counts = layout.counts(slot.replicas)
    # Whether a rack may take the replica depends only on the rack: decide once per rack.
    rack_ok = racks_open(layout, mode, slot.rf, counts)
    open_counts = [c for c, ok in zip(counts, rack_ok, strict=True) if ok]
    if not open_counts:
        return None
    fewest = min(open_counts)
    rack_of = layout.rack_of
    best, choice = 0, None
    # In rank order, the first broker of each replica count is the best of that count, and none
    # can be in a rack holding fewer than ``fewest``.
    for broker in roomy.ranked():
        rack = rack_of[broker]
        if not rack_ok[rack] or broker in slot.replicas:
            continue
        held = counts[rack]
        if held == fewest:
            return broker
        if choice is None or held < best:
            best, choice = held, broker
    return choice


def _least_over(
    work: TopicWork, slot: Slot, layout: RackLayout, quota: Mapping[int, int], mode: RackMode
) -> int:
    candidates = [b for b in quota if may_take(layout, mode, slot.replicas, slot.rf, b)]
    if not candidates:
        candidates = [b for b in quota if b not in slot.replicas]
    return min(candidates, key=lambda b: (work.load.get(b, 0) - quota[b], b))


def _augment(
    work: TopicWork,
    start: Slot,
    layout: RackLayout,
    quota: Mapping[int, int],
    mode: RackMode,
    *,
    costly: bool = False,
) -> bool:
    """Find and apply an augmenting path that places one replica of ``start``; False if none.

    A node of the search is a slot together with the broker it is pushed out of (``None`` for
    ``start``): which brokers a slot may take depends on the replica it gives up (its rack), so the
    same slot is explored once per broker it could leave. A broker is expanded once as an ordinary
    target (its new and returned replicas may be pushed out) and once more when a slot returns to it
    (then any replica there may be pushed out).

    ``costly`` lets a path push out any replica, kept ones too: each such push is one more move. It
    is the last resort before a fallback, for a rack short of open slots, where the balance pass
    already counted the replica that has to leave a broker that is not over its quota.
    """
    holders: dict[int, list[Slot]] = {b: [] for b in quota}
    for s in work.slots:
        for b in s.replicas:
            holders[b].append(s)
    root: _Node = (start, None)
    parent: dict[tuple[int, int | None], _Node] = {}
    seen_nodes: set[tuple[int, int | None]] = {(id(start), None)}
    seen_brokers: set[tuple[int, bool]] = set()
    queue: deque[_Node] = deque([root])
    # A full broker holding nothing of the topic can neither take the slot nor pass it on: only the
    # others are worth a look (with topics of a few partitions over many brokers, most are such).
    useful = [b for b in quota if work.load.get(b, 0) < quota[b] or holders[b]]
    while queue:
        node = queue.popleft()
        slot, without = node
        on_path = _path_slots(node, parent)
        # Per rack once ``without`` left the slot (the search asks about every broker).
        counts = layout.counts(b for b in slot.replicas if b != without)
        rack_ok = racks_open(layout, mode, slot.rf, counts)
        for broker in useful:
            if broker == without or broker in slot.replicas or not rack_ok[layout.rack_of[broker]]:
                continue
            if work.load[broker] < quota[broker]:
                _apply(work, node, broker, parent)
                return True
            returning = broker in slot.dropped
            if (broker, returning) in seen_brokers:
                continue
            seen_brokers.add((broker, returning))
            for other in holders[broker]:
                movable = costly or returning or broker in other.new or broker in other.returned
                key = (id(other), broker)
                if not movable or key in seen_nodes or id(other) in on_path:
                    continue
                seen_nodes.add(key)
                parent[key] = node
                queue.append((other, broker))
    return False


_Node = tuple[Slot, int | None]


def _path_slots(node: _Node, parent: Mapping[tuple[int, int | None], _Node]) -> set[int]:
    """Ids of the slots on the path from the start to ``node`` (a path uses each slot once)."""
    ids = set()
    while True:
        slot, left = node
        ids.add(id(slot))
        if left is None:
            return ids
        node = parent[id(slot), left]


def _apply(work: TopicWork, node: _Node, broker: int, parent: Mapping[tuple[int, int | None], _Node]) -> None:
    """Shift replicas along the path that ends with ``node``'s slot taking free ``broker``."""
    while True:
        slot, freed = node
        work.add(slot, broker)
        if freed is None:
            return
        # ``slot`` is pushed out of ``freed`` so that the previous slot on the path can have it.
        work.drop(slot, freed)
        if freed in slot.new:
            slot.new -= {freed}
        else:
            slot.returned -= {freed}
            slot.dropped |= {freed}
        node, broker = parent[id(slot), freed], freed
