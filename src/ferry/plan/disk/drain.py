"""Drain above a threshold (``--drain-above F``): only the brokers whose disks are fuller than ``F`` of
their capacity send replicas, and only until each is at or under ``F``; nothing else moves.

Bytes per broker count every replica on it, in scope or not (a disk fills with all of them); a new
replica weighs its partition's size, a leaving one what it measured where it was. Each sender, the
fullest over its limit first, picks replicas to send that cover what must leave with as few bytes
as it can: the largest that fit under what is left to shed, then the smallest of the others that
covers the rest. Each goes to the broker with the most room under its own limit that may take it
under the rack rule (:func:`ferry.plan.racks.may_take`) and holds no replica of the partition; the
new replica takes the leaving one's place in the list, so a preferred leader there stays one.

The bytes moved are measured against the bytes that must leave the brokers over ``F``
(``bytes_to_leave``): no drain moves less. Where no broker can take what a sender must shed, the
plan is refused, naming each broker left over its limit and by how much.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ferry.errors import PreconditionError, and_more
from ferry.model.cluster import ClusterSnapshot, PartitionState
from ferry.model.goal import Goal
from ferry.plan.disk.state import byte_changes
from ferry.plan.racks import RackLayout, may_take


@dataclass(frozen=True, slots=True)
class Drain:
    """Per partition in scope its planned replicas (preferred leader first), and the report's
    ``drain`` section."""

    planned: list[tuple[PartitionState, tuple[int, ...]]]
    figures: dict[str, object]
    before: Mapping[int, int]
    """Bytes on each target broker before the drain."""

    def figures_of(self, planned: Sequence[tuple[PartitionState, Sequence[int]]]) -> dict[str, object]:
        """The ``drain`` section for another placement of the same partitions (a budgeted step of
        this drain): each broker's fraction after it; the rest as the whole drain's."""
        after = dict(self.before)
        for b, change in byte_changes(planned).items():
            if b in after:
                after[b] += change
        capacity = self.figures["capacity"]
        assert isinstance(capacity, dict)
        fractions = {str(b): round(n / capacity[str(b)], 4) for b, n in after.items()}
        return {**self.figures, "after": fractions}


def plan_drain(
    snapshot: ClusterSnapshot, goal: Goal, targets: Sequence[int], scope: Sequence[PartitionState]
) -> Drain:
    """Send replicas off every broker over ``goal.drain_above`` of its capacity until it is under.

    Raises:
        PreconditionError: some broker cannot get under the threshold.
    """
    assert goal.drain_above is not None and goal.capacity is not None
    layout = RackLayout.of(snapshot.racks, targets)
    limit = {b: goal.drain_above * goal.capacity[b] for b in targets}
    used = dict.fromkeys(targets, 0)
    for state in snapshot.partitions:
        for b in state.replicas:
            if b in used:
                used[b] += state.bytes_on(b)
    before = dict(used)
    replicas = [list(state.replicas) for state in scope]
    senders = sorted((b for b in targets if used[b] > limit[b]), key=lambda b: (limit[b] - used[b], b))
    cordoned = {b.id for b in snapshot.brokers if b.cordoned}
    for sender in senders:
        _shed(sender, scope, replicas, used, limit, layout, goal, set(senders), cordoned)
    over = {b: used[b] - limit[b] for b in senders if used[b] > limit[b]}
    if over:
        raise _refusal(goal.drain_above, over)
    planned = [(state, tuple(reps)) for state, reps in zip(scope, replicas, strict=True)]
    return Drain(planned, _figures(goal, targets, before, used, senders, limit), before)


def _shed(
    sender: int,
    scope: Sequence[PartitionState],
    replicas: list[list[int]],
    used: dict[int, int],
    limit: Mapping[int, float],
    layout: RackLayout,
    goal: Goal,
    senders: set[int],
    cordoned: set[int],
) -> None:
    """Move replicas off ``sender`` until it is at or under its limit (or nothing more can go);
    a cordoned broker takes none."""
    held = [p for p, reps in enumerate(replicas) if sender in reps]
    for p in _cover(held, [scope[p].bytes_on(sender) for p in held], used[sender] - limit[sender]):
        if used[sender] <= limit[sender]:
            return
        state, reps = scope[p], replicas[p]
        size = state.size
        rf = len(reps)
        on_targets = [b for b in reps if b in layout.rack_of]
        fitting = [
            b
            for b in layout.brokers
            if b not in senders
            and b not in cordoned
            and b not in reps
            and used[b] + size <= limit[b]
            and may_take(layout, goal.rack_mode, on_targets, rf, b, without=sender)
        ]
        if not fitting:
            continue
        dest = max(fitting, key=lambda b: (limit[b] - used[b], -b))
        reps[reps.index(sender)] = dest
        used[sender] -= state.bytes_on(sender)
        used[dest] += size


def _cover(items: Sequence[int], sizes: Sequence[int], excess: float) -> list[int]:
    """``items`` in the order to try them: the largest that fit under what is left of ``excess``
    (largest first), then the others from the smallest up, so the first that covers the rest is
    the smallest that does."""
    order = sorted(range(len(items)), key=lambda j: (-sizes[j], items[j]))
    chosen, left = [], excess
    for j in order:
        if 0 < sizes[j] <= left:
            chosen.append(j)
            left -= sizes[j]
    rest = sorted((j for j in order if j not in set(chosen)), key=lambda j: (sizes[j], items[j]))
    return [items[j] for j in chosen + rest]


def _refusal(threshold: float, over: Mapping[int, float]) -> PreconditionError:
    worst = sorted(over, key=lambda b: (-over[b], b))
    shortfalls = [f"broker {b} stays {over[b] / 1e9:.1f} GB over" for b in worst]
    return PreconditionError(
        f"--drain-above {threshold:g}: no plan gets every broker under {threshold * 100:g} % of its "
        f"capacity: {and_more(shortfalls)}",
        hint="raise --drain-above, add brokers, or free space on the others",
    )


def _figures(
    goal: Goal,
    targets: Sequence[int],
    before: Mapping[int, int],
    after: Mapping[int, int],
    senders: Sequence[int],
    limit: Mapping[int, float],
) -> dict[str, object]:
    assert goal.capacity is not None
    capacity = goal.capacity
    return {
        "threshold": goal.drain_above,
        "capacity": {str(b): capacity[b] for b in targets},
        "senders": list(senders),
        "bytes_to_leave": int(sum(before[b] - limit[b] for b in senders)),
        "before": {str(b): round(before[b] / capacity[b], 4) for b in targets},
        "after": {str(b): round(after[b] / capacity[b], 4) for b in targets},
    }
