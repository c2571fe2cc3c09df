"""Where one executor's submission meets other ferry processes: re-targets and concurrent cancels."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ferry.execute.journal import Journal
from ferry.execute.records import TaskRecord
from ferry.execute.states import TaskState
from ferry.kafka.admin import ClusterAdmin, OngoingReassignment
from ferry.model import TopicPartition

LATE_ARRIVAL_S = 60.0
"""How long after a submission that failed on the way (a broker paused, a timeout) its request may
still reach the controller: a broker resumed after a pause processes what it had received."""


def supersede_earlier(journal: Journal, batch: Sequence[TaskRecord]) -> None:
    """Link the tasks of earlier requests whose moving partitions ``batch`` re-targets."""
    for task in batch:
        for earlier in journal.active_tasks(task.tp):
            # Never a later request's move: recording it superseded our pending task already.
            if earlier.id < task.id:
                journal.supersede(earlier.id, task.id)


def withdraw_cancelled(admin: ClusterAdmin, journal: Journal, batch: Sequence[TaskRecord]) -> None:
    """Withdraw moves a concurrent 'ferry cancel' cancelled between our claim and our submit."""
    states = {t.id: journal.task(t.id).state for t in batch}
    withdrawn = {t.tp: None for t in batch if states[t.id] is TaskState.CANCELLED}
    if withdrawn:
        admin.alter_reassignments(withdrawn)


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
    now, late = clock(), dict[TopicPartition, None]()
    for task_id, failed_at in list(in_doubt.items()):
        task = journal.task(task_id)
        moving = ongoing.get(task.tp)
        cancelled = task.state is TaskState.CANCELLED and task.superseded_by is None
        if cancelled and moving is not None and moving.target == task.target:
            late[task.tp] = None
        if (task.state.is_final and not cancelled) or now - failed_at >= LATE_ARRIVAL_S:
            del in_doubt[task_id]
    if late:
        admin.alter_reassignments(late)
