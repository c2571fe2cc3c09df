"""Replicas that leave before anything is placed.

Pinned partitions (:func:`ferry.plan.prepare.pinned.is_pinned`) cannot keep every replica they have on target
brokers: their replication factor goes down, two of their replicas share a rack, or a rack lacks the replicas
its lower bound asks for. The balance pass decides exactly which of their replicas stay (that choice is
what makes its lower bound exact); :func:`apply_keeps` carries the decision out. Partitions that
merely have too many replicas (:func:`ferry.plan.prepare.pinned.is_plain_shrink`) are decided the same way,
per group of equal replica sets rather than per replica (:mod:`ferry.plan.prepare.shrink_groups`). Every other
partition loses replicas only where a broker holds more of the topic than its quota, and then the
smallest replicas go (:func:`over_quota_drops`), so the fewest bytes move.
"""

from __future__ import annotations

from collections.abc import Mapping

from ferry.plan.topic_work import Slot, TopicWork


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
