"""What the operator asks the planner for."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType


class RackMode(StrEnum):
    """How strictly racks constrain placement.

    ``STRICT`` (the default) never puts two replicas of a partition in one rack while the target
    brokers span at least RF racks, even when unequal racks then force the brokers of a small rack to
    carry more. ``EVEN`` spreads replicas evenly over brokers and lets two replicas share a rack only
    where unequal racks force it.
    """

    STRICT = "strict"
    EVEN = "even"


DEFAULT_MAX_DISK_FRACTION = 0.85
"""The fullest a broker's disk may end under a plan made with capacities, unless told otherwise."""


class BalanceMode(StrEnum):
    """What the planner evens out over the target brokers.

    ``REPLICAS`` (the default) evens replica counts per broker and per topic with the fewest moves.
    ``BYTES`` evens disk bytes per broker (or the fraction of each broker's capacity in use) with the
    fewest bytes moved; replica counts may then differ more.
    """

    REPLICAS = "replicas"
    BYTES = "bytes"


@dataclass(frozen=True, slots=True)
class Goal:
    """A planning request.

    Args:
        brokers: the target broker set; ``None`` means every broker in the snapshot.
        replace: pairs (old, new): every replica on ``old`` goes to ``new``; nothing else moves.
        replication_factors: new replication factor per topic.
        topics: plan only these topics (``None``: all).
        exclude_topics: never touch these topics.
        rack_mode: see :class:`RackMode`.
        balance: see :class:`BalanceMode`.
        capacity: disk bytes per broker (``BYTES`` only): balance by the fraction in use.
        max_disk_fraction: with ``capacity``, no plan may fill a broker beyond this fraction.
        max_moves: a budget: plan at most this many replica moves, the first step of the full plan.
        max_bytes: a budget: plan moves copying at most this many bytes, likewise.
        drain_above: only brokers fuller than this fraction of ``capacity`` send replicas, until
            each is under it; nothing else moves.
    """

    brokers: frozenset[int] | None = None
    replace: tuple[tuple[int, int], ...] = ()
    replication_factors: Mapping[str, int] = field(default_factory=dict)
    topics: frozenset[str] | None = None
    exclude_topics: frozenset[str] = frozenset()
    rack_mode: RackMode = RackMode.STRICT
    balance: BalanceMode = BalanceMode.REPLICAS
    capacity: Mapping[int, int] | None = None
    max_disk_fraction: float = DEFAULT_MAX_DISK_FRACTION
    max_moves: int | None = None
    max_bytes: int | None = None
    drain_above: float | None = None

    def __post_init__(self) -> None:
        self._check_disk()
        for name in ("max_moves", "max_bytes"):
            limit = getattr(self, name)
            if limit is not None and limit < 1:
                raise ValueError(f"{name.replace('_', ' ')} must be at least 1, got {limit}")
        object.__setattr__(self, "replication_factors", MappingProxyType(dict(self.replication_factors)))
        for topic, rf in self.replication_factors.items():
            if rf < 1:
                raise ValueError(f"replication factor of {topic} must be >= 1, got {rf}")
        if self.brokers is not None and not self.brokers:
            raise ValueError("the target broker set is empty")
        olds = [old for old, _ in self.replace]
        if len(set(olds)) != len(olds):
            raise ValueError("a broker is replaced twice")
        for old, new in self.replace:
            if old == new:
                raise ValueError(f"cannot replace broker {old} with itself")

    def _check_disk(self) -> None:
        if self.drain_above is not None:
            if not 0 < self.drain_above <= 1:
                raise ValueError(f"the drain threshold must be in (0, 1], got {self.drain_above}")
            if self.capacity is None:
                raise ValueError("a drain above a fraction of capacity needs the brokers' capacities")
            if self.balance is BalanceMode.BYTES or self.replace:
                raise ValueError(
                    "a drain moves only off the brokers over the threshold: no balance, no replace"
                )
        if self.capacity is not None:
            if self.balance is not BalanceMode.BYTES and self.drain_above is None:
                raise ValueError("a disk capacity balances bytes or drains: it needs one of them")
            for broker, size in self.capacity.items():
                if size <= 0:
                    raise ValueError(f"capacity of broker {broker} must be > 0 bytes, got {size}")
            object.__setattr__(self, "capacity", MappingProxyType(dict(self.capacity)))
        if not 0 < self.max_disk_fraction <= 1:
            raise ValueError(f"the largest disk fraction must be in (0, 1], got {self.max_disk_fraction}")

    @property
    def budgeted(self) -> bool:
        """Whether the plan is one step within a budget rather than the whole change."""
        return self.max_moves is not None or self.max_bytes is not None

    def in_scope(self, topic: str) -> bool:
        """Whether the planner may touch ``topic``."""
        if topic in self.exclude_topics:
            return False
        return self.topics is None or topic in self.topics
