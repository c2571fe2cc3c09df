"""Roll back (KIP-236): a plan that restores the original replicas of every partition a request touched.

The originals are those the journal recorded at submission (or, for work started by other tools, a
rollback JSON). A rollback is an ordinary request of its own -- throttled, batched, tracked, with
its own id and ``origin_request`` pointing at the request it undoes -- so it is as safe as the move
it undoes and can itself be cancelled or rolled back.

A partition is skipped, and reported, when rolling it back would take it offline: none of its
original replicas can hold its data (each is either out of the ISR or on a broker that is down).
KIP-236's exception: when every original *and* every current replica is offline, the partition is
offline already and nothing can be lost, so it is rolled back anyway.

A request whose moves named log dirs (JBOD) recorded the dir each replica was in: the rollback
names those dirs again, so replicas go back into the dirs they came from.

A partition still moving is rolled back by re-targeting its move (the in-flight replicas are
dropped without waiting for them); pending tasks of the request are cancelled first, so a live
executor of that request submits nothing more.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ferry.kafka.snapshot import LiveSnapshot
from ferry.model import Move, PartitionState, Plan, TopicPartition
from ferry.model.plan import ANY_DIR


@dataclass(frozen=True, slots=True)
class RollbackPlan:
    """What a rollback will move, what it skips (and why), and how many are back already."""

    plan: Plan
    skipped: Mapping[TopicPartition, str]
    unchanged: int
    offline: tuple[TopicPartition, ...]
    """Partitions rolled back under KIP-236's exception (all original and current replicas down)."""


def plan_rollback(
    originals: Mapping[TopicPartition, Sequence[int]],
    live: LiveSnapshot,
    dirs: Mapping[TopicPartition, Mapping[int, str]] | None = None,
) -> RollbackPlan:
    """The moves back to ``originals`` from the cluster ``live`` describes.

    Args:
        originals: the replicas to restore, per partition.
        live: the cluster now (replicas, ISR, brokers alive, reassignments in flight).
        dirs: the log dir to restore for replicas of the originals, per partition and broker
            (JBOD; the moves name them, and a partition counts as back only once they are).
    """
    alive = {b.id for b in live.snapshot.brokers if b.alive}
    states = {p.tp: p for p in live.snapshot.partitions}
    moves: list[Move] = []
    skipped: dict[TopicPartition, str] = {}
    offline: list[TopicPartition] = []
    unchanged = 0
    for tp, original in sorted(originals.items()):
        state = states.get(tp)
        if state is None:
            skipped[tp] = "the partition no longer exists"
            continue
        moving = live.reassignments.get(tp)
        current = state.replicas
        wanted = {b: d for b, d in (dirs or {}).get(tp, {}).items() if b in original}
        in_place = all(state.dir_on(b) == d for b, d in wanted.items())
        if moving is None and current == tuple(original) and in_place:
            unchanged += 1
            continue
        everything_down = not (set(original) | set(current)) & alive
        if not everything_down and not _holdable(original, state, alive):
            skipped[tp] = (
                f"none of the original replicas {list(original)} is in the ISR or alive to copy it: "
                "rolling back would take the partition offline"
            )
            continue
        if everything_down:
            offline.append(tp)
        start = tuple(b for b in current if moving is None or b not in moving.adding_replicas)
        named = tuple(wanted.get(b, ANY_DIR) for b in original) if wanted else None
        moves.append(Move(tp, start, tuple(original), state.size_bytes or 0, named))
    return RollbackPlan(Plan.of(moves), skipped, unchanged, tuple(offline))


def _holdable(original: Iterable[int], state: PartitionState, alive: set[int]) -> bool:
    """Whether some original replica can hold the data: alive, and in the ISR or a fresh copy.

    A replica of the partition that is out of the ISR does not count (it lags, or its broker
    is down: Kafka keeps a dead broker as the last ISR member, so ``alive`` is checked too).
    """
    isr = set(state.isr if state.isr is not None else state.replicas)
    return any(b in alive and (b in isr or b not in state.replicas) for b in original)
