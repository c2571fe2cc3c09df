"""The freeze flag as a run reads it at each poll while moves wait (:mod:`ferry.kafka.freeze`).

Only the control topic's leader can answer the read, so it cannot go to another broker the way
the poll's other reads do (:mod:`ferry.kafka.client.spread`). It is bounded instead: a leader that
has not answered within :data:`~ferry.execute.progress.ANSWER_WITHIN_S` (stopped, stalled) leaves
the run as the last read left it, frozen or not, rather than holding the poll, and every move in
flight with it, until the request timeout. While the leader is silent no one can write the flag
either (the write needs it too), so the state kept is the latest one.
"""

from __future__ import annotations

from ferry.errors import KafkaError
from ferry.execute.events import Listener, SubmissionPaused, SubmissionResumed
from ferry.execute.progress import ANSWER_WITHIN_S
from ferry.execute.run_state import RunState
from ferry.kafka.admin import ClusterAdmin


def frozen(admin: ClusterAdmin, run: RunState, in_flight: int, listener: Listener) -> bool:
    """Whether the freeze flag holds ``run``'s new moves back; each change is reported once.

    Raises:
        KafkaError: a failure that will not pass by itself (not authorized on the control topic).
    """
    try:
        state = admin.read_freeze(within_s=ANSWER_WITHIN_S)
    except KafkaError as exc:
        if not exc.transient:
            raise
        return run.freeze is not None
    freeze = state if state is not None and state.frozen else None
    if freeze != run.freeze:
        if freeze is not None:
            listener(SubmissionPaused(run.request_id, freeze, in_flight))
        else:
            listener(SubmissionResumed(run.request_id, state))
        run.freeze = freeze
    return freeze is not None
