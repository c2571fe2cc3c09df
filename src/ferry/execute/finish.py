"""The end of a run: elect preferred leaders for the moved partitions, then mark the outcome."""

from __future__ import annotations

from ferry.errors import ExecutionIncomplete
from ferry.execute.events import LeadersElected, Listener
from ferry.execute.journal import Journal
from ferry.execute.states import RequestState, TaskState
from ferry.kafka.admin import ClusterAdmin


def finish_request(
    admin: ClusterAdmin, journal: Journal, request_id: int, *, elect: bool, listener: Listener
) -> None:
    """Elect leaders (when ``elect``) and set the request's final state from its tasks' outcomes.

    A request already final was ended by ``ferry cancel`` from another process, which said what
    happened; it is left as it is.

    Raises:
        ExecutionIncomplete: some moves failed (the journal names them).
    """
    tasks = journal.tasks(request_id)
    # A move between log dirs alone (same replicas, same order) leaves leadership as it was.
    done = [t.tp for t in tasks if t.state is TaskState.DONE and t.original != t.target]
    if elect and done:
        answers = admin.elect_preferred_leaders(done)
        failed = {tp: why for tp, why in answers.items() if why}
        listener(LeadersElected(request_id, len(done), failed))
    # Each end below is written only if no other process ended the request meanwhile.
    failed_tasks = [t for t in tasks if t.state is TaskState.FAILED]
    cancelled = [t for t in tasks if t.state is TaskState.CANCELLED and t.superseded_by is None]
    if cancelled and not failed_tasks:
        journal.end_request_unless_final(
            request_id, RequestState.CANCELLED, note=f"{len(cancelled)} move(s) cancelled"
        )
        return
    if failed_tasks:
        note = f"{len(failed_tasks)} move(s) failed"
        if journal.end_request_unless_final(request_id, RequestState.FAILED, note=note):
            raise ExecutionIncomplete(
                f"request {request_id}: {len(failed_tasks)} of {len(tasks)} move(s) failed "
                f"(first: {failed_tasks[0].tp}: {failed_tasks[0].error})",
                hint=f"see the journal for request {request_id}",
            )
        return
    journal.end_request_unless_final(request_id, RequestState.DONE)
