"""The executor loop against a small in-memory admin: limits, throttles, cleanup, outcomes."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

import pytest
from support.exec_fake import ExecFakeAdmin

from ferry.errors import ExecutionIncomplete, KafkaError, PreconditionError
from ferry.execute.batching import Limits
from ferry.execute.events import (
    BatchSubmitted,
    ClusterUnreachable,
    Event,
    LateWritesAwaited,
    ProgressUpdate,
    WaitingForForeign,
)
from ferry.execute.executor import Executor
from ferry.execute.journal import Journal
from ferry.execute.options import ExecuteOptions
from ferry.execute.progress import next_poll_in
from ferry.execute.records import ConfigKey, ResourceType
from ferry.execute.states import RequestState, TaskState
from ferry.execute.throttles import FOLLOWER_RATE, LEADER_REPLICAS
from ferry.kafka.admin import OngoingReassignment, ReplicaSizes
from ferry.model import Move, Plan, TopicPartition

ORIGINAL = {TopicPartition("t", p): (1 + p % 2, 2 + p % 2) for p in range(6)}
TARGETS = {tp: (r[0], 4 if r[1] == 3 else 3) for tp, r in ORIGINAL.items()}
PRE_EXISTING = {
    ConfigKey(ResourceType.TOPIC, "t", LEADER_REPLICAS): "9:9",
    ConfigKey(ResourceType.BROKER, "3", FOLLOWER_RATE): "123",
}


def _plan() -> Plan:
    return Plan.of(Move(tp, ORIGINAL[tp], TARGETS[tp], 100) for tp in ORIGINAL)


class Interrupt(Exception):
    """Stands in for Ctrl-C / SIGTERM."""


def _executor(
    admin: ExecFakeAdmin, journal: Journal, events: list[Event], *, stop_after: int | None = None
) -> Executor:
    sleeps = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if stop_after is not None and len(sleeps) >= stop_after:
            raise Interrupt

    ticks = iter(range(10**6))
    return Executor(admin, journal, listener=events.append, clock=lambda: float(next(ticks)), sleep=sleep)


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    with Journal.open(tmp_path / "j.sqlite") as j:
        yield j  # type: ignore[misc]


def _admin() -> ExecFakeAdmin:
    admin = ExecFakeAdmin(ORIGINAL)
    admin.configs.update(PRE_EXISTING)
    return admin


def test_happy_path_reaches_targets_within_limits_and_restores_throttles(journal: Journal) -> None:
    admin, events = _admin(), []
    executor = _executor(admin, journal, events)
    options = ExecuteOptions(throttle=1000, limits=Limits(max_moves_per_broker=2))
    rid = executor.prepare(_plan(), bootstrap="fake:9092", options=options)
    recorded = {t.config: t.previous for t in journal.throttles(rid)}
    assert recorded[ConfigKey(ResourceType.TOPIC, "t", LEADER_REPLICAS)] == "9:9"
    executor.run(rid)
    assert admin.replicas == TARGETS
    assert max(admin.peak_per_broker.values()) <= 2
    assert len([e for e in events if isinstance(e, BatchSubmitted)]) > 1
    # Throttles were set while moving (merged with theirs) and are back to exactly what was there.
    assert any(
        w.get(ConfigKey(ResourceType.TOPIC, "t", LEADER_REPLICAS), "").endswith(",9:9")
        for w in admin.config_writes
    )
    assert admin.configs == PRE_EXISTING
    assert all(t.applied is None for t in journal.throttles(rid))
    assert {t.state for t in journal.tasks(rid)} == {TaskState.DONE}
    assert journal.request(rid).state is RequestState.DONE
    assert sorted(admin.elected) == sorted(TARGETS)
    last = [e for e in events if isinstance(e, ProgressUpdate)][-1]
    assert last.moves_total == 6
    # The timeline kept in the journal: per receiving broker, ending with everything copied.
    samples = journal.progress_samples(rid)
    assert samples and [s.at for s in samples] == sorted(s.at for s in samples)
    final = {s.broker: s for s in samples if s.at == samples[-1].at}
    assert final and all(s.done == s.total for s in final.values())
    assert set(final) == {b for tp in TARGETS for b in TARGETS[tp] if b not in ORIGINAL[tp]}


def test_foreign_reassignment_is_refused_unless_additional(journal: Journal) -> None:
    admin, events = _admin(), []
    other = TopicPartition("other", 0)
    admin.replicas[other] = (1, 2)
    admin.moving[other] = ((3, 4), 5)
    executor = _executor(admin, journal, events)
    with pytest.raises(PreconditionError, match="not started by ferry are in flight"):
        executor.prepare(_plan(), bootstrap="b", options=ExecuteOptions())
    assert journal.requests() == ()
    rid = executor.prepare(_plan(), bootstrap="b", options=ExecuteOptions(additional=True, limits=Limits(1)))
    executor.run(rid)
    # The foreign move (1,2 -> 3,4) held a slot on 1-4 until it ended; then ferry's moves ran.
    assert all(admin.replicas[tp] == TARGETS[tp] for tp in TARGETS)
    # ... and ferry said so once: t-0 (1,2 -> 1,3), the first move in order, waited on 2 and 3.
    (waiting,) = [e for e in events if isinstance(e, WaitingForForeign)]
    assert (waiting.blockers, waiting.waiting) == ({other: (2, 3)}, 1)


def test_a_foreign_move_that_never_ends_is_reported_every_minute(journal: Journal) -> None:
    admin, events = _admin(), []
    other = TopicPartition("other", 0)
    admin.replicas[other] = (1, 2)
    admin.moving[other] = ((3, 4), 1)
    admin.stuck.add(other)  # e.g. adding replicas on a broker that is down
    executor = _executor(admin, journal, events, stop_after=100)
    options = ExecuteOptions(throttle=10, additional=True, limits=Limits(1))
    rid = executor.prepare(_plan(), bootstrap="b", options=options)
    with pytest.raises(Interrupt):
        executor.run(rid)
    waits = [e for e in events if isinstance(e, WaitingForForeign)]
    # The fake clock ticks twice a poll: 100 polls are ~200 s, so a report at 0 s and every 60 s.
    assert [round(w.for_s, -1) for w in waits] == [0, 60, 120, 180]
    assert all(w.blockers == {other: (2, 3)} for w in waits)
    assert not [e for e in events if isinstance(e, BatchSubmitted)]
    assert admin.configs == PRE_EXISTING
    assert journal.request(rid).state is RequestState.INTERRUPTED


def test_a_foreign_move_on_other_brokers_holds_nothing_back(journal: Journal) -> None:
    admin, events = _admin(), []
    other = TopicPartition("other", 0)
    admin.replicas[other] = (7, 8)
    admin.moving[other] = ((9, 10), 1)
    admin.stuck.add(other)
    executor = _executor(admin, journal, events)
    # Not even against the cluster-wide cap: that one counts ferry's own moves.
    options = ExecuteOptions(additional=True, limits=Limits(1, max_moves=1))
    executor.run(executor.prepare(_plan(), bootstrap="b", options=options))
    assert all(admin.replicas[tp] == TARGETS[tp] for tp in TARGETS)
    assert not [e for e in events if isinstance(e, WaitingForForeign)]


def test_interrupt_restores_throttles_and_marks_the_request(journal: Journal) -> None:
    admin, events = _admin(), []
    executor = _executor(admin, journal, events, stop_after=1)
    rid = executor.prepare(_plan(), bootstrap="b", options=ExecuteOptions(throttle=10))
    with pytest.raises(Interrupt):
        executor.run(rid)
    assert admin.configs == PRE_EXISTING
    assert journal.request(rid).state is RequestState.INTERRUPTED
    assert any(t.state is TaskState.SUBMITTED for t in journal.tasks(rid))


def test_refused_move_fails_the_request_after_cleanup(journal: Journal) -> None:
    admin, events = _admin(), []
    admin.refuse.add(TopicPartition("t", 0))
    executor = _executor(admin, journal, events)
    rid = executor.prepare(_plan(), bootstrap="b", options=ExecuteOptions(throttle=10))
    with pytest.raises(ExecutionIncomplete, match="1 of 6 move"):
        executor.run(rid)
    assert admin.configs == PRE_EXISTING
    assert journal.request(rid).state is RequestState.FAILED
    failed = journal.tasks(rid, [TaskState.FAILED])
    assert [t.tp for t in failed] == [TopicPartition("t", 0)]
    assert failed[0].error and "refused by the controller" in failed[0].error


def test_a_failing_throttle_write_still_ends_interrupted(journal: Journal) -> None:
    admin, events = _admin(), []
    executor = _executor(admin, journal, events)
    rid = executor.prepare(_plan(), bootstrap="b", options=ExecuteOptions(throttle=10))
    admin.fail_alter_configs = True
    with pytest.raises(KafkaError):
        executor.run(rid)
    assert journal.request(rid).state is RequestState.INTERRUPTED


def test_a_partition_moving_under_an_earlier_request_is_re_targeted(journal: Journal) -> None:
    admin, events = _admin(), []
    tp = TopicPartition("t", 0)
    earlier = journal.record_request(Plan.of([Move(tp, ORIGINAL[tp], (5, 6))]), bootstrap="b")
    (old,) = journal.tasks(earlier)
    journal.set_task_states([old.id], TaskState.SUBMITTED, batch=1)
    admin.moving[tp] = ((5, 6), 100)  # still copying when the second request comes
    executor = _executor(admin, journal, events)
    later = executor.prepare(
        Plan.of([Move(tp, ORIGINAL[tp], (1, 4))]), bootstrap="b", options=ExecuteOptions()
    )
    executor.run(later)
    assert admin.replicas[tp] == (1, 4)
    (new,) = journal.tasks(later)
    assert new.state is TaskState.DONE
    assert journal.task(old.id).state is TaskState.CANCELLED
    assert journal.task(old.id).superseded_by == new.id


def test_an_earlier_request_never_moves_a_partition_a_later_one_has_taken(journal: Journal) -> None:
    # Request 1 is recorded with every move pending; request 2 re-targets two of its partitions
    # and finishes first. Request 1 must not send those two back to its own targets afterwards.
    admin, events = _admin(), []
    executor = _executor(admin, journal, events)
    earlier = executor.prepare(_plan(), bootstrap="b", options=ExecuteOptions())
    taken = sorted(ORIGINAL)[:2]
    later = executor.prepare(
        Plan.of(Move(tp, ORIGINAL[tp], (5, 6)) for tp in taken), bootstrap="b", options=ExecuteOptions()
    )
    executor.run(later)
    executor.run(earlier)
    assert {tp: admin.replicas[tp] for tp in taken} == dict.fromkeys(taken, (5, 6))
    assert all(admin.replicas[tp] == TARGETS[tp] for tp in ORIGINAL if tp not in taken)
    old = {t.tp: t for t in journal.tasks(earlier)}
    new = {t.tp: t for t in journal.tasks(later)}
    assert all(old[tp].superseded_by == new[tp].id for tp in taken)
    assert all(old[tp].state is TaskState.CANCELLED for tp in taken)


def test_tasks_cancelled_by_another_process_are_not_submitted(journal: Journal) -> None:
    admin, events = _admin(), []
    executor = _executor(admin, journal, events)
    rid = executor.prepare(_plan(), bootstrap="b", options=ExecuteOptions(limits=Limits(1)))
    first = journal.tasks(rid)[0]
    journal.set_task_states([t.id for t in journal.tasks(rid)[1:]], TaskState.CANCELLED)
    executor.run(rid)
    assert journal.request(rid).state is RequestState.CANCELLED
    assert journal.task(first.id).state is TaskState.DONE
    moved = {tp for tp, r in admin.replicas.items() if r != ORIGINAL[tp]}
    assert moved == {first.tp}


def test_options_round_trip_through_json() -> None:
    options = ExecuteOptions(throttle=5, limits=Limits(3, 7), additional=True, elect=False)
    assert ExecuteOptions.from_json(options.to_json()) == options


class _FastCopy(ExecFakeAdmin):
    """Adding replicas grow 1000 B per measurement (about one per clock tick) of 100000 B."""

    def __init__(self) -> None:
        super().__init__({TopicPartition("t", 0): (1,)}, polls_to_finish=6)
        self.copied = 0

    def describe_replica_sizes(self, topics: Collection[str] | None = None) -> ReplicaSizes:
        sizes = {tp: dict.fromkeys(r, 100_000) for tp, r in self.replicas.items()}
        for tp, (target, _) in self.moving.items():
            self.copied += 1000
            sizes[tp].update(dict.fromkeys(set(target) - set(self.replicas[tp]), self.copied))
        return sizes


def test_the_eta_holds_to_the_throttle_the_run_sets(journal: Journal) -> None:
    admin, events = _FastCopy(), list[Event]()
    executor = _executor(admin, journal, events)
    plan = Plan.of([Move(TopicPartition("t", 0), (1,), (2,), 100_000)])
    executor.run(executor.prepare(plan, bootstrap="b", options=ExecuteOptions(throttle=10)))
    timed = [e for e in events if isinstance(e, ProgressUpdate) and e.estimate.eta_s]
    assert timed, "no ETA while moving"
    for update in timed:
        rate, eta = update.estimate.rate, update.estimate.eta_s
        assert rate is not None and rate > 10  # measured: fast
        assert eta is not None and eta >= update.progress.remaining / 10


def test_polls_sooner_when_the_last_bytes_are_due_within_a_poll() -> None:
    assert next_poll_in(1.0, None) == 1.0  # no estimate yet
    assert next_poll_in(1.0, 30.0) == 1.0
    assert next_poll_in(2.0, 1.5) == 0.5  # due within a poll: a quarter of one, whatever the ETA says
    assert next_poll_in(1.0, 0.7) == 0.25
    assert next_poll_in(1.0, 0.0) == 0.25  # bytes all there, the move not ended yet: not a busy loop


def test_a_cluster_unreachable_for_a_few_polls_is_ridden_out(journal: Journal) -> None:
    admin, events = _admin(), []
    ticks = iter(range(10**6))
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 2:
            admin.unreachable_polls = 3  # a broker restarting: three polls fail
            admin.unreachable_submits = 1  # and the next submission is lost on the way

    executor = Executor(admin, journal, listener=events.append, clock=lambda: float(next(ticks)), sleep=sleep)
    rid = executor.prepare(_plan(), bootstrap="b", options=ExecuteOptions(throttle=1000, limits=Limits(1)))
    executor.run(rid)
    assert admin.replicas == TARGETS
    assert journal.request(rid).state is RequestState.DONE
    assert {t.state for t in journal.tasks(rid)} == {TaskState.DONE}
    unreachable = [e for e in events if isinstance(e, ClusterUnreachable)]
    assert len(unreachable) == 4 and all(e.gives_up_in_s > 0 for e in unreachable)
    assert admin.configs == PRE_EXISTING


def test_a_cluster_unreachable_longer_than_the_ride_out_ends_interrupted(journal: Journal) -> None:
    admin, events = _admin(), []
    ticks = iter(range(10**6))
    executor = Executor(
        admin, journal, listener=events.append, clock=lambda: float(next(ticks)), sleep=lambda _: None,
        ride_out_s=30,
    )  # fmt: skip
    rid = executor.prepare(_plan(), bootstrap="b", options=ExecuteOptions(throttle=1000))
    admin.unreachable_polls = 10**6
    with pytest.raises(KafkaError, match="KafkaConnectionError"):
        executor.run(rid)
    assert journal.request(rid).state is RequestState.INTERRUPTED
    assert 0 < len([e for e in events if isinstance(e, ClusterUnreachable)]) <= 30
    assert admin.configs == PRE_EXISTING  # the restore still reached the cluster


def _at_the_end(action: Callable[[], None], events: list[Event]) -> Callable[[Event], None]:
    """A listener that keeps events and runs ``action`` once every move has ended."""

    def listen(event: Event) -> None:
        events.append(event)
        if isinstance(event, ProgressUpdate) and event.moves_done == event.moves_total:
            action()

    return listen


def test_the_last_throttle_restore_rides_out_a_broker_restarting(journal: Journal) -> None:
    admin, events = _admin(), []
    ticks = iter(range(10**6))

    def broker_restarts() -> None:
        admin.unreachable_config_writes = 2

    listen = _at_the_end(broker_restarts, events)
    executor = Executor(
        admin, journal, listener=listen, clock=lambda: float(next(ticks)), sleep=lambda _: None
    )
    rid = executor.prepare(_plan(), bootstrap="b", options=ExecuteOptions(throttle=1000))
    executor.run(rid)
    assert admin.configs == PRE_EXISTING
    assert journal.request(rid).state is RequestState.DONE
    assert len([e for e in events if isinstance(e, ClusterUnreachable)]) == 2


def test_a_request_a_concurrent_cancel_ended_stays_cancelled_when_the_restore_fails(journal: Journal) -> None:
    admin, events = _admin(), []
    rid_box: list[int] = []

    def cancelled_elsewhere_then_refused() -> None:
        if journal.request(rid_box[0]).state is RequestState.RUNNING:
            journal.set_request_state(rid_box[0], RequestState.CANCELLED, note="cancelled by 'ferry cancel'")
        admin.fail_alter_configs = True  # not authorized any more: not to be ridden out

    listen = _at_the_end(cancelled_elsewhere_then_refused, events)
    ticks = iter(range(10**6))
    executor = Executor(
        admin, journal, listener=listen, clock=lambda: float(next(ticks)), sleep=lambda _: None
    )
    rid_box.append(executor.prepare(_plan(), bootstrap="b", options=ExecuteOptions(throttle=1000)))
    with pytest.raises(KafkaError, match="altering configs failed"):
        executor.run(rid_box[0])
    assert journal.request(rid_box[0]).state is RequestState.CANCELLED


def _held_then_cancelled(
    journal: Journal, arrive: Callable[[ExecFakeAdmin], None]
) -> tuple[ExecFakeAdmin, int]:
    """A batch's request held by a paused broker; meanwhile 'ferry cancel' ends the request; then
    the broker resumes and ``arrive`` lets the held request reach the controller after all."""
    admin, events = _admin(), []
    ticks = iter(range(10**6))
    sleeps: list[float] = []
    rid_box: list[int] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 2:
            tasks = journal.tasks(rid_box[0])
            journal.set_task_states([t.id for t in tasks if not t.state.is_final], TaskState.CANCELLED)
        if len(sleeps) == 3:
            arrive(admin)

    executor = Executor(admin, journal, listener=events.append, clock=lambda: float(next(ticks)), sleep=sleep)
    rid_box.append(executor.prepare(_plan(), bootstrap="b", options=ExecuteOptions(throttle=1000)))
    admin.unreachable_submits = 1
    executor.run(rid_box[0])
    assert admin.late  # the held submission did arrive
    return admin, rid_box[0]


def test_a_submission_that_arrives_after_a_concurrent_cancel_is_withdrawn(journal: Journal) -> None:
    def starts(admin: ExecFakeAdmin) -> None:
        admin.moving.update({tp: (target, 100) for tp, target in admin.late.items()})

    admin, rid = _held_then_cancelled(journal, starts)
    assert admin.moving == {}
    assert admin.replicas == ORIGINAL  # and every late move was withdrawn before it finished
    assert {t.state for t in journal.tasks(rid)} == {TaskState.CANCELLED}


def test_a_late_submission_that_ends_before_it_can_be_withdrawn_is_recorded_done(journal: Journal) -> None:
    def ends_at_once(admin: ExecFakeAdmin) -> None:  # nothing to copy
        admin.replicas.update(admin.late)

    admin, rid = _held_then_cancelled(journal, ends_at_once)
    states = {t.tp: t.state for t in journal.tasks(rid)}
    assert {tp for tp, state in states.items() if state is TaskState.DONE} == set(admin.late)
    assert all(admin.replicas[tp] == ORIGINAL[tp] for tp, s in states.items() if s is TaskState.CANCELLED)


class _CancelledWhileSending(ExecFakeAdmin):
    """'ferry cancel' marks the batch cancelled while it is on its way; its moves end at once."""

    def __init__(self, journal: Journal) -> None:
        super().__init__(ORIGINAL)
        self.journal = journal

    def alter_reassignments(
        self, targets: Mapping[TopicPartition, Sequence[int] | None]
    ) -> Mapping[TopicPartition, str | None]:
        sent = {tp: tuple(t) for tp, t in targets.items() if t is not None}
        if sent:
            open_tasks = self.journal.tasks(states=[TaskState.SUBMITTED])
            self.journal.set_task_states([t.id for t in open_tasks if t.tp in sent], TaskState.CANCELLED)
            self.replicas.update(sent)
            return dict.fromkeys(sent)
        return super().alter_reassignments(targets)


def test_a_move_cancelled_on_its_way_that_ends_at_once_is_recorded_done(journal: Journal) -> None:
    admin, events = _CancelledWhileSending(journal), []
    executor = _executor(admin, journal, events)
    rid = executor.prepare(_plan(), bootstrap="b", options=ExecuteOptions(limits=Limits(1)))
    executor.run(rid)
    assert all(t.state is TaskState.DONE for t in journal.tasks(rid))
    assert all(admin.replicas[t.tp] == t.target for t in journal.tasks(rid))


class _StopsAnswering(ExecFakeAdmin):
    """Broker 4 stops answering (its log dirs go unread) from the ``stop``-th poll to the
    ``back``-th; what is written and sent meanwhile is kept."""

    def __init__(self, stop: int, back: int) -> None:
        super().__init__(ORIGINAL, polls_to_finish=4)
        self.stop, self.back, self.polls = stop, back, 0
        self.written_silent: list[ConfigKey] = []
        self.sent_silent: list[TopicPartition] = []

    def list_reassignments(self, topics: Collection[str] | None = None) -> tuple[OngoingReassignment, ...]:
        self.polls += 1  # the first read of every poll
        self.silent = frozenset({4}) if self.stop <= self.polls < self.back else frozenset()
        return super().list_reassignments(topics)

    def alter_configs(self, writes: Mapping[ConfigKey, str | None]) -> None:
        self.written_silent.extend(writes if self.silent else ())
        super().alter_configs(writes)

    def alter_reassignments(
        self, targets: Mapping[TopicPartition, Sequence[int] | None]
    ) -> Mapping[TopicPartition, str | None]:
        self.sent_silent.extend(targets if self.silent else ())
        return super().alter_reassignments(targets)


def test_a_static_run_writes_no_throttle_to_a_broker_that_did_not_answer_until_it_does(
    journal: Journal,
) -> None:
    """A stopped broker keeps its connections and answers nothing: a config written to it waits
    for it, and the run with it. Moves onto broker 4 go out while it is silent; its rate is
    written once it answers again, and removed at the end."""
    admin, events = _StopsAnswering(stop=2, back=12), []
    executor = _executor(admin, journal, events)
    options = ExecuteOptions(throttle=1000, limits=Limits(max_moves_per_broker=1))
    rid = executor.prepare(_plan(), bootstrap="b", options=options)
    executor.run(rid)
    assert journal.request(rid).state is RequestState.DONE
    assert any(4 in TARGETS[tp] for tp in admin.sent_silent)  # a move onto broker 4 went out meanwhile
    assert admin.written_silent  # other configs were written meanwhile
    assert not any(
        k.resource_type is ResourceType.BROKER and k.resource_name == "4" for k in admin.written_silent
    )
    rate_4 = ConfigKey(ResourceType.BROKER, "4", FOLLOWER_RATE)
    assert any(w.get(rate_4) == "1000" for w in admin.config_writes)  # once broker 4 answered
    assert admin.configs == {}  # every throttle removed at the end


def test_a_static_run_writes_no_throttle_to_a_broker_silent_from_its_first_poll(journal: Journal) -> None:
    """Silent from the first poll on, before any measurement of this run has named it: the poll
    measures before it writes, so broker 4's rate waits until it answers, as in later polls (a
    broker that stops between two polls is the same case)."""
    admin, events = _StopsAnswering(stop=1, back=12), []
    executor = _executor(admin, journal, events)
    options = ExecuteOptions(throttle=1000, limits=Limits(max_moves_per_broker=1))
    onto_4 = Plan.of(Move(tp, ORIGINAL[tp], TARGETS[tp], 100) for tp in ORIGINAL if 4 in TARGETS[tp])
    rid = executor.prepare(onto_4, bootstrap="b", options=options)  # the first batch moves onto 4
    executor.run(rid)
    assert journal.request(rid).state is RequestState.DONE
    assert any(4 in TARGETS[tp] for tp in admin.sent_silent)
    assert not any(
        k.resource_type is ResourceType.BROKER and k.resource_name == "4" for k in admin.written_silent
    )
    rate_4 = ConfigKey(ResourceType.BROKER, "4", FOLLOWER_RATE)
    assert any(w.get(rate_4) == "1000" for w in admin.config_writes)
    assert admin.configs == {}


class _ForwardsLate(ExecFakeAdmin):
    """Its second config write times out unanswered, and a broker still holds it: forwarded to the
    controller once a failover ends, it lands after the next write that follows the last move.
    Time passes only as the executor sleeps."""

    def __init__(self) -> None:
        super().__init__(ORIGINAL)
        self.configs.update(PRE_EXISTING)
        self.writes = 0
        self.forwarded: dict[ConfigKey, str | None] = {}

    def alter_configs(self, writes: Mapping[ConfigKey, str | None]) -> None:
        self.writes += 1
        if self.writes == 2:
            self.forwarded, self.settle_in_s = dict(writes), 600.0
            raise KafkaError("altering configs failed: RequestTimedOutError", transient=True)
        super().alter_configs(writes)
        if self.forwarded and not self.moving:
            super().alter_configs(self.forwarded)
            self.forwarded = {}

    def sleep(self, seconds: float) -> None:
        self.settle_in_s = max(0.0, self.settle_in_s - seconds)


def test_a_write_landing_after_the_restore_is_put_back_once_no_more_can_land(journal: Journal) -> None:
    """A config write that failed in a controller failover lands after the run restored its
    throttles: the run waits until no such write can land, reads its configs and puts them back."""
    admin, events = _ForwardsLate(), []
    ticks = iter(range(10**6))
    executor = Executor(
        admin, journal, listener=events.append, clock=lambda: float(next(ticks)), sleep=admin.sleep
    )
    rid = executor.prepare(_plan(), bootstrap="b", options=ExecuteOptions(throttle=1000))
    executor.run(rid)
    assert admin.writes > 2 and not admin.forwarded  # the late write landed
    assert [e.for_s > 0 for e in events if isinstance(e, LateWritesAwaited)] == [True]
    assert admin.configs == PRE_EXISTING
    assert all(t.applied is None for t in journal.throttles(rid))
    assert journal.request(rid).state is RequestState.DONE


def test_an_interrupted_run_leaves_a_write_that_may_land_to_resume(journal: Journal) -> None:
    """Interrupted, the run does not wait for a late write: the journal keeps every config of the
    request unsure, and the resume puts them back."""
    admin, events = _ForwardsLate(), []
    executor = _executor(admin, journal, events, stop_after=3)
    rid = executor.prepare(_plan(), bootstrap="b", options=ExecuteOptions(throttle=1000))
    with pytest.raises(Interrupt):
        executor.run(rid)
    assert not [e for e in events if isinstance(e, LateWritesAwaited)]
    assert all(t.applied is not None for t in journal.throttles(rid))
    admin.settle_in_s = 0.0
    admin.configs.update({ConfigKey(ResourceType.BROKER, "4", FOLLOWER_RATE): "1000"})  # it landed
    _executor(admin, journal, events).resume(rid)
    assert admin.configs == PRE_EXISTING
    assert all(t.applied is None for t in journal.throttles(rid))
