"""Immutable domain types; no I/O."""

from ferry.model.cluster import Broker, ClusterSnapshot, PartitionState, TopicPartition
from ferry.model.goal import Goal, RackMode
from ferry.model.plan import Move, Plan

__all__ = [
    "Broker",
    "ClusterSnapshot",
    "Goal",
    "Move",
    "PartitionState",
    "Plan",
    "RackMode",
    "TopicPartition",
]
