"""Replicas that leave before anything is placed.

Pinned partitions (:func:`is_pinned`) cannot keep every replica they have on target brokers: their
replication factor goes down, two of their replicas share a rack, or a rack lacks the replicas its
lower bound asks for. The balance pass decides exactly which of their replicas stay (that choice is
what makes its lower bound exact); :func:`apply_keeps` carries the decision out. Partitions that
merely have too many replicas (:func:`is_plain_shrink`) are decided the same way, per group of equal
replica sets rather than per replica (:mod:`ferry.plan.shrink`). Every other
partition loses replicas only where a broker holds more of the topic than its quota, and then the
smallest replicas go (:func:`over_quota_drops`), so the fewest bytes move.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ferry.model.goal import RackMode
from ferry.plan.racks import RackLayout
from ferry.plan.topic import Slot, TopicWork


def is_pinned(
    rf: int, current_rf: int, counts: Sequence[int], layout: RackLayout, mode: RackMode, *, mixed: bool
) -> bool:
    """Whether the balance pass must decide replica by replica which of a partition's replicas stay
    (``rf``: planned replication factor; ``current_rf``: the one it has; ``counts``: its replicas on
    target brokers per rack).

    That is when keeping them all could break the replication factor or the rack rule, or when a rack
    with a lower bound holds more than it: then which replicas stay decides where new ones must go.
    In a topic whose partitions differ in replication factor (``mixed``), every partition with a
    rack lower bound is pinned, so the per-rack accounting of the balance pass stays uniform.
    """
    if sum(counts) > rf or rf < current_rf:
        return True
    if mode is RackMode.EVEN:
        return False
    bounds = layout.bounds(rf)
    if any(lo > 0 for lo, _ in bounds) and mixed:
        return True
    # Below a lower bound is fine: the rack's floor already counts the replica it is owed.
    return any(c > hi or (lo > 0 and c > lo) for c, (lo, hi) in zip(counts, bounds, strict=True))


def is_plain_shrink(slot: Slot, layout: RackLayout, mode: RackMode) -> bool:
    """Whether ``slot`` only has too many replicas: any ``rf`` of them may stay.

    That holds when no replica is preferred for being in sync and every subset meets the rack rule
    (no rack above its upper bound now, no rack with a lower bound). The balance pass then decides
    per broker how many such partitions keep their replica there, not replica by replica.
    """
    if len(slot.replicas) <= slot.rf:
        return False
    isr = slot.state.isr
    if isr is not None and 0 < sum(b in isr for b in slot.replicas) < len(slot.replicas):
        return False
    if mode is RackMode.EVEN:
        return True
    bounds = layout.bounds(slot.rf)
    counts = layout.counts(slot.replicas)
    return all(lo == 0 and c <= hi for c, (lo, hi) in zip(counts, bounds, strict=True))


def apply_keeps(work: TopicWork, keeps: Mapping[int, frozenset[int]]) -> int:
    """Drop the replicas of pinned partitions that the balance pass did not keep."""
    dropped = 0
    for index, keep in keeps.items():
        slot = work.slots[index]
        slot.decided = True
        for broker in [b for b in slot.replicas if b not in keep]:
            work.drop(slot, broker)
            # the placement pass may still bring it back where the rules allow
            slot.dropped |= {broker}
            dropped += 1
    return dropped


def over_quota_drops(work: TopicWork, quota: Mapping[int, int]) -> int:
    """Drop the smallest replicas from brokers above their quota; return how many were dropped."""
    dropped = 0
    over = {b for b, n in work.load.items() if n > quota[b]}  # only holders can be over
    holding: dict[int, list[Slot]] = {b: [] for b in over}
    for slot in work.slots:
        for b in slot.replicas:
            if b in over and not slot.decided:
                holding[b].append(slot)
    for broker in sorted(over):
        excess = work.load[broker] - quota[broker]
        holders = holding[broker]
        holders.sort(key=lambda s: (s.state.size, s.state.current_leader == broker, s.state.tp))
        for slot in holders[:excess]:
            work.drop(slot, broker)
            slot.dropped |= {broker}
            dropped += 1
    return dropped
