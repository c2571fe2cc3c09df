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

The cluster is only reached through :class:`~ferry.kafka.admin.ClusterAdmin`; time and sleeping
are injected, so the loop runs against a fake admin in unit tests without waiting.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime
from datetime import time as time_of_day

from ferry.errors import KafkaError, PreconditionError
from ferry.execute import concurrent, lock, sharing
from ferry.execute.batching import InFlight, held_by_foreign, in_flight_of, next_batch
from ferry.execute.dispatch import Dispatch
from ferry.execute.events import (
    HeldUnderMinIsr,
    LateWritesAwaited,
    Listener,
    PaceDecided,
    ProgressUpdate,
    ThrottlesChanged,
    WaitingForForeign,
    ignore,
)
from ferry.execute.finish import finish_request
from ferry.execute.freeze_watch import frozen
from ferry.execute.journal import Journal
from ferry.execute.journal_progress import SAMPLE_EVERY_S
from ferry.execute.options import ExecuteOptions
from ferry.execute.outage import RIDE_OUT_S, Outage
from ferry.execute.pace.controller import Pace, State
from ferry.execute.pace.pacer import Pacer
from ferry.execute.pace.settings import DEFAULT_START
from ferry.execute.prepare import prepare_request
from ferry.execute.progress import History, by_broker, next_poll_in
from ferry.execute.progress import total as total_progress
from ferry.execute.records import TaskRecord
from ferry.execute.report import measure
from ferry.execute.resume import Reconciled, reconcile
from ferry.execute.run_state import RunState
from ferry.execute.states import RequestState, TaskState
from ferry.execute.tiered import tiered_copies
from ferry.execute.waiting import blockers_of, next_waiting
from ferry.kafka.admin import ClusterAdmin, OngoingReassignment
from ferry.model import ClusterSnapshot, Plan


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
        ride_out_s: how long polls may fail in a row, for reasons that may pass, before the run
            ends interrupted.
        local_time: the local time of day (``--schedule`` windows).
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
        ride_out_s: float = RIDE_OUT_S,
        local_time: Callable[[], time_of_day] = lambda: datetime.now().time(),
    ) -> None:
        self._admin = admin
        self._local_time = local_time
        self._dispatch = Dispatch(admin, journal, listener, clock)
        self._ride_out_s = ride_out_s
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
            ride_out_s=self._ride_out_s,
            local_time=self._local_time,
        )

    def options_of(self, request_id: int) -> ExecuteOptions:
        """The options request ``request_id`` recorded (a resumed request runs under them)."""
        return self._journal.request(request_id).options

    # -- prepare ---------------------------------------------------------------------------------

    def prepare(
        self,
        plan: Plan,
        *,
        bootstrap: str,
        options: ExecuteOptions,
        rollback_of: int | None = None,
        now: ClusterSnapshot | None = None,
    ) -> int:
        """Check preconditions and record the request, nothing submitted yet; its id.

        ``rollback_of`` records the request as the rollback of that earlier one; ``now``, a
        snapshot just taken, gives the dirs replicas are in (else they are read).

        Raises:
            PreconditionError: a reassignment ferry did not start is in flight (without
                ``additional``). A partition moving under an earlier ferry request is fine: this
                request re-targets it when its turn comes, and the journal links the two tasks.
        """
        return prepare_request(
            self._admin,
            self._journal,
            plan,
            bootstrap=bootstrap,
            options=options,
            rollback_of=rollback_of,
            now=now,
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
        options = request.options
        throttles = sharing.RequestThrottles.load(self._admin, self._journal, request_id)
        pacer = self._pacer(request_id, options)
        # Paced rates move during the run: the starting rate caps no broker's rate in the ETA.
        history = History(throttle=None if pacer else options.throttle)
        outage = Outage(self._ride_out_s)
        run = RunState(request_id, options, throttles, history=history, outage=outage, pacer=pacer)
        # Re-sent by the poll, like a new batch: a freeze holds them back the same way.
        run.unsent = {t.id for t in resend}
        self._journal.set_request_state(request_id, RequestState.RUNNING)
        finished = False
        try:
            while not self._tick_riding_out(run):
                self._sleep(next_poll_in(options.poll_interval_s, run.eta_s))
            finished = True
        finally:
            self._clean_up(run, finished)
        finish_request(self._admin, self._journal, request_id, elect=options.elect, listener=self._listener)

    def _pacer(self, request_id: int, options: ExecuteOptions) -> Pacer | None:
        """The run's pace under ``--pace auto``: a resumed run goes on from the rates it had."""
        if options.pace is None:
            return None
        limit = options.limits.max_moves_per_broker
        pacer = Pacer(options.pace, options.throttle or DEFAULT_START, limit, self._local_time)
        for key, rate in self._journal.paced_rates(request_id).items():
            pacer.paces[key] = Pace(rate, limit, State.START, "resumed")
        return pacer

    def _clean_up(self, run: RunState, finished: bool) -> None:
        """Restore the throttles; mark the request interrupted unless it finished and stayed so."""
        ended = False
        try:
            # Shielded: an interrupt raised halfway through would leave throttles behind. The
            # CLI's shield raises one that came meanwhile at its end, before ``ended`` is set.
            with self._shield():
                self._restore(run, ride_out=finished)
            ended = finished
        finally:
            # A request a concurrent 'ferry cancel' ended stays as that cancel left it.
            if not ended:
                self._journal.end_request_unless_final(run.request_id, RequestState.INTERRUPTED)

    def _restore(self, run: RunState, *, ride_out: bool) -> None:
        """Restore the throttles; after a run that ended, through a cluster unreachable for a while
        (an interrupted run ends at once: its throttles wait for 'ferry resume')."""
        outage = Outage(self._ride_out_s if ride_out else 0.0)
        write = run.throttles.restore
        while True:
            try:
                self._say_changed(run, write())
            except KafkaError as exc:
                self._listener(outage.failed(exc, self._clock(), run.request_id))
                self._sleep(run.options.poll_interval_s)
                continue
            # A write that failed in a controller failover can still land and put a throttle back;
            # an interrupted run leaves that to 'ferry resume' (the journal keeps them unsure).
            if not ride_out or (late := self._admin.config_writes_settle_in()) <= 0:
                return
            self._listener(LateWritesAwaited(run.request_id, late))
            self._sleep(late)
            write = run.throttles.restore_landed

    def _tick_riding_out(self, run: RunState) -> bool:
        """:meth:`_tick`, where a failure that may pass (a broker down or restarting, a timeout, a
        controller failover) is reported and tried again at the next poll, for up to
        ``ride_out_s``: one broker of many restarting must not end a run that can go on."""
        try:
            ended = self._tick(run)
        except KafkaError as exc:
            self._listener(run.outage.failed(exc, self._clock(), run.request_id))
            return False
        run.outage.ended()
        return ended

    def _tick(self, run: RunState) -> bool:
        """One poll; True when nothing is pending or in flight any more."""
        ongoing = {r.tp: r for r in self._admin.list_reassignments()}
        self._dispatch.finish_ended(run, ongoing)
        concurrent.withdraw_late_arrivals(self._admin, self._journal, run.in_doubt, ongoing, self._clock)
        tasks = self._journal.tasks(run.request_id)
        submitted = [t for t in tasks if t.state is TaskState.SUBMITTED]
        pending = [t for t in tasks if t.state is TaskState.PENDING]
        # Measured before anything is written: a broker that stopped since the last poll is then
        # silent already, and its throttle waits (a write to it would hold the poll until it is back).
        self._measure(run, tasks)
        if not submitted and not pending and not run.in_doubt:
            # A last report, so listeners end on the final figures (100 % when all went well).
            self._report_progress(run)
            return True
        # A concurrent 'ferry cancel' may have ended a task still to be re-sent.
        unsent = [t for t in submitted if t.id in run.unsent]
        moving = [t for t in submitted if t.id not in run.unsent]
        paused = self._pace(run, moving)
        if (pending or unsent) and (frozen(self._admin, run, len(moving), self._listener) or paused):
            self._sync_throttles(run, moving)
            self._report_progress(run)
            return False
        # A pending task of a moving partition re-targets that move: it replaces it, not adds to it.
        ours = {t.tp for t in submitted} | {t.tp for t in pending}
        foreign = [r for tp, r in ongoing.items() if tp not in ours]
        ordered, own = run.options.ordering.sort(pending), in_flight_of(submitted)
        foreign_load = [InFlight(r.adding_replicas, r.removing_replicas) for r in foreign]
        caps = run.pacer.caps() if run.pacer else None
        batch = next_batch(ordered, own, run.options.limits, foreign_load, caps)
        held, brokers = held_by_foreign(ordered, own, run.options.limits, foreign_load, batch)
        self._report_waiting(run, held, brokers, foreign)
        self._sync_throttles(run, [*submitted, *batch])
        if unsent:
            self._dispatch.resend(run, unsent)
        if batch:
            self._dispatch.submit(run, batch)
        self._report_progress(run)
        return False

    def _pace(self, run: RunState, moving: Sequence[TaskRecord]) -> bool:
        """Let ``--pace auto`` decide if a control period has passed; True while it holds new
        moves back (a moving partition under min ISR)."""
        pacer = run.pacer
        if pacer is None:
            return False
        was_held = pacer.held
        decided = pacer.step(self._admin, moving, self._clock())
        if decided is not None:
            self._journal.record_pace(run.request_id, decided.decisions, decided.signals.readings)
            run.throttles.paced = sharing.paced_configs(pacer.rates())
            self._listener(PaceDecided(run.request_id, decided.decisions, decided.changed))
            if pacer.held != was_held:
                self._listener(HeldUnderMinIsr(run.request_id, pacer.held))
        return bool(pacer.held)

    def _report_waiting(
        self,
        run: RunState,
        waiting: Sequence[TaskRecord],
        brokers: frozenset[int],
        foreign: Sequence[OngoingReassignment],
    ) -> None:
        """Say which foreign reassignments hold pending moves back on which brokers, every minute."""
        now = self._clock()
        run.waiting, due = next_waiting(run.waiting, blockers_of(foreign, brokers), now)
        if due and run.waiting is not None:
            blockers, held_for = run.waiting.blockers, now - run.waiting.since
            self._listener(WaitingForForeign(run.request_id, blockers, len(waiting), held_for))

    # -- throttles -------------------------------------------------------------------------------

    def _sync_throttles(self, run: RunState, moving: Iterable[TaskRecord]) -> None:
        """Make the cluster's throttle configs exactly those ``moving`` needs (merged with theirs)."""
        # A broker that did not answer the last measurement (or the pace's reading) is stopped or
        # down: a write to it would wait for it, and hold every move of the run with it.
        silent = run.silent | (run.pacer.silent if run.pacer is not None else frozenset())
        self._say_changed(run, run.throttles.sync(moving, silent))

    def _say_changed(self, run: RunState, changed: tuple[int, int] | None) -> None:
        if changed is not None:
            self._listener(ThrottlesChanged(run.request_id, *changed))

    # -- progress and the end --------------------------------------------------------------------

    def _measure(self, run: RunState, tasks: Sequence[TaskRecord]) -> None:
        """Every replica's progress (:attr:`RunState.measured`) and the brokers that did not answer
        in time (:attr:`RunState.silent`)."""
        if not run.tiered_read:
            run.tiered, run.tiered_read = tiered_copies(self._admin, tasks), True
        run.measured, run.silent = measure(self._admin, tasks, run.tiered, run.measured)

    def _report_progress(self, run: RunState) -> None:
        """Tell the listeners, and now and then the journal, what this poll measured (a move
        submitted since counts as still to copy)."""
        tasks = self._journal.tasks(run.request_id)
        replicas = run.measured
        progress = total_progress(replicas)
        now = self._clock()
        run.history = run.history.add(now, replicas)
        done = sum(1 for t in tasks if t.state is TaskState.DONE)
        moving = tuple(t.tp for t in tasks if t.state is TaskState.SUBMITTED)
        eta = run.history.estimate(replicas)
        run.eta_s = eta.eta_s
        # Every few seconds, and once more when every move has ended (the timeline's last point).
        # Not at every poll while nothing is in flight: a long freeze would fill the journal.
        ended = all(t.state.is_final for t in tasks)
        if ended or run.sampled_at is None or now - run.sampled_at >= SAMPLE_EVERY_S:
            self._journal.record_progress(run.request_id, by_broker(replicas), eta.eta_s)
            run.sampled_at = now
        steps = _steps_done(tasks, run.step_sent)
        counts = (done, len(tasks), len(moving))
        update = ProgressUpdate(run.request_id, progress, eta, *counts, replicas, moving, steps, run.silent)
        self._listener(update)


def _steps_done(tasks: Sequence[TaskRecord], sent: Mapping[int, int]) -> tuple[int, int] | None:
    """Single-replica steps done of all steps, over the tasks made one replica at a time."""
    stepped = [t for t in tasks if t.steps and t.state is not TaskState.CANCELLED]
    if not stepped:
        return None
    total = sum(len(t.steps) for t in stepped)
    done = sum(len(t.steps) if t.state is TaskState.DONE else max(0, sent.get(t.id, 1) - 1) for t in stepped)
    return done, total
