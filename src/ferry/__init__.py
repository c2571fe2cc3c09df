"""kafka-ferry: minimal-movement, rack-aware Kafka partition reassignment."""

from ferry.errors import FerryError
from ferry.model import Broker, ClusterSnapshot, Goal, Move, PartitionState, Plan, TopicPartition

__version__ = "0.1.0"

__all__ = [
    "Broker",
    "ClusterSnapshot",
    "FerryError",
    "Goal",
    "Move",
    "PartitionState",
    "Plan",
    "TopicPartition",
    "__version__",
]
