"""Which partitions the balance pass decides replica by replica (:func:`is_pinned`) or per group of
equal replica sets (:func:`is_plain_shrink`), rather than leaving every replica free to stay."""

from __future__ import annotations

from collections.abc import Sequence

from ferry.model.goal import RackMode
from ferry.plan.racks import RackLayout
from ferry.plan.topic_work import Slot


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
    # Under RackMode.EVEN no rack has a lower bound, and no rack holds more than its brokers.
    bounds = layout.bounds_under(rf, mode)
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
