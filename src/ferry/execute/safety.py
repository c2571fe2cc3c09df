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
* **into a log dir that cannot take it** (JBOD): a dir the broker does not have, an offline or
  cordoned one, a broker with an offline dir (it creates no future log, and a failed disk is no
  place for new data), or a dir without room for every replica headed there plus a margin of
  :data:`~ferry.model.cluster.DIR_MARGIN` of its size (the copy keeps the source until it has caught up).
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
from ferry.model import ClusterSnapshot, LogDir, TopicPartition
from ferry.model.cluster import DIR_MARGIN


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
    ordered = sorted(moves, key=lambda m: m.tp)
    refusals: list[Refusal] = []
    for move in ordered:
        refusals.extend(_refusals(move, alive, cordoned, min_insync.get(move.tp.topic, 1), originals))
    refusals.extend(_dir_refusals(ordered, snapshot))
    return tuple(sorted(refusals, key=lambda r: r.tp))


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


def _dir_refusals(moves: Sequence[MoveLike], snapshot: ClusterSnapshot) -> Iterator[Refusal]:
    """The refusals of the moves that put replicas into dirs (named ones, or any dir of a broker
    they add a replica to)."""
    brokers = {b.id: b for b in snapshot.brokers}
    incoming: dict[tuple[int, str], list[MoveLike]] = {}
    for move in moves:
        named = move.named_dirs
        for broker_id in sorted(set(named) | set(move.adding)):
            broker = brokers.get(broker_id)
            if broker is None or not broker.log_dirs:
                continue  # dirs unknown: Kafka's own answer decides
            path = named.get(broker_id)
            found = broker.log_dir(path) if path is not None else None
            if any(d.offline for d in broker.log_dirs):
                yield Refusal(move.tp, f"broker {broker_id} has an offline log dir: it takes no new replica")
            elif path is None:
                continue
            elif found is None:
                yield Refusal(move.tp, f"log dir {path} is not a dir of broker {broker_id}")
            elif _current_dir(snapshot, move.tp, broker_id) == path:
                continue  # already there: nothing to copy
            elif found.cordoned:
                yield Refusal(
                    move.tp, f"log dir {path} of broker {broker_id} is cordoned: it takes no new replicas"
                )
            else:
                incoming.setdefault((broker_id, path), []).append(move)
    for (broker_id, path), headed in sorted(incoming.items()):
        yield from _room(brokers[broker_id].log_dir(path), broker_id, headed)


def _room(found: LogDir | None, broker_id: int, headed: Sequence[MoveLike]) -> Iterator[Refusal]:
    spare = found.room if found is not None else None
    if found is None or spare is None:
        return
    needed = sum(m.size_bytes for m in headed)
    if needed > spare:
        why = (
            f"log dir {found.path} of broker {broker_id} has room for {max(spare, 0)} bytes (keeping "
            f"{DIR_MARGIN:.0%} free), {needed} bytes of replicas are headed there"
        )
        yield from (Refusal(m.tp, why) for m in headed)


def _current_dir(snapshot: ClusterSnapshot, tp: TopicPartition, broker: int) -> str | None:
    try:
        return snapshot.partition(tp).dir_on(broker)
    except KeyError:
        return None


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
