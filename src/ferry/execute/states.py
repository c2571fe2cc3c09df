"""Task and request states, and the tables of transitions allowed between them.

Every partition of a request is one *task*. Its life (cruise-control's ``ExecutionTask``)::

    pending ──submit──▶ submitted ──target reached──▶ done
       │                    │
       │                    ├──cancelled / re-targeted by a later request──▶ cancelled
       │                    └──broker rejected it / partition vanished──────▶ failed
       ├──cancel before submission──▶ cancelled
       └──refused before submission (stale, unsafe)──▶ failed

``done``, ``cancelled`` and ``failed`` are final: a task is never revived. Work that has to be done
again (a resumed run re-submitting, a rollback, a re-target) is a *new* task in a new request; the
journal links them, so the history of a partition stays readable.

A *request* (one ``ferry execute`` or ``ferry rollback``)::

    recorded ──▶ running ──▶ done | cancelled | failed
                    │  ▲
                    ▼  │
                interrupted  (the executor stopped, e.g. Ctrl-C or a crash found by resume)

``recorded`` means the intent is durable and nothing has been submitted yet, so a crash right after
recording leaves nothing on the cluster to clean up.

The tables are data, not code, so tests can enumerate them and the journal enforces them in one place.
"""

from __future__ import annotations

from enum import StrEnum

from ferry.errors import FerryError


class TaskState(StrEnum):
    """The state of one partition's move within a request."""

    PENDING = "pending"
    SUBMITTED = "submitted"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"

    @property
    def is_final(self) -> bool:
        return not TASK_TRANSITIONS[self]


class RequestState(StrEnum):
    """The state of a whole request."""

    RECORDED = "recorded"
    RUNNING = "running"
    INTERRUPTED = "interrupted"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"

    @property
    def is_final(self) -> bool:
        return not REQUEST_TRANSITIONS[self]


TASK_TRANSITIONS: dict[TaskState, frozenset[TaskState]] = {
    TaskState.PENDING: frozenset({TaskState.SUBMITTED, TaskState.CANCELLED, TaskState.FAILED}),
    TaskState.SUBMITTED: frozenset({TaskState.DONE, TaskState.CANCELLED, TaskState.FAILED}),
    TaskState.DONE: frozenset(),
    TaskState.CANCELLED: frozenset(),
    TaskState.FAILED: frozenset(),
}

TASK_CORRECTIONS: frozenset[tuple[TaskState, TaskState]] = frozenset({(TaskState.CANCELLED, TaskState.DONE)})
"""The one amendment of a final state: a task marked cancelled whose move is found at its target
after all (a cancel raced an executor's submission of a move that finished at once). The journal
must say where the partition is; the task log keeps both steps."""

OPEN_TASK_STATES = (TaskState.PENDING, TaskState.SUBMITTED)
"""Tasks not yet final: still to be submitted, or in flight."""

REQUEST_TRANSITIONS: dict[RequestState, frozenset[RequestState]] = {
    # A request recorded but never started (its executor died first) can still be cancelled/failed.
    RequestState.RECORDED: frozenset(
        {RequestState.RUNNING, RequestState.CANCELLED, RequestState.FAILED, RequestState.INTERRUPTED}
    ),
    RequestState.RUNNING: frozenset(
        {RequestState.DONE, RequestState.CANCELLED, RequestState.FAILED, RequestState.INTERRUPTED}
    ),
    RequestState.INTERRUPTED: frozenset(
        {RequestState.RUNNING, RequestState.CANCELLED, RequestState.FAILED, RequestState.DONE}
    ),
    RequestState.DONE: frozenset(),
    RequestState.CANCELLED: frozenset(),
    RequestState.FAILED: frozenset(),
}


class IllegalTransition(FerryError):
    """A state change the transition table forbids: a bug in ferry, or a journal edited by hand."""

    exit_code = 1


def check_task_transition(current: TaskState, new: TaskState, what: str) -> None:
    """Raise :class:`IllegalTransition` unless ``current -> new`` is in :data:`TASK_TRANSITIONS`."""
    if new not in TASK_TRANSITIONS[current]:
        raise IllegalTransition(f"{what}: illegal task transition {current} -> {new}")


def check_request_transition(current: RequestState, new: RequestState, what: str) -> None:
    """Raise :class:`IllegalTransition` unless ``current -> new`` is in :data:`REQUEST_TRANSITIONS`."""
    if new not in REQUEST_TRANSITIONS[current]:
        raise IllegalTransition(f"{what}: illegal request transition {current} -> {new}")
