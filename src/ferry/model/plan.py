"""A plan: the target replicas of the partitions that change, with their originals."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from ferry.model.cluster import ClusterSnapshot, TopicPartition
from ferry.model.goal import Goal
from ferry.model.report import PlanReport


def replicas_added(original: Sequence[int], target: Sequence[int]) -> tuple[int, ...]:
    """The replicas of ``target`` that ``original`` lacks, in ``target``'s order."""
    return tuple(b for b in target if b not in original)


ANY_DIR = "any"
"""The log dir of a reassignment JSON entry that leaves the choice to the broker."""


def named_dirs(replicas: Sequence[int], log_dirs: Sequence[str] | None) -> dict[int, str]:
    """The log dir named for each of ``replicas`` (one per replica, as a reassignment JSON's
    ``log_dirs`` gives them), by broker; ``any`` names none."""
    if log_dirs is None:
        return {}
    return {b: d for b, d in zip(replicas, log_dirs, strict=True) if d != ANY_DIR}


class ReplicaChange:
    """A partition's change from ``original`` to ``target`` replicas, as KIP-455 splits it: the
    replicas to add and the replicas to remove, and the log dir named for each replica, if any.
    Shared by a planned :class:`Move` and the journal's record of one."""

    __slots__ = ()
    original: tuple[int, ...]
    target: tuple[int, ...]
    log_dirs: tuple[str, ...] | None

    @property
    def named_dirs(self) -> dict[int, str]:
        """The log dir named for each replica of ``target`` that has one (not ``any``), by broker."""
        return named_dirs(self.target, self.log_dirs)

    @property
    def adding(self) -> tuple[int, ...]:
        """Replicas that must copy the partition's data (KIP-455's AR)."""
        return replicas_added(self.original, self.target)

    @property
    def removing(self) -> tuple[int, ...]:
        """Replicas dropped once the adding ones are in sync (KIP-455's RR)."""
        return replicas_added(self.target, self.original)


@dataclass(frozen=True, slots=True)
class Move(ReplicaChange):
    """One partition's change from ``original`` to ``target`` replicas (order matters: leader first)."""

    tp: TopicPartition
    original: tuple[int, ...]
    target: tuple[int, ...]
    size_bytes: int = 0
    log_dirs: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not self.target:
            raise ValueError(f"{self.tp}: target replicas must not be empty")
        if len(set(self.target)) != len(self.target):
            raise ValueError(f"{self.tp}: duplicate replica in target {list(self.target)}")
        if self.log_dirs is not None and len(self.log_dirs) != len(self.target):
            raise ValueError(f"{self.tp}: {len(self.log_dirs)} log dirs for {len(self.target)} replicas")

    @property
    def leader_changes(self) -> bool:
        return self.original[0] != self.target[0]


@dataclass(frozen=True, slots=True)
class Plan:
    """Target replicas for the partitions that change, keyed and ordered by topic-partition.

    ``report`` carries the planner's figures (moves, bounds, balance); a plan read back from a
    reassignment file, or built by hand, has none.
    """

    moves: tuple[Move, ...]
    report: PlanReport | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "moves", tuple(sorted(self.moves, key=lambda m: m.tp)))
        tps = [m.tp for m in self.moves]
        if len(set(tps)) != len(tps):
            raise ValueError("a partition appears twice in the plan")

    @classmethod
    def of(cls, moves: Iterable[Move], report: PlanReport | None = None) -> Plan:
        return cls(tuple(moves), report)

    @property
    def figures(self) -> PlanReport:
        """The planner's report; a plan without one (not made by the planner) is a ValueError."""
        if self.report is None:
            raise ValueError("this plan was not made by the planner: it has no report")
        return self.report

    def __iter__(self) -> Iterator[Move]:
        return iter(self.moves)

    def __len__(self) -> int:
        return len(self.moves)

    @property
    def targets(self) -> Mapping[TopicPartition, tuple[int, ...]]:
        return MappingProxyType({m.tp: m.target for m in self.moves})

    @property
    def originals(self) -> Mapping[TopicPartition, tuple[int, ...]]:
        return MappingProxyType({m.tp: m.original for m in self.moves})

    @property
    def replica_moves(self) -> int:
        """Replicas that must be copied to a broker that does not hold them now."""
        return sum(len(m.adding) for m in self.moves)

    @property
    def bytes_moved(self) -> int:
        return sum(len(m.adding) * m.size_bytes for m in self.moves)


@dataclass(frozen=True, slots=True)
class PlanJob:
    """One cluster to plan, as both engines take it: its snapshot and goal, the name it is
    reported under, where the snapshot came from, and the Parquet directory it was read from (the
    Spark engine reads its partitions table again with pyarrow to cut buckets, faster than turning
    the loaded snapshot back into a table)."""

    name: str
    source: str
    snapshot: ClusterSnapshot
    goal: Goal
    parquet: Path | None = None
