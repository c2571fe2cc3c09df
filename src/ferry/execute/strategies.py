"""Ordering strategies: which pending moves the batcher considers first.

A strategy is a *sort key* over a move; ``--order a,b`` chains keys the way cruise-control chains
its ``ReplicaMovementStrategy``s: ``b`` only breaks ties left by ``a``. The topic-partition is always
the last key, so an order is total and the same plan is always executed in the same order.

Strategies:
  ``smallest-first``   fewest bytes to copy first: many partitions finish early, slots free up fast.
  ``largest-first``    most bytes first: the long tail starts early, which can shorten the whole run.
  ``leader-first``     moves that change the preferred leader first (leadership settles early).
  ``fewest-replicas``  fewest adding replicas first.
  ``by-topic``         topic by topic, partitions in order (finishes one topic before the next).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from ferry.errors import UsageError
from ferry.model import TopicPartition


class MoveLike(Protocol):
    """What ordering and batching need of a move: a Move, a journal TaskRecord..."""

    @property
    def tp(self) -> TopicPartition: ...

    @property
    def original(self) -> tuple[int, ...]: ...

    @property
    def target(self) -> tuple[int, ...]: ...

    @property
    def adding(self) -> tuple[int, ...]: ...

    @property
    def removing(self) -> tuple[int, ...]: ...

    @property
    def size_bytes(self) -> int: ...

    @property
    def named_dirs(self) -> dict[int, str]: ...


M = TypeVar("M", bound=MoveLike)
SortKey = Callable[[MoveLike], tuple[object, ...]]


def _adding(move: MoveLike) -> int:
    return len(move.adding)


STRATEGIES: dict[str, SortKey] = {
    "smallest-first": lambda m: (m.size_bytes * _adding(m),),
    "largest-first": lambda m: (-m.size_bytes * _adding(m),),
    "leader-first": lambda m: (0 if m.original[:1] != m.target[:1] else 1,),
    "fewest-replicas": lambda m: (_adding(m),),
    "by-topic": lambda m: (m.tp.topic, m.tp.partition),
}

DEFAULT_ORDER = ("smallest-first",)


@dataclass(frozen=True, slots=True)
class Ordering:
    """A chain of named strategies; use :meth:`sort` or :meth:`key`."""

    names: tuple[str, ...] = DEFAULT_ORDER

    def __post_init__(self) -> None:
        unknown = [n for n in self.names if n not in STRATEGIES]
        if unknown:
            raise UsageError(
                f"unknown --order strategy {unknown[0]!r}",
                hint=f"choose from {', '.join(sorted(STRATEGIES))}, comma-separated",
            )

    def key(self, move: MoveLike) -> tuple[object, ...]:
        """The chained sort key; the topic-partition breaks the last tie."""
        parts: list[object] = []
        for name in self.names:
            parts.extend(STRATEGIES[name](move))
        parts.append(move.tp)
        return tuple(parts)

    def sort(self, moves: Sequence[M]) -> list[M]:
        """``moves`` in execution order (a new list)."""
        return sorted(moves, key=self.key)

    def __str__(self) -> str:
        return ",".join(self.names)


def parse_order(text: str) -> Ordering:
    """``"largest-first,by-topic"`` -> Ordering.

    Raises:
        UsageError: an empty list, a repeated or an unknown strategy name.
    """
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names:
        raise UsageError("--order needs at least one strategy")
    if len(set(names)) != len(names):
        raise UsageError(f"--order names a strategy twice: {text}")
    return Ordering(names)
