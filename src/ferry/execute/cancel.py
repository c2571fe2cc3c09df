"""Cancel in-flight moves (KIP-455): stop them at once and drop their throttles; not a rollback.

Every move in scope gets AlterPartitionReassignments with no target. Cancel is not a revert of
the whole history: the controller drops the replicas the move was *adding* and keeps the rest, so
a partition keeps any replica an earlier, re-targeted move had already brought in (it is a
removing replica of the move being cancelled) and may end with more replicas than its task began
with -- the outcome names those partitions. ``ferry rollback`` restores the original replicas.

On KRaft clusters the controller drops every adding replica, even one that has already joined the
ISR (``PartitionReassignmentRevert``); ferry cannot keep such a replica while stopping the others:
re-targeting to "originals + the joined replica" leaves KRaft's adding set unchanged (it ignores
an empty one), so the move would go on until the replicas still copying caught up.

Tasks of the cancelled moves (and pending tasks in scope, never submitted) become ``cancelled`` in
the journal (a submitted move found already at its target becomes ``done``), requests left
with nothing open and a move cancelled become ``cancelled``, and the throttle configs of the
touched requests are settled to what their remaining moves need (:func:`ferry.execute.sharing.settle`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ferry.errors import PreconditionError
from ferry.execute import sharing
from ferry.execute.journal import Journal
from ferry.execute.records import TaskRecord
from ferry.execute.states import OPEN_TASK_STATES, RequestState, TaskState
from ferry.kafka.admin import ClusterAdmin, OngoingReassignment
from ferry.model import TopicPartition

_LOOKS = 3
_LOOK_AGAIN_S = 1.0


@dataclass(frozen=True, slots=True)
class Scope:
    """Which moves to cancel: one request, a topic, a partition, or everything (``everything``).

    ``foreign`` (only with ``everything``) also cancels reassignments ferry did not start.
    """

    request: int | None = None
    topic: str | None = None
    partition: TopicPartition | None = None
    everything: bool = False
    foreign: bool = False

    def covers(self, task: TaskRecord) -> bool:
        if self.request is not None:
            return task.request_id == self.request
        if self.topic is not None:
            return task.tp.topic == self.topic
        if self.partition is not None:
            return task.tp == self.partition
        return self.everything


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a cancel did.

    Attributes:
        stopped: partitions whose in-flight move was stopped.
        kept: partitions left with more replicas than before the move (joined replicas kept),
            with their replicas now.
        pending: tasks in scope that were never submitted, now cancelled.
        foreign: reassignments ferry did not start that were cancelled (``--all --yes``).
        refused: partitions the controller would not cancel, with its reason.
        requests: requests the cancel ended (nothing of them left open).
        throttles: throttle configs written to drop the cancelled moves' entries.
        finished: partitions whose move had already reached its target: marked done, not
            cancelled.
    """

    stopped: tuple[TopicPartition, ...]
    kept: Mapping[TopicPartition, tuple[int, ...]]
    pending: int
    foreign: tuple[TopicPartition, ...]
    refused: Mapping[TopicPartition, str]
    requests: tuple[int, ...]
    throttles: int
    finished: tuple[TopicPartition, ...] = ()


def cancel(admin: ClusterAdmin, journal: Journal, scope: Scope) -> Outcome:
    """Cancel the moves in ``scope``.

    Raises:
        PreconditionError: nothing ferry knows of is in scope (unknown request, no open task).
        KafkaError: the cluster could not be reached.
    """
    if scope.request is not None:
        journal.request(scope.request)  # raises for an unknown id
    tasks = [t for t in journal.tasks(states=OPEN_TASK_STATES) if scope.covers(t)]
    ongoing = {r.tp: r for r in admin.list_reassignments()}
    ours = {t.tp for t in tasks if t.state is TaskState.SUBMITTED}
    ferrys = journal.moving_partitions()
    foreign = sorted(tp for tp in ongoing if tp not in ferrys) if scope.foreign else []
    if not tasks and not foreign:
        raise PreconditionError(f"nothing to cancel: no open ferry move {_describe(scope)}")
    moving = sorted(tp for tp in ours | set(foreign) if tp in ongoing)
    answers = admin.alter_reassignments(dict.fromkeys(moving)) if moving else {}
    refused = {tp: why for tp, why in answers.items() if why}
    finished = _reached_target(admin, tasks, ongoing, refused)
    done = set(journal.transition_if([t.id for t in finished], OPEN_TASK_STATES, TaskState.DONE))
    finished_tps = {t.tp for t in finished if t.id in done}
    refused = {tp: why for tp, why in refused.items() if tp not in finished_tps}
    rest = [t.id for t in tasks if t.id not in done]
    cancelled = set(journal.transition_if(rest, OPEN_TASK_STATES, TaskState.CANCELLED))
    touched = sorted({t.request_id for t in tasks if t.id in cancelled | done})
    # Throttles before the requests end: if the cluster refuses them now, the requests stay open
    # and 'ferry resume' (or their live executor) restores them, rather than nobody ever.
    written = sum(sharing.settle(admin, journal, rid) for rid in touched)
    ended = _end_requests(journal, touched)
    stopped = tuple(tp for tp in moving if tp not in refused and tp not in finished_tps)
    kept = _grown({tp: ongoing[tp] for tp in stopped}, {t.tp: len(t.original) for t in tasks})
    return Outcome(
        stopped=stopped,
        kept=kept,
        pending=sum(1 for t in tasks if t.state is TaskState.PENDING and t.id in cancelled),
        foreign=tuple(tp for tp in foreign if tp in stopped),
        refused=refused,
        requests=ended,
        throttles=written,
        finished=tuple(sorted(finished_tps)),
    )


def _reached_target(
    admin: ClusterAdmin,
    tasks: Sequence[TaskRecord],
    ongoing: Mapping[TopicPartition, OngoingReassignment],
    refused: Mapping[TopicPartition, str],
) -> list[TaskRecord]:
    """Submitted ``tasks`` not stopped (not in flight, or the controller found nothing to cancel)
    whose partition is on the task's target now.

    Such a move ended before the cancel: the journal must say done, not cancelled, or a later
    resume or rollback would take the partition for one still on its original replicas.
    """
    ended = [t for t in tasks if t.state is TaskState.SUBMITTED and (t.tp not in ongoing or t.tp in refused)]
    if not ended:
        return []
    reached: list[TaskRecord] = []
    # A broker that was just paused or restarted answers metadata from a cache still catching up:
    # one look may miss a move that finished, so the ones not at their target are looked at again.
    for attempt in range(_LOOKS):
        if attempt:
            time.sleep(_LOOK_AGAIN_S)
        current = {p.tp: p.replicas for p in admin.describe_partitions({t.tp.topic for t in ended})}
        reached += [t for t in ended if current.get(t.tp) == t.target]
        ended = [t for t in ended if current.get(t.tp) != t.target]
        if not ended:
            break
    return reached


def _grown(
    stopped: Mapping[TopicPartition, OngoingReassignment], before: Mapping[TopicPartition, int]
) -> dict[TopicPartition, tuple[int, ...]]:
    """Stopped partitions of ferry's tasks now holding more replicas than their task started with.

    A cancelled move keeps its replicas minus the ones it was adding (KRaft's revert, pinned by the
    admin contract tests). Worked out from the listing taken before the cancel, not read back: a
    broker's metadata may not show the cancel yet when asked right after it.
    """
    after = {
        tp: tuple(b for b in move.replicas if b not in move.adding_replicas)
        for tp, move in stopped.items()
        if tp in before
    }
    return {tp: replicas for tp, replicas in after.items() if len(replicas) > before[tp]}


def _end_requests(journal: Journal, request_ids: Sequence[int]) -> tuple[int, ...]:
    """Mark ``cancelled`` every request in ``request_ids`` with no open task left and a cancelled one.

    A request all of whose moves had reached their targets was not cancelled: it stays open for
    its executor (or ``ferry resume``) to end as done, with its preferred-leader election.
    """
    ended = []
    for rid in request_ids:
        if journal.tasks(rid, OPEN_TASK_STATES) or journal.request(rid).state.is_final:
            continue
        if journal.tasks(rid, [TaskState.CANCELLED]):
            journal.set_request_state(rid, RequestState.CANCELLED, note="cancelled by 'ferry cancel'")
            ended.append(rid)
    return tuple(ended)


def _describe(scope: Scope) -> str:
    if scope.request is not None:
        return f"in request {scope.request}"
    if scope.topic is not None:
        return f"of topic {scope.topic}"
    if scope.partition is not None:
        return f"of partition {scope.partition}"
    return "in the journal and no reassignment in flight"
