"""Moves between the executor and the controller: sending them, and seeing them end.

The executor's loop decides *what* goes out and when (limits, freeze, pace); :class:`Dispatch`
sends it -- the intent journalled first, a move made one replica at a time one step at a time --
and turns what the cluster shows afterwards into task outcomes: done, failed, or the next step.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from ferry.errors import KafkaError
from ferry.execute import concurrent, dir_moves
from ferry.execute.dir_moves import DirMoves
from ferry.execute.events import BatchSubmitted, Listener, StepsSubmitted, TaskFinished
from ferry.execute.journal import Journal
from ferry.execute.records import TaskRecord
from ferry.execute.run_state import RunState
from ferry.execute.states import OPEN_TASK_STATES, TaskState
from ferry.kafka.admin import ClusterAdmin, OngoingReassignment
from ferry.model import TopicPartition

# A reassignment missing from ListPartitionReassignments whose partition does not show the target
# yet is given this long before it counts as failed: KRaft brokers apply metadata a few ms apart,
# so the broker answering the metadata request may not have seen the completion.
_ENDED_GRACE_S = 10.0
# A copy between log dirs with less left than the log-dir throttle copies in this many polls
# frees its slot for the next (ferry.execute.dir_moves.DirMoves.lead_bytes).
_LEAD_POLLS = 2


class Dispatch:
    """Sends a run's moves and records how they end (one per executor)."""

    def __init__(
        self,
        admin: ClusterAdmin,
        journal: Journal,
        listener: Listener,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._admin = admin
        self._journal = journal
        self._listener = listener
        self._clock = clock

    def finish_ended(self, run: RunState, ongoing: Mapping[TopicPartition, OngoingReassignment]) -> None:
        """Mark submitted tasks whose reassignment is no longer listed as done (or failed); send
        the next step of a move made one replica at a time whose step ended."""
        submitted = self._journal.tasks(run.request_id, [TaskState.SUBMITTED])
        # A task waiting to be re-sent is not listed because it was never sent, not because it ended.
        ended = [t for t in submitted if t.tp not in ongoing and t.id not in run.unsent]
        if not ended:
            return
        current = self._replicas(ended)
        now = self._clock()
        stepped: list[TaskRecord] = []
        placing: list[TaskRecord] = []
        for task in ended:
            replicas = current.get(task.tp)
            if replicas == task.target:
                if task.named_dirs:
                    placing.append(task)  # done once its replicas sit in their dirs
                else:
                    self._end_task(run, task, TaskState.DONE)
                continue
            if replicas is not None and task.is_step(replicas):
                stepped.append(task)
                continue
            first_seen = run.ended_at.setdefault(task.id, now)
            if now - first_seen >= _ENDED_GRACE_S:
                error = f"reassignment ended with replicas {list(replicas or ())}, not {list(task.target)}"
                self._end_task(run, task, TaskState.FAILED, error)
        if stepped:
            self._next_steps(run, stepped, current)
        if placing:
            self._place(run, placing)

    def _place(self, run: RunState, tasks: Sequence[TaskRecord]) -> None:
        """Move the replicas of ``tasks`` into the dirs they name; end those that are there."""
        options = run.options
        lead = int(_LEAD_POLLS * options.poll_interval_s * options.dir_rate) if options.dir_rate else 0
        dirs = DirMoves(self._admin, options.max_dir_moves_per_broker, options.max_dir_move_brokers, lead)
        found = dirs.advance(tasks)
        # The other half of the hand-over with 'ferry cancel' (which marks, then stops copies):
        # a task it cancelled while this poll started its copy has that copy stopped here.
        now = [self._journal.task(t.id) for t in tasks]
        dir_moves.stop(self._admin, [t for t in now if concurrent.is_cancelled(t)])
        for task in found.done:
            self._end_task(run, task, TaskState.DONE)
        for task in tasks:
            if task.id in found.failed:
                self._end_task(run, task, TaskState.FAILED, found.failed[task.id])

    def _replicas(self, tasks: Sequence[TaskRecord]) -> dict[TopicPartition, tuple[int, ...]]:
        """The replicas the cluster shows now for the partitions of ``tasks``."""
        return {p.tp: p.replicas for p in self._admin.describe_partitions({t.tp.topic for t in tasks})}

    def _next_steps(
        self, run: RunState, tasks: Sequence[TaskRecord], current: Mapping[TopicPartition, tuple[int, ...]]
    ) -> None:
        """Send the step after the one each of ``tasks`` reached (a failed send is retried as a
        re-send at the next poll, like a submission that failed on the way)."""
        answers = self._send(run, tasks, {t.tp: t.next_target(current[t.tp]) for t in tasks})
        for task in tasks:
            run.ended_at.pop(task.id, None)
        self._fail_refused(run, tasks, answers)
        steps = {t.tp: (run.step_sent[t.id], len(t.targets)) for t in tasks}
        self._listener(StepsSubmitted(run.request_id, steps))

    def _end_task(self, run: RunState, task: TaskRecord, state: TaskState, error: str | None = None) -> None:
        # A task cancelled or re-targeted by another process meanwhile keeps that outcome.
        if self._journal.transition_if([task.id], OPEN_TASK_STATES, state, error=error):
            self._listener(TaskFinished(run.request_id, task.tp, state, error))

    def submit(self, run: RunState, batch: Sequence[TaskRecord]) -> None:
        run.batches += 1
        # Intent first: if ferry dies between these two lines, the journal says "submitted" and a
        # resume checks the cluster rather than trusting memory. Only tasks still pending are
        # claimed: 'ferry cancel' in another process may have cancelled some since this poll read them.
        claimed = set(
            self._journal.transition_if(
                [t.id for t in batch], TaskState.PENDING, TaskState.SUBMITTED, batch=run.batches
            )
        )
        batch = [t for t in batch if t.id in claimed]
        if not batch:
            return
        concurrent.supersede_earlier(self._journal, batch)
        refused = self._fail_refused(run, batch, dir_moves.prefer(self._admin, batch), "a broker")
        batch = [t for t in batch if t.tp not in refused]
        answers = self._send(run, batch, {t.tp: t.targets[0] for t in batch})
        concurrent.withdraw_cancelled(self._admin, self._journal, batch)
        refused |= self._fail_refused(run, batch, answers)
        self._listener(BatchSubmitted(run.request_id, run.batches, tuple(t.tp for t in batch), refused))

    def resend(self, run: RunState, tasks: Sequence[TaskRecord]) -> None:
        """Send tasks the journal calls submitted but the cluster never got (their throttles are
        set); a move made one replica at a time goes on from the step its partition is at."""
        targets = {t.tp: t.target for t in tasks}
        stepped = [t for t in tasks if t.steps]
        if stepped:
            current = self._replicas(stepped)
            targets |= {t.tp: t.next_target(current.get(t.tp, t.original)) for t in stepped}
        refused = self._fail_refused(run, tasks, dir_moves.prefer(self._admin, tasks), "a broker")
        tasks = [t for t in tasks if t.tp not in refused]
        answers = self._send(run, tasks, targets)
        run.unsent.difference_update(t.id for t in tasks)
        self._fail_refused(run, tasks, answers)

    def _fail_refused(
        self,
        run: RunState,
        tasks: Sequence[TaskRecord],
        answers: Mapping[TopicPartition, str | None],
        by: str = "the controller",
    ) -> dict[TopicPartition, str]:
        """End as failed the tasks ``by`` refused; the refusals, by partition."""
        refused = {t.tp: answers[t.tp] or "" for t in tasks if answers.get(t.tp)}
        for task in tasks:
            if task.tp in refused:
                self._end_task(run, task, TaskState.FAILED, f"refused by {by}: {refused[task.tp]}")
        return refused

    def _send(
        self, run: RunState, tasks: Sequence[TaskRecord], targets: Mapping[TopicPartition, tuple[int, ...]]
    ) -> Mapping[TopicPartition, str | None]:
        # A move between the dirs of the same brokers needs no reassignment, only AlterReplicaLogDirs.
        tasks = [t for t in tasks if t.original != t.target or not t.named_dirs]
        if not tasks:
            return {}
        try:
            answers = self._admin.alter_reassignments({t.tp: targets[t.tp] for t in tasks})
        except KafkaError:
            # Perhaps never received (sent again at the next poll that works: the same target twice
            # ends the same), perhaps received late (withdrawn if a cancel ended the task meanwhile).
            run.submission_failed([t.id for t in tasks], self._clock())
            raise
        # Which step (from 1) each move made one replica at a time has in flight, for progress.
        run.step_sent |= {t.id: t.targets.index(targets[t.tp]) + 1 for t in tasks if t.steps}
        return answers
