"""Safety checks before every submission (execute, rollback, re-target) and before a live plan is
written: refuse what would hurt (pure).

Three ways a correct-looking move hurts a cluster:

* **below min.insync.replicas**: Kafka removes the old replicas only once every target replica
  is in the ISR, so after the removal step a partition has exactly ``len(target)`` in-sync
  replicas at best. A target shorter than the topic's ``min.insync.replicas`` makes every
  ``acks=all`` producer fail from then on.
* **onto a broker that is not alive**: an adding replica on a fenced or stopped broker can never
  catch up, so the reassignment never ends and holds its throttle and a move slot forever.
* **onto a cordoned broker**: an operator cordoned every log dir of it (Kafka 4.3, KIP-1066) so that
  it takes no new partitions, most often to empty it; Kafka 4.3.1 itself still accepts the move.
* **stale plan**: the partition's replicas changed since the plan was made (someone else moved it,
  or a broker was replaced), so the plan's target was computed from a layout that no longer exists.
  The same replicas in another order are not stale (:func:`reordered`): a cancelled KIP-455
  reassignment puts the partition's replicas back in the order KRaft keeps, not the one it had.

Each check yields one :class:`Refusal` per partition; the caller refuses the whole submission
(nothing is sent) unless the operator forces it with a reason, which the journal keeps.
``ferry plan --bootstrap-server`` runs the same checks on the plan it made from the live cluster
and refuses to write it (see :mod:`ferry.cli.commands.plan`): a plan that execute would refuse is
better caught while the operator is still planning.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from ferry.errors import PreconditionError, and_more
from ferry.execute.strategies import MoveLike
from ferry.model import ClusterSnapshot, TopicPartition


@dataclass(frozen=True, slots=True)
class Refusal:
    """One partition a submission must not touch, and why."""

    tp: TopicPartition
    reason: str

    def __str__(self) -> str:
        return f"{self.tp}: {self.reason}"


def check(
    moves: Iterable[MoveLike],
    snapshot: ClusterSnapshot,
    min_insync: Mapping[str, int],
    originals: Mapping[TopicPartition, Sequence[int]] | None = None,
) -> tuple[Refusal, ...]:
    """Every refusal for ``moves`` on the cluster ``snapshot`` describes, in partition order.

    Args:
        moves: what would be submitted (``original`` is the partition's current replicas).
        snapshot: the live cluster: brokers (with ``alive``) and partitions.
        min_insync: effective ``min.insync.replicas`` per topic (1 when absent).
        originals: the replicas the plan was made from, when known (stale-plan check).
    """
    alive = {b.id for b in snapshot.brokers if b.alive}
    cordoned = {b.id for b in snapshot.brokers if b.cordoned}
    refusals: list[Refusal] = []
    for move in sorted(moves, key=lambda m: m.tp):
        refusals.extend(_refusals(move, alive, cordoned, min_insync.get(move.tp.topic, 1), originals))
    return tuple(refusals)


def reordered(
    moves: Iterable[MoveLike], originals: Mapping[TopicPartition, Sequence[int]]
) -> tuple[TopicPartition, ...]:
    """The partitions whose replicas are those the plan was made from in another order."""
    return tuple(
        m.tp
        for m in sorted(moves, key=lambda m: m.tp)
        if m.tp in originals
        and tuple(originals[m.tp]) != tuple(m.original)
        and sorted(originals[m.tp]) == sorted(m.original)
    )


def _refusals(
    move: MoveLike,
    alive: set[int],
    cordoned: set[int],
    min_isr: int,
    originals: Mapping[TopicPartition, Sequence[int]] | None,
) -> Iterator[Refusal]:
    dead = [b for b in move.adding if b not in alive]
    if dead:
        yield Refusal(move.tp, f"target broker(s) {_ids(dead)} not alive: the move could never finish")
    closed = [b for b in move.adding if b in cordoned]
    if closed:
        yield Refusal(move.tp, f"target broker(s) {_ids(closed)} cordoned: they take no new partitions")
    if len(move.target) < min_isr:
        yield Refusal(
            move.tp,
            f"{len(move.target)} replica(s) after the move, below min.insync.replicas={min_isr}",
        )
    if originals is not None and move.tp in originals:
        planned_from = tuple(originals[move.tp])
        if sorted(planned_from) != sorted(move.original):
            yield Refusal(
                move.tp,
                f"stale plan: replicas are {list(move.original)} now, the plan was made from "
                f"{list(planned_from)}",
            )


def _ids(brokers: Sequence[int]) -> str:
    return ",".join(str(b) for b in brokers)


def enforce(refusals: Sequence[Refusal], force: str | None) -> None:
    """Raise unless there is nothing to refuse or the operator forced it with a reason.

    Raises:
        PreconditionError: one line naming the first refusal and how many there are.
    """
    if not refusals or force:
        return
    raise PreconditionError(
        f"refusing to submit: {summary(refusals)}; nothing was submitted",
        hint="fix the plan, or pass --force REASON to submit anyway (the reason is journalled)",
    )


def summary(refusals: Sequence[Refusal]) -> str:
    """The first refusal and how many more there are, for a one-line message (one refusal at least)."""
    return and_more(refusals)
