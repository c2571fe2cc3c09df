"""The run loop: record intent, submit batches as slots free, keep throttles exact, clean up.

One request runs like this (every step that changes the cluster is journalled first)::

    prepare   refuse foreign reassignments in flight (unless --additional); read the pre-existing
              throttle configs (ferry's own count as theirs' originals); record the request,
              its tasks (originals, targets, sizes) and its throttles (previous and planned values)
    run       every poll: finish the tasks whose reassignment ended; choose the next batch under the
              limits; set the throttles for exactly the moves in flight (+ the batch); submit it;
              report progress -- until no task is pending or submitted. While the cluster is
              frozen (:mod:`ferry.kafka.freeze`) no batch is chosen and nothing is re-sent for a
              resume; moves in flight go on
    finally   restore every throttle config to its pre-existing value (or delete it), whatever
              happened: success, error, Ctrl-C or SIGTERM (the CLI turns SIGTERM into an exception,
              and its ``shield`` keeps a second one from cutting the restore short)
    elect     preferred-leader election for the moved partitions (unless disabled)

On an interruption the moves already submitted keep running on the brokers (unthrottled, since
throttles are always removed); the request is marked ``interrupted`` and its submitted tasks stay
``submitted`` for ``ferry resume`` to pick up.

The cluster is only reached through :class:`~ferry.kafka.admin.ClusterAdmin`; time and sleeping are
injected, so the loop can run against a fake admin in unit tests without waiting.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from ferry.errors import ExecutionIncomplete, PreconditionError
from ferry.execute import lock, sharing
from ferry.execute import throttles as thr
from ferry.execute.batching import InFlight, Limits, held_by_foreign, in_flight_of, next_batch
from ferry.execute.events import (
    BatchSubmitted,
    LeadersElected,
    Listener,
    ProgressUpdate,
    SubmissionPaused,
    SubmissionResumed,
    TaskFinished,
    ThrottlesChanged,
    WaitingForForeign,
    ignore,
)
from ferry.execute.journal import Journal
from ferry.execute.progress import History
from ferry.execute.progress import total as total_progress
from ferry.execute.records import ConfigKey, RequestKind, TaskRecord, ThrottleRecord
from ferry.execute.report import measure
from ferry.execute.resume import Reconciled, reconcile
from ferry.execute.states import OPEN_TASK_STATES, RequestState, TaskState
from ferry.execute.strategies import Ordering
from ferry.kafka.admin import ClusterAdmin, OngoingReassignment
from ferry.kafka.freeze import FreezeState
from ferry.model import Plan, TopicPartition

# A reassignment missing from ListPartitionReassignments whose partition does not show the target
# yet is given this long before it counts as failed: KRaft brokers apply metadata a few ms apart,
# so the broker answering the metadata request may not have seen the completion.
_ENDED_GRACE_S = 10.0

# How many polls per --poll-interval once the last bytes are due (see _pause).
_END_POLLS_PER_INTERVAL = 4

# How often to repeat that foreign reassignments hold moves back while nothing changes.
_WAITING_REPORT_EVERY_S = 60.0


@dataclass(frozen=True, slots=True)
class ExecuteOptions:
    """How to run a request; stored in the journal with it (:meth:`to_json`)."""

    throttle: int | None = None
    limits: Limits = field(default_factory=Limits)
    ordering: Ordering = field(default_factory=Ordering)
    additional: bool = False
    elect: bool = True
    poll_interval_s: float = 1.0
    force: str | None = None
    """Why the safety checks were overridden (None: they were not)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "throttle": self.throttle,
            "max_moves_per_broker": self.limits.max_moves_per_broker,
            "max_moves": self.limits.max_moves,
            "order": list(self.ordering.names),
            "additional": self.additional,
            "elect": self.elect,
            "poll_interval_s": self.poll_interval_s,
            "force": self.force,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ExecuteOptions:
        return cls(
            throttle=data.get("throttle"),
            limits=Limits(data.get("max_moves_per_broker", 5), data.get("max_moves")),
            ordering=Ordering(tuple(data.get("order", ("smallest-first",)))),
            additional=bool(data.get("additional", False)),
            elect=bool(data.get("elect", True)),
            poll_interval_s=float(data.get("poll_interval_s", 1.0)),
            force=data.get("force"),
        )


@dataclass
class _Waiting:
    """Pending moves held back by foreign reassignments: which, since when, last said when."""

    blockers: dict[TopicPartition, tuple[int, ...]]
    since: float
    reported_at: float


@dataclass
class _Run:
    """Mutable scratch state of one run (never shared, never returned)."""

    request_id: int
    options: ExecuteOptions
    previous: dict[ConfigKey, str | None]
    applied: dict[ConfigKey, str] = field(default_factory=dict)
    batches: int = 0
    history: History = field(default_factory=History)
    ended_at: dict[int, float] = field(default_factory=dict)
    freeze: FreezeState | None = None  # the freeze holding submission back, while one does
    # Tasks the journal calls submitted that the cluster never got (found by resume), by id: sent
    # at the first poll the cluster is not frozen, and not taken for ended before then.
    unsent: set[int] = field(default_factory=set)
    waiting: _Waiting | None = None
    eta_s: float | None = None


class Executor:
    """Runs requests against one cluster and one journal.

    Args:
        admin: the cluster.
        journal: where intent and outcomes are recorded.
        listener: receives :mod:`ferry.execute.events`.
        clock: monotonic seconds (progress rate, grace periods).
        sleep: waits between polls.
        shield: wraps the cleanup at the end of a run; the CLI's holds Ctrl-C and SIGTERM back
            meanwhile, so a second interrupt cannot cut the throttle restore short.
    """

    def __init__(
        self,
        admin: ClusterAdmin,
        journal: Journal,
        *,
        listener: Listener = ignore,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        shield: Callable[[], AbstractContextManager[object]] = nullcontext,
    ) -> None:
        self._admin = admin
        self._journal = journal
        self._listener = listener
        self._clock = clock
        self._sleep = sleep
        self._shield = shield

    def with_listener(
        self, listener: Listener, shield: Callable[[], AbstractContextManager[object]] | None = None
    ) -> Executor:
        """The same executor reporting to ``listener`` (the CLI picks it once the run starts)."""
        return Executor(
            self._admin,
            self._journal,
            listener=listener,
            clock=self._clock,
            sleep=self._sleep,
            shield=shield or self._shield,
        )

    def options_of(self, request_id: int) -> ExecuteOptions:
        """The options request ``request_id`` recorded (a resumed request runs under them)."""
        return ExecuteOptions.from_json(self._journal.request(request_id).options)

    # -- prepare ---------------------------------------------------------------------------------

    def prepare(
        self, plan: Plan, *, bootstrap: str, options: ExecuteOptions, rollback_of: int | None = None
    ) -> int:
        """Check preconditions and record the request; nothing is submitted yet.

        ``rollback_of`` records the request as the rollback of that earlier one.

        Returns:
            The request id.

        Raises:
            PreconditionError: a reassignment ferry did not start is in flight (without
                ``additional``). A partition moving under an earlier ferry request is fine: this
                request re-targets it when its turn comes, and the journal links the two tasks.
        """
        ongoing = self._admin.list_reassignments()
        self._check_in_flight(plan, ongoing, options.additional)
        keys = thr.required(plan.moves, options.throttle).keys
        on_cluster = self._admin.describe_throttle_configs(keys) if keys else {}
        # A config another running request has applied holds ferry's value, not the operator's.
        previous = sharing.previous_values(self._journal, on_cluster, keys)
        planned = thr.desired(thr.required(plan.moves, options.throttle), previous)
        records = [ThrottleRecord(k, previous.get(k), planned.get(k)) for k in sorted(keys)]
        return self._journal.record_request(
            plan,
            bootstrap=bootstrap,
            cluster_id=self._admin.cluster_id(),
            options=options.to_json(),
            throttles=records,
            kind=RequestKind.EXECUTE if rollback_of is None else RequestKind.ROLLBACK,
            origin_request=rollback_of,
        )

    def _check_in_flight(self, plan: Plan, ongoing: Sequence[OngoingReassignment], additional: bool) -> None:
        ours = self._journal.moving_partitions()
        foreign = sorted(r.tp for r in ongoing if r.tp not in ours)
        if foreign and not additional:
            shown = ", ".join(str(tp) for tp in foreign[:3]) + (" ..." if len(foreign) > 3 else "")
            raise PreconditionError(
                f"{len(foreign)} reassignment(s) not started by ferry are in flight ({shown})",
                hint="wait for them, or pass --additional to run alongside them",
            )

    # -- run -------------------------------------------------------------------------------------

    def run(self, request_id: int) -> None:
        """Drive request ``request_id`` to its end; throttles are restored whatever happens.

        Raises:
            ExecutionIncomplete: some moves failed (the journal names them).
            KafkaError: the cluster could not be reached (the request is left interrupted).
            PreconditionError: another process is running the request.
        """
        # The lock tells resume and verify that a live executor owns the request.
        with lock.holding(self._journal.path, request_id):
            self._run_locked(request_id)

    def resume(self, request_id: int) -> Reconciled:
        """Continue an interrupted request: reconcile its submitted tasks, then :meth:`run` it.

        Returns:
            What the cluster said about the submitted tasks (see :mod:`ferry.execute.resume`).

        Raises:
            PreconditionError: the request has ended already, or a live process is running it.
            ExecutionIncomplete, KafkaError: as :meth:`run`.
        """
        with lock.holding(self._journal.path, request_id):
            request = self._journal.request(request_id)
            if request.state.is_final:
                raise PreconditionError(f"request {request_id} is {request.state}: nothing to resume")
            if request.state is RequestState.RUNNING:
                # Its lock was free, so the executor that marked it running is dead.
                self._journal.set_request_state(
                    request_id, RequestState.INTERRUPTED, note="executor died; found by resume"
                )
            found = reconcile(self._admin, self._journal.tasks(request_id, [TaskState.SUBMITTED]))
            self._journal.set_task_states([t.id for t in found.done], TaskState.DONE)
            for task, why in found.failed:
                self._journal.set_task_states([task.id], TaskState.FAILED, error=why)
            self._run_locked(request_id, resend=found.unsent)
        return found

    def _run_locked(self, request_id: int, resend: Sequence[TaskRecord] = ()) -> None:
        request = self._journal.request(request_id)
        options = ExecuteOptions.from_json(request.options)
        throttles = self._journal.throttles(request_id)
        previous = {t.config: t.previous for t in throttles}
        run = _Run(request_id, options, previous, history=History(throttle=options.throttle))
        run.applied = {t.config: t.applied for t in throttles if t.applied is not None}
        # Re-sent by the poll, like a new batch: a freeze holds them back the same way.
        run.unsent = {t.id for t in resend}
        self._journal.set_request_state(request_id, RequestState.RUNNING)
        finished = False
        try:
            while not self._tick(run):
                self._sleep(_pause(options.poll_interval_s, run.eta_s))
            finished = True
        finally:
            self._clean_up(run, finished)
        self._finish(run)

    def _clean_up(self, run: _Run, finished: bool) -> None:
        """Restore the throttles; mark the request interrupted unless it finished and stayed so."""
        ended = False
        try:
            # Shielded: an interrupt raised halfway through would leave throttles behind. The
            # CLI's shield raises one that came meanwhile at its end, before ``ended`` is set.
            with self._shield():
                self._restore_throttles(run)
            ended = finished
        finally:
            if not ended:
                self._journal.set_request_state(run.request_id, RequestState.INTERRUPTED)

    def _tick(self, run: _Run) -> bool:
        """One poll; True when nothing is pending or in flight any more."""
        ongoing = {r.tp: r for r in self._admin.list_reassignments()}
        self._finish_ended(run, ongoing)
        tasks = self._journal.tasks(run.request_id)
        submitted = [t for t in tasks if t.state is TaskState.SUBMITTED]
        pending = [t for t in tasks if t.state is TaskState.PENDING]
        if not submitted and not pending:
            # A last measurement, so listeners end on the final figures (100 % when all went well).
            self._report_progress(run)
            return True
        # A concurrent 'ferry cancel' may have ended a task still to be re-sent.
        unsent = [t for t in submitted if t.id in run.unsent]
        moving = [t for t in submitted if t.id not in run.unsent]
        if (pending or unsent) and self._frozen(run, len(moving)):
            self._sync_throttles(run, moving)
            self._report_progress(run)
            return False
        # A pending task of a moving partition re-targets that move: it replaces it, not adds to it.
        ours = {t.tp for t in submitted} | {t.tp for t in pending}
        foreign = [r for tp, r in ongoing.items() if tp not in ours]
        ordered, own = run.options.ordering.sort(pending), in_flight_of(submitted)
        foreign_load = [_in_flight(r) for r in foreign]
        batch = next_batch(ordered, own, run.options.limits, foreign_load)
        held, brokers = held_by_foreign(ordered, own, run.options.limits, foreign_load, batch)
        self._report_waiting(run, held, brokers, foreign)
        self._sync_throttles(run, [*submitted, *batch])
        if unsent:
            self._resend(run, unsent)
        if batch:
            self._submit(run, batch)
        self._report_progress(run)
        return False

    def _frozen(self, run: _Run, in_flight: int) -> bool:
        """Whether the cluster's freeze flag holds new moves back; each change is reported once.

        Read once per poll and only while moves wait to be submitted: nothing else depends on it.
        """
        state = self._admin.read_freeze()
        freeze = state if state is not None and state.frozen else None
        if freeze != run.freeze:
            if freeze is not None:
                self._listener(SubmissionPaused(run.request_id, freeze, in_flight))
            else:
                self._listener(SubmissionResumed(run.request_id, state))
            run.freeze = freeze
        return freeze is not None

    def _finish_ended(self, run: _Run, ongoing: Mapping[TopicPartition, OngoingReassignment]) -> None:
        """Mark submitted tasks whose reassignment is no longer listed as done (or failed)."""
        submitted = self._journal.tasks(run.request_id, [TaskState.SUBMITTED])
        # A task waiting to be re-sent is not listed because it was never sent, not because it ended.
        ended = [t for t in submitted if t.tp not in ongoing and t.id not in run.unsent]
        if not ended:
            return
        current = {p.tp: p.replicas for p in self._admin.describe_partitions({t.tp.topic for t in ended})}
        now = self._clock()
        for task in ended:
            replicas = current.get(task.tp)
            if replicas == task.target:
                self._end_task(run, task, TaskState.DONE)
                continue
            first_seen = run.ended_at.setdefault(task.id, now)
            if now - first_seen >= _ENDED_GRACE_S:
                error = f"reassignment ended with replicas {list(replicas or ())}, not {list(task.target)}"
                self._end_task(run, task, TaskState.FAILED, error)

    def _report_waiting(
        self,
        run: _Run,
        waiting: Sequence[TaskRecord],
        brokers: frozenset[int],
        foreign: Sequence[OngoingReassignment],
    ) -> None:
        """Say which foreign reassignments hold pending moves back on which brokers, every minute.

        ferry keeps waiting (a foreign move may be slow, not stuck, and submitting onto its
        brokers would break the limits), but says why, so a stuck one can be cancelled.
        """
        blockers = {
            r.tp: held
            for r in foreign
            if (held := tuple(sorted(brokers & {*r.adding_replicas, *r.removing_replicas})))
        }
        if not blockers:
            run.waiting = None
            return
        now = self._clock()
        if run.waiting is None or run.waiting.blockers != blockers:
            run.waiting = _Waiting(blockers, since=now, reported_at=now)
        elif now - run.waiting.reported_at >= _WAITING_REPORT_EVERY_S:
            run.waiting.reported_at = now
        else:
            return
        self._listener(WaitingForForeign(run.request_id, blockers, len(waiting), now - run.waiting.since))

    def _end_task(self, run: _Run, task: TaskRecord, state: TaskState, error: str | None = None) -> None:
        # A task cancelled or re-targeted by another process meanwhile keeps that outcome.
        if self._journal.transition_if([task.id], OPEN_TASK_STATES, state, error=error):
            self._listener(TaskFinished(run.request_id, task.tp, state, error))

    def _submit(self, run: _Run, batch: Sequence[TaskRecord]) -> None:
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
        self._supersede_earlier(batch)
        answers = self._admin.alter_reassignments({t.tp: t.target for t in batch})
        self._cancel_if_cancelled_meanwhile(batch)
        refused = {t.tp: answers[t.tp] or "" for t in batch if answers.get(t.tp)}
        for task in batch:
            if task.tp in refused:
                self._end_task(run, task, TaskState.FAILED, f"refused by the controller: {refused[task.tp]}")
        self._listener(BatchSubmitted(run.request_id, run.batches, tuple(t.tp for t in batch), refused))

    def _supersede_earlier(self, batch: Sequence[TaskRecord]) -> None:
        """Link the tasks of earlier requests whose moving partitions this batch re-targets."""
        for task in batch:
            for earlier in self._journal.active_tasks(task.tp):
                if earlier.id != task.id:
                    self._journal.supersede(earlier.id, task.id)

    def _cancel_if_cancelled_meanwhile(self, batch: Sequence[TaskRecord]) -> None:
        """Withdraw moves a concurrent 'ferry cancel' cancelled between our claim and our submit."""
        states = {t.id: self._journal.task(t.id).state for t in batch}
        withdrawn = {t.tp: None for t in batch if states[t.id] is TaskState.CANCELLED}
        if withdrawn:
            self._admin.alter_reassignments(withdrawn)

    def _resend(self, run: _Run, tasks: Sequence[TaskRecord]) -> None:
        """Send tasks the journal calls submitted but the cluster never got (their throttles are set)."""
        run.unsent.difference_update(t.id for t in tasks)
        answers = self._admin.alter_reassignments({t.tp: t.target for t in tasks})
        for task in tasks:
            if answers.get(task.tp):
                self._end_task(run, task, TaskState.FAILED, f"refused by the controller: {answers[task.tp]}")

    # -- throttles -------------------------------------------------------------------------------

    def _sync_throttles(self, run: _Run, moving: Iterable[TaskRecord]) -> None:
        """Make the cluster's throttle configs exactly those ``moving`` needs (merged with theirs)."""
        wanted = sharing.wanted(
            self._journal, run.request_id, moving, run.options.throttle, run.previous, run.previous.keys()
        )
        self._write_throttles(run, thr.changes(run.applied, wanted, run.previous), wanted)

    def _restore_throttles(self, run: _Run) -> None:
        # Configs another request's moves still need keep their entries; the rest go back.
        kept = sharing.wanted(self._journal, run.request_id, (), None, run.previous, run.applied.keys())
        self._write_throttles(run, thr.changes(run.applied, kept, run.previous), {})
        if run.applied:
            # Left at a value another request needs as it is: that request owns it from now on.
            self._journal.set_throttles_applied(run.request_id, dict.fromkeys(run.applied))
            run.applied = {}

    def _write_throttles(
        self, run: _Run, writes: Mapping[ConfigKey, str | None], wanted: Mapping[ConfigKey, str]
    ) -> None:
        if not writes:
            return
        ours, restored = sharing.write(self._admin, self._journal, run.request_id, writes, wanted)
        run.applied = {k: v for k, v in {**run.applied, **ours}.items() if k not in restored}
        self._listener(ThrottlesChanged(run.request_id, len(ours), len(restored)))

    # -- progress and the end --------------------------------------------------------------------

    def _report_progress(self, run: _Run) -> None:
        tasks = self._journal.tasks(run.request_id)
        replicas = measure(self._admin, tasks)
        progress = total_progress(replicas)
        run.history = run.history.add(self._clock(), replicas)
        done = sum(1 for t in tasks if t.state is TaskState.DONE)
        moving = tuple(t.tp for t in tasks if t.state is TaskState.SUBMITTED)
        eta = run.history.estimate(replicas)
        run.eta_s = eta.eta_s
        self._listener(
            ProgressUpdate(run.request_id, progress, eta, done, len(tasks), len(moving), replicas, moving)
        )

    def _finish(self, run: _Run) -> None:
        tasks = self._journal.tasks(run.request_id)
        done = [t.tp for t in tasks if t.state is TaskState.DONE]
        if run.options.elect and done:
            answers = self._admin.elect_preferred_leaders(done)
            failed = {tp: why for tp, why in answers.items() if why}
            self._listener(LeadersElected(run.request_id, len(done), failed))
        if self._journal.request(run.request_id).state.is_final:
            return  # 'ferry cancel' ended it from another process; it said what happened
        failed_tasks = [t for t in tasks if t.state is TaskState.FAILED]
        cancelled = [t for t in tasks if t.state is TaskState.CANCELLED and t.superseded_by is None]
        if cancelled and not failed_tasks:
            self._journal.set_request_state(
                run.request_id, RequestState.CANCELLED, note=f"{len(cancelled)} move(s) cancelled"
            )
            return
        if failed_tasks:
            self._journal.set_request_state(
                run.request_id, RequestState.FAILED, note=f"{len(failed_tasks)} move(s) failed"
            )
            raise ExecutionIncomplete(
                f"request {run.request_id}: {len(failed_tasks)} of {len(tasks)} move(s) failed "
                f"(first: {failed_tasks[0].tp}: {failed_tasks[0].error})",
                hint=f"see the journal for request {run.request_id}",
            )
        self._journal.set_request_state(run.request_id, RequestState.DONE)


def _in_flight(reassignment: OngoingReassignment) -> InFlight:
    return InFlight(reassignment.adding_replicas, reassignment.removing_replicas)


def _pause(poll_interval_s: float, eta_s: float | None) -> float:
    """The wait before the next poll: a poll, or a quarter of one once the last bytes are due.

    The end of a move is only seen at a poll, and until then its slot, its throttles and the
    run's exit wait. Within the last poll the ETA cannot say when: bytes arrive in fetch-sized
    steps, a quota stall may come first, and the move ends only once its new replicas joined the
    ISR. In four benchmark runs the last byte came 0.1-0.7 s before the last ETA said, which
    waiting for the ETA would miss by that much. Polling four times as often from then on sees
    the end within a quarter of a poll, for a few cheap extra polls per run.
    """
    if eta_s is None or eta_s > poll_interval_s:
        return poll_interval_s
    return poll_interval_s / _END_POLLS_PER_INTERVAL
