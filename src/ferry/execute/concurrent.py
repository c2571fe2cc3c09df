"""Where one executor's submission meets other ferry processes: re-targets and concurrent cancels."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ferry.execute.journal import Journal
from ferry.execute.records import TaskRecord
from ferry.execute.states import TaskState
from ferry.kafka.admin import ClusterAdmin, OngoingReassignment
from ferry.model import TopicPartition

LOOKS = 3
"""How many times to look for a move's end before calling its partition not at its target."""
LOOK_AGAIN_S = 1.0

LATE_ARRIVAL_S = 60.0
"""How long after a submission that failed on the way (a broker paused, a timeout) its request may
still reach the controller: a broker resumed after a pause processes what it had received."""


@dataclass(frozen=True, slots=True)
class Withdrawn:
    """What :func:`withdraw` did: moves stopped, and partitions found at their target (amended done)."""

    stopped: tuple[TopicPartition, ...]
    finished: tuple[TopicPartition, ...]


def supersede_earlier(journal: Journal, batch: Sequence[TaskRecord]) -> None:
    """Link the tasks of earlier requests whose moving partitions ``batch`` re-targets."""
    for task in batch:
        for earlier in journal.active_tasks(task.tp):
            # Never a later request's move: recording it superseded our pending task already.
            if earlier.id < task.id:
                journal.supersede(earlier.id, task.id)


def withdraw_cancelled(admin: ClusterAdmin, journal: Journal, batch: Sequence[TaskRecord]) -> None:
    """Withdraw moves a concurrent 'ferry cancel' cancelled between our claim and our submit."""
    withdraw(admin, journal, [t for t in batch if is_cancelled(journal.task(t.id))])


def withdraw(admin: ClusterAdmin, journal: Journal, tasks: Sequence[TaskRecord]) -> Withdrawn:
    """Stop the moves of cancelled ``tasks`` that reached the controller all the same.

    The other half of the hand-over with 'ferry cancel': the executor marks a task submitted, sends
    it, then reads the journal; a cancel marks the task cancelled, then looks at the cluster. Either
    the executor reads ``cancelled`` or the cancel finds the move, whichever side calls this. A move
    that finished before anyone could stop it (a near-empty partition) leaves its partition on the
    target: the task is amended to done, so the journal says where the partition is.
    """
    if not tasks:
        return Withdrawn((), ())
    ongoing = {r.tp: r for r in admin.list_reassignments()}
    in_flight = {t.tp: None for t in tasks if _moving_to(ongoing, t)}
    answers = admin.alter_reassignments(in_flight) if in_flight else {}
    stopped = tuple(tp for tp in in_flight if not answers.get(tp))
    reached = at_target(admin, [t for t in tasks if t.tp not in stopped], LOOKS)
    amended = set(journal.correct_to_done([t.id for t in reached]))
    return Withdrawn(stopped, tuple(t.tp for t in reached if t.id in amended))


def at_target(admin: ClusterAdmin, tasks: Sequence[TaskRecord], looks: int) -> list[TaskRecord]:
    """The ``tasks`` whose partition is on the task's target, looking up to ``looks`` times.

    A broker that was just paused or restarted answers metadata from a cache still catching up:
    one look may miss a move that finished, so the ones not at their target are looked at again.
    """
    reached: list[TaskRecord] = []
    for attempt in range(looks):
        if not tasks:
            break
        if attempt:
            time.sleep(LOOK_AGAIN_S)
        current = {p.tp: p.replicas for p in admin.describe_partitions({t.tp.topic for t in tasks})}
        reached += [t for t in tasks if current.get(t.tp) == t.target]
        tasks = [t for t in tasks if current.get(t.tp) != t.target]
    return reached


def is_cancelled(task: TaskRecord) -> bool:
    """Cancelled by 'ferry cancel' (not superseded by a later request, which owns the partition now)."""
    return task.state is TaskState.CANCELLED and task.superseded_by is None


def _moving_to(ongoing: Mapping[TopicPartition, OngoingReassignment], task: TaskRecord) -> bool:
    """Whether ``task``'s move (any of its single-replica steps) is in flight."""
    moving = ongoing.get(task.tp)
    return moving is not None and task.goes_to(moving.target)


def withdraw_late_arrivals(
    admin: ClusterAdmin,
    journal: Journal,
    in_doubt: dict[int, float],
    ongoing: Mapping[TopicPartition, OngoingReassignment],
    clock: Callable[[], float],
) -> None:
    """Cancel moves a concurrent 'ferry cancel' ended whose submission reached the controller after it.

    ``in_doubt`` maps the tasks whose submission failed on the way to when it failed; a task leaves
    it once it has ended otherwise, or :data:`LATE_ARRIVAL_S` after the failure. Without this the
    late request would start (and finish) a move the journal calls cancelled.
    """
    if not in_doubt:
        return
    now, watched = clock(), list[TaskRecord]()
    for task_id, failed_at in list(in_doubt.items()):
        task = journal.task(task_id)
        if (task.state.is_final and not is_cancelled(task)) or now - failed_at >= LATE_ARRIVAL_S:
            del in_doubt[task_id]
        elif is_cancelled(task):
            watched.append(task)
    late = {t.tp: None for t in watched if _moving_to(ongoing, t)}
    if late:
        admin.alter_reassignments(late)
    # Arrived and finished between two polls: nothing left to stop, but the journal must say done.
    reached = at_target(admin, [t for t in watched if t.tp not in late], looks=1)
    for task_id in journal.correct_to_done([t.id for t in reached]):
        del in_doubt[task_id]
