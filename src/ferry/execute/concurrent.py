"""Where one executor's submission meets other ferry processes: re-targets and concurrent cancels."""

from __future__ import annotations

from collections.abc import Sequence

from ferry.execute.journal import Journal
from ferry.execute.records import TaskRecord
from ferry.execute.states import TaskState
from ferry.kafka.admin import ClusterAdmin


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
