"""Immutable domain types; no I/O."""

from ferry.model.cluster import Broker, ClusterSnapshot, LogDir, PartitionState, TopicPartition
from ferry.model.goal import BalanceMode, Goal, RackMode
from ferry.model.plan import Move, Plan, PlanJob
from ferry.model.report import PlanReport

__all__ = [
    "BalanceMode",
    "Broker",
    "ClusterSnapshot",
    "Goal",
    "LogDir",
    "Move",
    "PartitionState",
    "Plan",
    "PlanJob",
    "PlanReport",
    "RackMode",
    "TopicPartition",
]
