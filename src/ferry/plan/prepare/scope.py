"""What a goal plans over: its target brokers and the partitions in scope, topic by topic."""

from __future__ import annotations

from itertools import groupby

from ferry.model.cluster import ClusterSnapshot, PartitionState
from ferry.model.goal import Goal


def target_brokers(snapshot: ClusterSnapshot, goal: Goal) -> list[int]:
    """The brokers replicas may end up on, sorted: the goal's set (default every broker of the
    snapshot) without the brokers being replaced, with their replacements."""
    chosen = goal.brokers if goal.brokers is not None else snapshot.broker_ids
    olds = {old for old, _ in goal.replace}
    return sorted((set(chosen) - olds) | {new for _, new in goal.replace})


def in_scope(snapshot: ClusterSnapshot, goal: Goal) -> list[list[PartitionState]]:
    """The partitions the goal may touch, grouped by topic, in topic-partition order."""
    wanted = (p for p in snapshot.partitions if goal.in_scope(p.tp.topic))
    return [list(group) for _, group in groupby(wanted, key=lambda p: p.tp.topic)]
