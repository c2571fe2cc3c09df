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

A move that names log dirs (JBOD) may be copying a replica between the dirs of its broker once its
reassignment has ended: that copy is stopped by naming the replica's current dir again, and the
replica stays in the dir it was in.

Tasks of the cancelled moves (and pending tasks in scope, never submitted) become ``cancelled`` in
the journal (a submitted move found already at its target becomes ``done``). A task an executor
claims while the cancel runs is marked first and looked for on the cluster after
(:func:`ferry.execute.concurrent.withdraw`), so its move is stopped wherever it is sent. Requests left
with nothing open and a move cancelled become ``cancelled``, and the throttle configs of the
touched requests are settled to what their remaining moves need (:func:`ferry.execute.sharing.settle`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ferry.errors import PreconditionError
from ferry.execute import concurrent, dir_moves, sharing
from ferry.execute.journal import Journal
from ferry.execute.records import TaskRecord
from ferry.execute.states import OPEN_TASK_STATES, RequestState, TaskState
from ferry.kafka.admin import ClusterAdmin, OngoingReassignment
from ferry.model import TopicPartition


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


def cancel(
    admin: ClusterAdmin, journal: Journal, scope: Scope, wait: Callable[[float], None] = time.sleep
) -> Outcome:
    """Cancel the moves in ``scope``; ``wait`` waits out throttle writes that may land (:func:`_settle`).

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
    ended = [t for t in tasks if t.state is TaskState.SUBMITTED and (t.tp not in ongoing or t.tp in refused)]
    # A move naming dirs whose reassignment ended may still be copying between a broker's dirs.
    placing = [t for t in ended if t.named_dirs and t.tp not in refused]
    placing_ids = {t.id for t in placing}
    ended = [t for t in ended if t.id not in placing_ids]
    finished = concurrent.at_target(admin, ended, concurrent.LOOKS)
    done = set(journal.transition_if([t.id for t in finished], OPEN_TASK_STATES, TaskState.DONE))
    marked = _mark_cancelled(journal, [t for t in tasks if t.id not in done])
    # Marked first, then stopped: an executor starts a copy between dirs, then reads the journal
    # (dispatch), so either it reads 'cancelled' or this finds its copy. Stopped first, the
    # executor's poll in between would start the copy again.
    placed, halted = dir_moves.stop(admin, [t for t in placing if t.id in marked.submitted])
    done |= set(journal.correct_to_done([t.id for t in placed]))
    stopped = {tp for tp in moving if tp not in refused} | {t.tp for t in halted}
    # Marked cancelled but not stopped here: an executor may be sending them right now (see
    # concurrent.withdraw), so they are looked for on the cluster only after the marking.
    late = concurrent.withdraw(
        admin,
        journal,
        [t for t in tasks if t.id in marked.submitted and t.tp not in stopped and t.id not in placing_ids],
    )
    finished_tps = {t.tp for t in [*finished, *placed] if t.id in done} | set(late.finished)
    touched = sorted({t.request_id for t in tasks if t.id in done | marked.pending | marked.submitted})
    # Throttles before the requests end: if the cluster refuses them now, the requests stay open
    # and 'ferry resume' (or their live executor) restores them, rather than nobody ever.
    written = _settle(admin, journal, touched, wait)
    stopped = (stopped | set(late.stopped)) - finished_tps
    return Outcome(
        stopped=tuple(sorted(stopped)),
        kept=_grown(
            {tp: ongoing[tp] for tp in stopped if tp in ongoing}, {t.tp: len(t.original) for t in tasks}
        ),
        pending=len(marked.pending),
        foreign=tuple(tp for tp in foreign if tp in stopped),
        refused={tp: why for tp, why in refused.items() if tp not in finished_tps},
        requests=_end_requests(journal, touched),
        throttles=written,
        finished=tuple(sorted(finished_tps)),
    )


def _settle(
    admin: ClusterAdmin, journal: Journal, requests: Sequence[int], wait: Callable[[float], None]
) -> int:
    """Settle the throttles of ``requests``, and again from the cluster's values once no write of
    this cancel that went unanswered can land; how many configs were written."""
    written = sum(sharing.settle(admin, journal, rid) for rid in requests)
    if (unsettled := admin.config_writes_settle_in()) > 0:
        wait(unsettled)
        written += sum(sharing.settle(admin, journal, rid, landed=True) for rid in requests)
    return written


@dataclass(frozen=True, slots=True)
class _Marked:
    pending: set[int]  # never submitted
    submitted: set[int]  # submitted, by the time the journal marked them


def _mark_cancelled(journal: Journal, tasks: Sequence[TaskRecord]) -> _Marked:
    """Mark ``tasks`` cancelled, telling apart those an executor claimed since they were read."""
    pending = journal.transition_if(
        [t.id for t in tasks if t.state is TaskState.PENDING], TaskState.PENDING, TaskState.CANCELLED
    )
    submitted = journal.transition_if(
        [t.id for t in tasks if t.id not in pending], TaskState.SUBMITTED, TaskState.CANCELLED
    )
    return _Marked(set(pending), set(submitted))


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
        if journal.tasks(rid, OPEN_TASK_STATES) or not journal.tasks(rid, [TaskState.CANCELLED]):
            continue
        # Its executor may be ending it at this moment: whoever writes first says how it ended.
        if journal.end_request_unless_final(rid, RequestState.CANCELLED, note="cancelled by 'ferry cancel'"):
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
