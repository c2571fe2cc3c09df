"""``ferry cancel``'s core against the KRaft-like FakeAdmin: what stops, what stays, what is cleaned."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from support.fake_admin import FakeAdmin

from ferry.errors import KafkaError, PreconditionError
from ferry.execute import throttles as thr
from ferry.execute.cancel import Scope, cancel
from ferry.execute.journal import Journal
from ferry.execute.options import ExecuteOptions
from ferry.execute.records import ConfigKey, ThrottleRecord
from ferry.execute.states import RequestState, TaskState
from ferry.model import Broker, Move, Plan, TopicPartition

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    with Journal.open(tmp_path / "j.sqlite") as j:
        yield j


@pytest.fixture
def admin() -> FakeAdmin:
    fake = FakeAdmin.of(Broker(b) for b in range(1, 7))
    fake.create_topic("t", {0: [1, 2, 3], 1: [2, 3, 4]})
    fake.produce("t", 10_000_000)
    return fake


def _start(admin: FakeAdmin, journal: Journal, moves: list[Move], *, submit: int | None = None) -> int:
    """Record a throttled request and submit its first ``submit`` moves, as the executor would."""
    plan = Plan.of(moves)
    needed = thr.desired(thr.required(plan.moves, 1000), {})
    rid = journal.record_request(
        plan,
        bootstrap="b",
        options=ExecuteOptions(throttle=1000),
        throttles=[ThrottleRecord(k, None, v) for k, v in needed.items()],
    )
    tasks = journal.tasks(rid)[: len(moves) if submit is None else submit]
    journal.set_task_states([t.id for t in tasks], TaskState.SUBMITTED, batch=1)
    values = thr.desired(thr.required(tasks, 1000), {})
    journal.set_throttles_applied(rid, values)
    admin.alter_configs(values)
    assert admin.alter_reassignments({t.tp: t.target for t in tasks}) == {t.tp: None for t in tasks}
    return rid


def test_cancel_keeps_what_an_earlier_re_targeted_move_brought_in(admin: FakeAdmin, journal: Journal) -> None:
    rid = _start(admin, journal, [Move(T0, (1, 2, 3), (1, 2, 5))])
    admin.start_reassignment(T0, (1, 2, 4))  # re-targeted: 5 becomes a removing replica
    outcome = cancel(admin, journal, Scope(request=rid))
    assert outcome.stopped == (T0,)
    assert admin.list_reassignments() == ()
    (state,) = [p for p in admin.describe_partitions(["t"]) if p.tp == T0]
    assert sorted(state.replicas) == [1, 2, 3, 5]
    assert outcome.kept == {T0: state.replicas}
    assert admin.configs == {}
    assert [t.state for t in journal.tasks(rid)] == [TaskState.CANCELLED]
    assert journal.request(rid).state is RequestState.CANCELLED
    assert outcome.requests == (rid,)


def test_cancel_with_nothing_joined_reverts_the_move(admin: FakeAdmin, journal: Journal) -> None:
    rid = _start(admin, journal, [Move(T0, (1, 2, 3), (3, 4, 5))])
    outcome = cancel(admin, journal, Scope(partition=T0))
    assert outcome.kept == {}
    # KRaft keeps the merged order (target first), so only the set is the original one.
    assert sorted({p.tp: p.replicas for p in admin.describe_partitions(["t"])}[T0]) == [1, 2, 3]
    assert admin.configs == {}
    assert journal.request(rid).state is RequestState.CANCELLED


def test_cancelling_one_partition_leaves_the_rest_of_the_request_and_its_throttles(
    admin: FakeAdmin, journal: Journal
) -> None:
    rid = _start(admin, journal, [Move(T0, (1, 2, 3), (1, 2, 5)), Move(T1, (2, 3, 4), (2, 3, 6))])
    cancel(admin, journal, Scope(partition=T0))
    assert [t.state for t in journal.tasks(rid)] == [TaskState.CANCELLED, TaskState.SUBMITTED]
    assert journal.request(rid).state is RequestState.RECORDED  # its executor goes on with t-1
    follower = [v for k, v in admin.configs.items() if k.key == thr.FOLLOWER_REPLICAS]
    assert follower == ["1:6"]  # t-0's entry went with its move
    assert [r.tp for r in admin.list_reassignments()] == [T1]


def test_pending_moves_of_the_scope_are_never_submitted(admin: FakeAdmin, journal: Journal) -> None:
    rid = _start(admin, journal, [Move(T0, (1, 2, 3), (1, 2, 5)), Move(T1, (2, 3, 4), (2, 3, 6))], submit=1)
    outcome = cancel(admin, journal, Scope(request=rid))
    assert (outcome.stopped, outcome.pending) == ((T0,), 1)
    assert all(t.state is TaskState.CANCELLED for t in journal.tasks(rid))


def test_all_cancels_foreign_moves_only_when_allowed(admin: FakeAdmin, journal: Journal) -> None:
    admin.alter_configs(thr.desired(thr.required([Move(T1, (2, 3, 4), (2, 3, 6))], 1000), {}))
    admin.start_reassignment(T1, (2, 3, 6))
    with pytest.raises(PreconditionError, match="nothing to cancel"):
        cancel(admin, journal, Scope(everything=True))
    outcome = cancel(admin, journal, Scope(everything=True, foreign=True))
    assert outcome.foreign == (T1,)
    assert admin.list_reassignments() == ()


def test_an_unknown_request_is_an_error(journal: Journal, admin: FakeAdmin) -> None:
    with pytest.raises(PreconditionError, match="no request 42"):
        cancel(admin, journal, Scope(request=42))


def test_a_move_that_ended_at_its_target_before_the_cancel_is_done_not_cancelled(
    admin: FakeAdmin, journal: Journal
) -> None:
    # The executor died (kill -9) after submitting both; t-0's move then finished on its own.
    rid = _start(admin, journal, [Move(T0, (1, 2, 3), (1, 2, 5)), Move(T1, (2, 3, 4), (2, 3, 6))])
    moving = admin.partitions[T0].moving
    assert moving is not None
    admin._complete(admin.partitions[T0], moving)
    outcome = cancel(admin, journal, Scope(request=rid))
    assert (outcome.stopped, outcome.finished) == ((T1,), (T0,))
    assert [t.state for t in journal.tasks(rid)] == [TaskState.DONE, TaskState.CANCELLED]
    assert journal.request(rid).state is RequestState.CANCELLED
    assert admin.configs == {}


def test_a_request_whose_every_move_had_ended_is_left_to_its_executor_to_end(
    admin: FakeAdmin, journal: Journal
) -> None:
    rid = _start(admin, journal, [Move(T0, (1, 2, 3), (1, 2, 5))])
    moving = admin.partitions[T0].moving
    assert moving is not None
    admin._complete(admin.partitions[T0], moving)
    outcome = cancel(admin, journal, Scope(request=rid))
    assert (outcome.stopped, outcome.finished, outcome.requests) == ((), (T0,), ())
    assert [t.state for t in journal.tasks(rid)] == [TaskState.DONE]
    assert journal.request(rid).state is RequestState.RECORDED  # not cancelled: nothing was


def test_a_cancel_that_cannot_restore_throttles_leaves_the_request_open_for_resume(
    admin: FakeAdmin, journal: Journal
) -> None:
    rid = _start(admin, journal, [Move(T0, (1, 2, 3), (1, 2, 5))])
    gone = admin.brokers.pop(5)  # the receiving broker is down: its throttle rate cannot be reset
    with pytest.raises(KafkaError, match="UnknownBrokerIdError"):
        cancel(admin, journal, Scope(request=rid))
    assert [t.state for t in journal.tasks(rid)] == [TaskState.CANCELLED]
    assert not journal.request(rid).state.is_final  # so 'ferry resume' still cleans up
    assert any(t.applied is not None for t in journal.throttles(rid))
    admin.brokers[5] = gone


def test_a_finished_move_is_found_done_through_metadata_that_lags_a_moment(
    admin: FakeAdmin, journal: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The broker answering metadata was just resumed: its first answer predates the move's end.
    rid = _start(admin, journal, [Move(T0, (1, 2, 3), (1, 2, 5))])
    before = admin.describe_partitions(["t"])
    moving = admin.partitions[T0].moving
    assert moving is not None
    admin._complete(admin.partitions[T0], moving)
    answers = iter([before])
    real = admin.describe_partitions
    monkeypatch.setattr(admin, "describe_partitions", lambda topics=None: next(answers, None) or real(topics))
    monkeypatch.setattr("ferry.execute.concurrent.LOOK_AGAIN_S", 0.0)
    outcome = cancel(admin, journal, Scope(request=rid))
    assert outcome.finished == (T0,)
    assert [t.state for t in journal.tasks(rid)] == [TaskState.DONE]


def _executor_submits_during_the_cancel(
    admin: FakeAdmin, journal: Journal, rid: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Right after the cancel lists what is in flight, an executor claims the pending task and sends it."""
    real = admin.list_reassignments

    def listing_then_executor(topics: object = None) -> object:
        listed = real()
        monkeypatch.setattr(admin, "list_reassignments", real)
        pending = journal.tasks(rid, [TaskState.PENDING])
        claimed = journal.transition_if([t.id for t in pending], TaskState.PENDING, TaskState.SUBMITTED)
        assert admin.alter_reassignments({t.tp: t.target for t in pending if t.id in claimed})
        return listed

    monkeypatch.setattr(admin, "list_reassignments", listing_then_executor)
    monkeypatch.setattr("ferry.execute.concurrent.LOOK_AGAIN_S", 0.0)


def test_a_move_an_executor_sends_while_the_cancel_runs_is_stopped_too(
    admin: FakeAdmin, journal: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    rid = _start(admin, journal, [Move(T0, (1, 2, 3), (1, 2, 5)), Move(T1, (2, 3, 4), (2, 3, 6))], submit=1)
    admin.alter_configs(thr.desired(thr.required(journal.tasks(rid), 1000), {}))  # T1's copy is held too
    _executor_submits_during_the_cancel(admin, journal, rid, monkeypatch)
    outcome = cancel(admin, journal, Scope(request=rid))
    assert admin.list_reassignments() == ()
    assert {p.tp: p.replicas for p in admin.describe_partitions(["t"])} == {T0: (1, 2, 3), T1: (2, 3, 4)}
    assert [t.state for t in journal.tasks(rid)] == [TaskState.CANCELLED, TaskState.CANCELLED]
    assert outcome.stopped == (T0, T1)


def test_a_move_an_executor_sends_and_that_ends_at_once_during_the_cancel_is_done(
    admin: FakeAdmin, journal: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    rid = _start(admin, journal, [Move(T0, (1, 2, 3), (1, 2, 5)), Move(T1, (2, 3, 4), (2, 3, 6))], submit=1)
    admin.partitions[T1].size = 0  # nothing to copy: the move ends before anyone can stop it
    _executor_submits_during_the_cancel(admin, journal, rid, monkeypatch)
    outcome = cancel(admin, journal, Scope(request=rid))
    assert {p.tp: p.replicas for p in admin.describe_partitions(["t"])} == {T0: (1, 2, 3), T1: (2, 3, 6)}
    assert [t.state for t in journal.tasks(rid)] == [TaskState.CANCELLED, TaskState.DONE]
    assert (outcome.stopped, outcome.finished) == ((T0,), (T1,))


@dataclass
class _LandsAfterSettling(FakeAdmin):
    """A copy of an earlier throttle write, unanswered then, lands right after the next write."""

    late: dict[ConfigKey, str | None] = field(default_factory=dict)
    settle_in_s: float = 0.0

    def alter_configs(self, writes: Mapping[ConfigKey, str | None]) -> None:
        super().alter_configs(writes)
        landing, self.late = self.late, {}
        super().alter_configs(landing)

    def config_writes_settle_in(self) -> float:
        return self.settle_in_s


def test_a_throttle_write_landing_after_the_cancel_settled_is_put_back_once_none_can_land(
    journal: Journal,
) -> None:
    admin = _LandsAfterSettling.of(Broker(b) for b in range(1, 7))
    admin.create_topic("t", {0: [1, 2, 3], 1: [2, 3, 4]})
    admin.produce("t", 10_000_000)
    rid = _start(admin, journal, [Move(T0, (1, 2, 3), (1, 2, 5))])
    admin.late, admin.settle_in_s = dict(admin.configs), 60.0  # the run's first write, again
    waited: list[float] = []

    def wait(seconds: float) -> None:
        waited.append(seconds)
        admin.settle_in_s = 0.0

    outcome = cancel(admin, journal, Scope(request=rid), wait)
    assert waited == [60.0]
    assert admin.configs == {}
    assert all(t.applied is None for t in journal.throttles(rid))
    assert outcome.stopped == (T0,)
    assert journal.request(rid).state is RequestState.CANCELLED
