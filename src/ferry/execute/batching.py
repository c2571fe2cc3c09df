"""Choose the next moves to submit under the concurrency limits (pure).

Counting rule (``--max-moves-per-broker N``): a move counts once against *every broker it adds a
replica to or removes a replica from*. Adding brokers take the write load (network in, disk);
removing brokers are where the data comes from while the old leader serves it, and they delete
logs at the end; so both sides are busy. Brokers that keep their replica are not counted: their
load does not change (the leader may serve the copy, but the leader throttle bounds that, and
counting it would let one hot leader stall the whole plan). ``--max-moves N`` caps ferry's own
moves in flight in the whole cluster. Reassignments in flight that ferry did not start
(``--additional``) count against the per-broker limit of every broker they touch, so ferry never
piles onto a busy broker; they do not count against ``--max-moves``, so one that never ends (onto
a broker that is down) holds back only the moves that share a broker with it.

The batcher walks the pending moves in their execution order and takes each one that still fits;
a move that does not fit is skipped for now, not waited for, so one busy broker does not block
moves elsewhere (cruise-control does the same). When nothing is in flight, the first pending move
always fits (every limit is at least 1), so an execution always makes progress.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from ferry.errors import UsageError
from ferry.execute.strategies import MoveLike

M = TypeVar("M", bound=MoveLike)

DEFAULT_MAX_MOVES_PER_BROKER = 5


@dataclass(frozen=True, slots=True)
class Limits:
    """Concurrency limits; ``max_moves`` None means no cluster-wide cap."""

    max_moves_per_broker: int = DEFAULT_MAX_MOVES_PER_BROKER
    max_moves: int | None = None

    def __post_init__(self) -> None:
        if self.max_moves_per_broker < 1:
            raise UsageError("--max-moves-per-broker must be at least 1")
        if self.max_moves is not None and self.max_moves < 1:
            raise UsageError("--max-moves must be at least 1")


@dataclass(frozen=True, slots=True)
class InFlight:
    """A move occupying slots: the brokers it adds to and removes from."""

    adding: tuple[int, ...]
    removing: tuple[int, ...]


def busy_brokers(move: MoveLike) -> frozenset[int]:
    """The brokers a move counts against: those gaining or losing a replica."""
    original, target = set(move.original), set(move.target)
    return frozenset(original ^ target)


def in_flight_of(moves: Iterable[MoveLike]) -> tuple[InFlight, ...]:
    """Ferry's own submitted moves as :class:`InFlight` entries."""
    return tuple(InFlight(m.adding, m.removing) for m in moves)


def broker_load(in_flight: Iterable[InFlight]) -> Counter[int]:
    """Moves in flight per broker, by the counting rule above."""
    load: Counter[int] = Counter()
    for move in in_flight:
        load.update(set(move.adding) | set(move.removing))
    return load


def next_batch(
    pending: Sequence[M],
    in_flight: Sequence[InFlight],
    limits: Limits,
    foreign: Sequence[InFlight] = (),
    caps: Mapping[int, int] | None = None,
) -> list[M]:
    """The pending moves (in execution order) that fit next to those in flight under ``limits``.

    Args:
        pending: moves not yet submitted, already in execution order.
        in_flight: ferry's moves submitted and not finished.
        limits: the concurrency limits.
        foreign: reassignments in flight that ferry did not start (per-broker limit only).
        caps: per-broker limits below ``limits.max_moves_per_broker`` (``--pace auto``).

    Returns:
        A subsequence of ``pending``; adding it to what is in flight keeps every limit.
    """
    load = broker_load([*in_flight, *foreign])
    total = len(in_flight)
    caps = caps or {}
    most = limits.max_moves_per_broker
    chosen: list[M] = []
    for move in pending:
        if limits.max_moves is not None and total >= limits.max_moves:
            break
        brokers = busy_brokers(move)
        if any(load[b] >= min(most, caps.get(b, most)) for b in brokers):
            continue
        load.update(brokers)
        total += 1
        chosen.append(move)
    return chosen


def held_by_foreign(
    pending: Sequence[M],
    in_flight: Sequence[InFlight],
    limits: Limits,
    foreign: Sequence[InFlight],
    chosen: Sequence[M],
) -> tuple[list[M], frozenset[int]]:
    """The pending moves that wait only for ``foreign`` reassignments, and the brokers they wait on.

    A move waits for foreign reassignments when it stays out of the next batch with them but
    would go in without them; it waits on those of its brokers that foreign reassignments keep
    busy.

    ``chosen`` is :func:`next_batch` of the same arguments: the poll has it already.

    Returns:
        The waiting moves (in ``pending``'s order) and the brokers where they wait.
    """
    if not foreign:
        return [], frozenset()
    taken = {id(m) for m in chosen}
    waiting = [m for m in next_batch(pending, in_flight, limits) if id(m) not in taken]
    busy = broker_load(foreign)
    return waiting, frozenset(b for m in waiting for b in busy_brokers(m) if busy[b])
