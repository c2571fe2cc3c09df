"""The SQLite journal: recording, state machine enforcement, durability and concurrent readers."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ferry.errors import ExecutionIncomplete, InputError, PreconditionError
from ferry.execute.batching import Limits
from ferry.execute.finish import finish_request
from ferry.execute.journal import SCHEMA_VERSION, Journal, default_journal_path
from ferry.execute.options import ExecuteOptions
from ferry.execute.pace.controller import Health, Pace, Reading, Role, State
from ferry.execute.pace.settings import PaceSettings
from ferry.execute.progress import Progress
from ferry.execute.records import ConfigKey, RequestKind, RequestRecord, ResourceType, ThrottleRecord
from ferry.execute.schema import MIGRATIONS, statements
from ferry.execute.states import IllegalTransition, RequestState, TaskState
from ferry.model import Move, Plan, TopicPartition


class FakeClock:
    """A clock that advances one second per reading, so timestamps are distinct and ordered."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        self.now += 1
        return self.now


def _plan() -> Plan:
    return Plan.of(
        [
            Move(TopicPartition("orders", 0), (1, 2, 3), (3, 4, 5), size_bytes=100),
            Move(TopicPartition("orders", 1), (2, 3, 1), (2, 3, 4), size_bytes=50),
        ]
    )


RATE = ConfigKey(ResourceType.BROKER, "4", "follower.replication.throttled.rate")
TOPIC = ConfigKey(ResourceType.TOPIC, "orders", "leader.replication.throttled.replicas")


def _open(tmp_path: Path) -> Journal:
    return Journal.open(tmp_path / "state" / "journal.sqlite", clock=FakeClock())


def test_default_path_follows_xdg_state_home(tmp_path: Path) -> None:
    xdg = {"XDG_STATE_HOME": str(tmp_path / "xdg")}
    assert default_journal_path(xdg, tmp_path) == tmp_path / "xdg" / "kafka-ferry" / "journal.sqlite"
    expected = tmp_path / ".local" / "state" / "kafka-ferry" / "journal.sqlite"
    assert default_journal_path({}, tmp_path) == expected
    # A relative XDG_STATE_HOME is invalid per the spec and ignored.
    assert default_journal_path({"XDG_STATE_HOME": "rel"}, tmp_path) == expected


def test_opening_sets_wal_full_sync_and_schema_version(tmp_path: Path) -> None:
    with _open(tmp_path) as journal:
        assert journal.schema_version == SCHEMA_VERSION
    conn = sqlite3.connect(tmp_path / "state" / "journal.sqlite")
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_record_request_stores_plan_tasks_and_throttles(tmp_path: Path) -> None:
    throttles = [ThrottleRecord(RATE, previous="1000", planned="5000"), ThrottleRecord(TOPIC, None, "0:1")]
    with _open(tmp_path) as journal:
        rid = journal.record_request(
            _plan(),
            bootstrap="127.0.0.1:9092",
            cluster_id="abc",
            options=ExecuteOptions(limits=Limits(5, 3)),
            throttles=throttles,
        )
        request = journal.request(rid)
        assert request.state is RequestState.RECORDED
        assert request.kind is RequestKind.EXECUTE
        assert request.options == ExecuteOptions(limits=Limits(5, 3))
        assert request.plan["partitions"][0] == {"topic": "orders", "partition": 0, "replicas": [3, 4, 5]}
        tasks = journal.tasks(rid)
        assert [(t.tp.partition, t.original, t.target, t.state) for t in tasks] == [
            (0, (1, 2, 3), (3, 4, 5), TaskState.PENDING),
            (1, (2, 3, 1), (2, 3, 4), TaskState.PENDING),
        ]
        assert tasks[0].adding == (4, 5) and tasks[0].removing == (1, 2)
        assert {t.config: t.previous for t in journal.throttles(rid)} == {RATE: "1000", TOPIC: None}


def test_request_ids_are_monotonic_even_after_rows_are_deleted(tmp_path: Path) -> None:
    with _open(tmp_path) as journal:
        first = journal.record_request(_plan(), bootstrap="b")
        second = journal.record_request(_plan(), bootstrap="b")
        with journal.transaction() as conn:
            conn.execute("DELETE FROM task_log")
            conn.execute("UPDATE tasks SET superseded_by = NULL")  # the second superseded the first
            conn.execute("DELETE FROM tasks WHERE request_id = ?", (second,))
            conn.execute("DELETE FROM requests WHERE id = ?", (second,))
        third = journal.record_request(_plan(), bootstrap="b")
    assert first < second < third


def test_task_state_machine_is_enforced_and_logged(tmp_path: Path) -> None:
    with _open(tmp_path) as journal:
        rid = journal.record_request(_plan(), bootstrap="b")
        t0, t1 = (t.id for t in journal.tasks(rid))
        journal.set_task_states([t0, t1], TaskState.SUBMITTED, batch=1)
        journal.set_task_states([t0], TaskState.DONE)
        with pytest.raises(IllegalTransition, match=r"task \d+: illegal task transition done -> submitted"):
            journal.set_task_states([t0], TaskState.SUBMITTED)
        # All or none: t1 may be cancelled, t0 may not, so neither changes.
        with pytest.raises(IllegalTransition):
            journal.set_task_states([t1, t0], TaskState.CANCELLED)
        assert journal.task(t1).state is TaskState.SUBMITTED
        assert journal.task(t0).batch == 1
        assert journal.task(t0).finished_at is not None
        assert [(a, b) for a, b, _ in journal.task_log(t0)] == [
            (None, TaskState.PENDING),
            (TaskState.PENDING, TaskState.SUBMITTED),
            (TaskState.SUBMITTED, TaskState.DONE),
        ]


def test_request_state_machine_stamps_finish_time(tmp_path: Path) -> None:
    with _open(tmp_path) as journal:
        rid = journal.record_request(_plan(), bootstrap="b")
        journal.set_request_state(rid, RequestState.RUNNING)
        assert journal.request(rid).finished_at is None
        journal.set_request_state(rid, RequestState.DONE, note="all moves done")
        assert journal.request(rid).finished_at is not None
        assert journal.request(rid).note == "all moves done"
        with pytest.raises(IllegalTransition):
            journal.set_request_state(rid, RequestState.RUNNING)
        assert [r.id for r in journal.requests([RequestState.DONE])] == [rid]
        assert journal.requests([RequestState.RUNNING]) == ()


def test_unknown_request_and_task_are_precondition_errors(tmp_path: Path) -> None:
    with _open(tmp_path) as journal:
        with pytest.raises(PreconditionError, match="no request 7"):
            journal.request(7)
        with pytest.raises(PreconditionError, match="no task 9"):
            journal.set_task_states([9], TaskState.SUBMITTED)


def test_supersede_links_a_retargeted_task_to_the_later_request(tmp_path: Path) -> None:
    with _open(tmp_path) as journal:
        first = journal.record_request(_plan(), bootstrap="b")
        old = journal.tasks(first)[0]
        journal.set_task_states([old.id], TaskState.SUBMITTED)
        retarget = Plan.of([Move(old.tp, (1, 2, 3), (1, 4, 5))])
        second = journal.record_request(retarget, bootstrap="b")
        new = journal.tasks(second)[0]
        journal.set_task_states([new.id], TaskState.SUBMITTED)
        assert [t.id for t in journal.active_tasks(old.tp)] == [old.id, new.id]
        journal.supersede(old.id, new.id)
        assert journal.task(old.id).state is TaskState.CANCELLED
        assert journal.task(old.id).superseded_by == new.id
        assert [t.id for t in journal.active_tasks(old.tp)] == [new.id]
        with pytest.raises(PreconditionError, match="cannot supersede"):
            journal.supersede(journal.tasks(first)[1].id, new.id)


def test_only_a_cancelled_task_of_its_own_is_amended_to_done(tmp_path: Path) -> None:
    with _open(tmp_path) as journal:
        rid = journal.record_request(_plan(), bootstrap="b")
        cancelled, pending = journal.tasks(rid)
        journal.set_task_states([cancelled.id], TaskState.SUBMITTED)
        journal.set_task_states([cancelled.id], TaskState.CANCELLED)
        later = journal.record_request(Plan.of([Move(pending.tp, (2, 3, 1), (2, 3, 5))]), bootstrap="b")
        assert journal.task(pending.id).superseded_by == journal.tasks(later)[0].id
        assert journal.correct_to_done([cancelled.id, pending.id, journal.tasks(later)[0].id]) == (
            cancelled.id,
        )
        assert [s for _, s, _ in journal.task_log(cancelled.id)][-2:] == [TaskState.CANCELLED, TaskState.DONE]
        assert journal.task(pending.id).state is TaskState.CANCELLED  # superseded: the later task owns it


def test_a_later_request_supersedes_the_pending_moves_of_its_partitions_at_once(tmp_path: Path) -> None:
    with _open(tmp_path) as journal:
        first = journal.record_request(_plan(), bootstrap="b")
        moving, pending = journal.tasks(first)
        journal.set_task_states([moving.id], TaskState.SUBMITTED)
        both = Plan.of([Move(moving.tp, (3, 4, 5), (1, 4, 5)), Move(pending.tp, (2, 3, 1), (2, 3, 5))])
        second = journal.record_request(both, bootstrap="b")
        _, new_pending = journal.tasks(second)
        # The pending one will never go out; the one in flight is re-targeted when its turn comes.
        assert journal.task(pending.id).state is TaskState.CANCELLED
        assert journal.task(pending.id).superseded_by == new_pending.id
        assert journal.task(moving.id).state is TaskState.SUBMITTED
        assert journal.task(moving.id).superseded_by is None


def test_rollback_request_refers_to_its_origin(tmp_path: Path) -> None:
    with _open(tmp_path) as journal:
        origin = journal.record_request(_plan(), bootstrap="b")
        rollback = journal.record_request(
            _plan(), bootstrap="b", kind=RequestKind.ROLLBACK, origin_request=origin
        )
        assert journal.request(rollback).origin_request == origin
        assert journal.request(rollback).kind is RequestKind.ROLLBACK
        with pytest.raises(sqlite3.IntegrityError):
            journal.record_request(_plan(), bootstrap="b", kind=RequestKind.ROLLBACK, origin_request=999)


def test_throttle_applied_values_are_recorded(tmp_path: Path) -> None:
    with _open(tmp_path) as journal:
        rid = journal.record_request(_plan(), bootstrap="b", throttles=[ThrottleRecord(RATE, None, "10")])
        journal.set_throttles_applied(rid, {RATE: "10"})
        assert journal.throttles(rid)[0].applied == "10"
        journal.set_throttles_applied(rid, {RATE: None})
        assert journal.throttles(rid)[0].applied is None
        with pytest.raises(PreconditionError, match="recorded no throttle"):
            journal.set_throttles_applied(rid, {TOPIC: "x"})


def test_everything_survives_close_and_reopen(tmp_path: Path) -> None:
    with _open(tmp_path) as journal:
        rid = journal.record_request(_plan(), bootstrap="b", throttles=[ThrottleRecord(RATE, "7", "10")])
        task = journal.tasks(rid)[0]
        journal.set_task_states([task.id], TaskState.SUBMITTED, batch=2)
        journal.set_throttles_applied(rid, {RATE: "10"})
    with _open(tmp_path) as reopened:
        assert reopened.schema_version == SCHEMA_VERSION
        assert reopened.task(task.id).state is TaskState.SUBMITTED
        assert reopened.task(task.id).batch == 2
        assert reopened.throttles(rid)[0] == ThrottleRecord(RATE, "7", "10", "10")
        assert reopened.record_request(_plan(), bootstrap="b") > rid


def test_a_reader_sees_committed_state_while_a_writer_holds_a_transaction(tmp_path: Path) -> None:
    with _open(tmp_path) as writer, _open(tmp_path) as reader:
        rid = writer.record_request(_plan(), bootstrap="b")
        task = writer.tasks(rid)[0]
        with writer.transaction() as conn:
            conn.execute("UPDATE tasks SET state = 'submitted' WHERE id = ?", (task.id,))
            # WAL: the reader is not blocked and does not see the uncommitted change.
            assert reader.task(task.id).state is TaskState.PENDING
        assert reader.task(task.id).state is TaskState.SUBMITTED


def test_failed_transaction_leaves_nothing_behind(tmp_path: Path) -> None:
    with _open(tmp_path) as journal:
        bad = [ThrottleRecord(RATE, None, "1"), ThrottleRecord(RATE, None, "2")]  # duplicate key
        with pytest.raises(sqlite3.IntegrityError):
            journal.record_request(_plan(), bootstrap="b", throttles=bad)
        assert journal.requests() == ()
        assert journal.tasks() == ()


def test_newer_schema_is_refused_and_garbage_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    Journal.open(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(PreconditionError, match="schema version 99 is newer"):
        Journal.open(path)
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(InputError, match="not a ferry journal"):
        Journal.open(garbage)


def test_a_requests_options_can_change_while_it_is_open(tmp_path: Path) -> None:
    with _open(tmp_path) as journal:
        rid = journal.record_request(_plan(), bootstrap="b", options=ExecuteOptions(throttle=5))
        paced = ExecuteOptions(throttle=5, pace=PaceSettings(max_throttle=10, period_s=15))
        journal.set_request_options(rid, paced)
        assert journal.request(rid).options == paced


def test_a_version_1_journal_is_upgraded_and_keeps_its_requests(tmp_path: Path) -> None:
    path = tmp_path / "state" / "journal.sqlite"
    path.parent.mkdir()
    conn = sqlite3.connect(path)
    for statement in statements(MIGRATIONS[0]):
        conn.execute(statement)
    conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '1')")
    conn.execute(
        "INSERT INTO requests (kind, bootstrap, plan_json, options_json, state, created_at)"
        " VALUES ('execute', 'b', '{}', '{}', 'done', 1.0)"
    )
    conn.commit()
    conn.close()
    with _open(tmp_path) as journal:
        assert journal.schema_version == SCHEMA_VERSION == 4
        assert [r.id for r in journal.requests()] == [1]
        journal.record_progress(1, {3: Progress(5, 10), 4: Progress(10, 10)}, 2.5)
        samples = journal.progress_samples(1)
        decided = {(2, Role.FOLLOWER): Pace(5_000, 2, State.FLOOR, "produce rate")}
        journal.record_pace(1, decided, {(2, Role.FOLLOWER): Reading(10.0, 4_000.0, 1, Health())})
        journal.record_pace(1, {(2, Role.FOLLOWER): Pace(2_500, 1, State.BACK_OFF, "isr")}, {})
        paced = journal.pace_records(1)
        assert journal.paced_rates(1) == {(2, Role.FOLLOWER): 2_500}
    assert [(s.broker, s.done, s.total, s.eta_s) for s in samples] == [(3, 5, 10, 2.5), (4, 10, 10, 2.5)]
    assert [(r.broker, r.role, r.rate, r.state, r.achieved, r.produce) for r in paced] == [
        (2, Role.FOLLOWER, 5_000, "floor", 10.0, 4_000.0),
        (2, Role.FOLLOWER, 2_500, "back-off", None, None),
    ]


@pytest.fixture
def short_busy_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("ferry.execute.journal.BUSY_TIMEOUT_MS", 100)


def _held(path: Path) -> sqlite3.Connection:
    """Another program's connection holding an exclusive lock on the journal."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    return other


@pytest.mark.usefixtures("short_busy_timeout")
def test_a_journal_locked_by_another_program_is_named_so_when_opened(tmp_path: Path) -> None:
    _open(tmp_path).close()
    other = _held(tmp_path / "state" / "journal.sqlite")
    try:
        with pytest.raises(InputError, match=r"journal\.sqlite: locked by another program"):
            _open(tmp_path)
    finally:
        other.close()


@pytest.mark.usefixtures("short_busy_timeout")
def test_a_write_to_a_journal_locked_meanwhile_is_refused_with_the_same_line(tmp_path: Path) -> None:
    with _open(tmp_path) as journal:
        rid = journal.record_request(_plan(), bootstrap="b")
        other = _held(journal.path)
        try:
            with pytest.raises(InputError, match="locked by another program"):
                journal.set_request_state(rid, RequestState.RUNNING)
        finally:
            other.close()
        journal.set_request_state(rid, RequestState.RUNNING)  # and works once the lock is gone
        assert journal.request(rid).state is RequestState.RUNNING


def test_a_task_keeps_the_dirs_its_move_names_and_the_dirs_its_replicas_were_in(tmp_path: Path) -> None:
    tp = TopicPartition("t", 0)
    named = Move(tp, (1, 2), (1, 3), 10, ("/d/b", "any"))
    plain = Move(TopicPartition("t", 1), (1, 2), (2, 3), 10)
    with _open(tmp_path) as journal:
        rid = journal.record_request(
            Plan.of([named, plain]), bootstrap="b", original_dirs={tp: {1: "/d/a", 2: "/d/a"}}
        )
        first, second = journal.tasks(rid)
    assert (first.log_dirs, first.original_dirs, first.named_dirs) == (
        ("/d/b", "any"),
        ((1, "/d/a"), (2, "/d/a")),
        {1: "/d/b"},
    )
    assert (second.log_dirs, second.original_dirs, second.named_dirs) == (None, (), {})


def test_an_end_another_process_wrote_first_stands(tmp_path: Path) -> None:
    """The executor ending a request races 'ferry cancel' in another process: the first end stands."""
    with _open(tmp_path) as executor, Journal.open(executor.path) as cancel:
        rid = executor.record_request(_plan(), bootstrap="b")
        executor.set_request_state(rid, RequestState.RUNNING)
        cancel.set_request_state(rid, RequestState.CANCELLED, note="cancelled by 'ferry cancel'")
        assert executor.end_request_unless_final(rid, RequestState.DONE) is False
        ended = executor.request(rid)
        assert (ended.state, ended.note) == (RequestState.CANCELLED, "cancelled by 'ferry cancel'")
        other = executor.record_request(_plan(), bootstrap="b")
        assert executor.end_request_unless_final(other, RequestState.CANCELLED, note="n") is True
        assert executor.request(other).state is RequestState.CANCELLED


def test_finishing_a_request_a_cancel_ends_meanwhile_keeps_the_cancel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'ferry cancel' ends the request while the executor works out how it ended (any read the
    executor makes outside its write lets the cancel in): no illegal transition, no failure
    raised for a request that is not the executor's to end any more."""
    with _open(tmp_path) as executor, Journal.open(executor.path) as cancel:
        rid = executor.record_request(_plan(), bootstrap="b")
        executor.set_request_state(rid, RequestState.RUNNING)
        first, second = executor.tasks(rid)
        executor.set_task_states([first.id, second.id], TaskState.SUBMITTED)
        executor.set_task_states([first.id], TaskState.FAILED, error="gone")
        executor.set_task_states([second.id], TaskState.CANCELLED)
        read = executor.request

        def cancel_slips_in(request_id: int) -> RequestRecord:
            seen = read(request_id)
            if not executor._conn.in_transaction and seen.state is RequestState.RUNNING:
                cancel.set_request_state(request_id, RequestState.CANCELLED, note="by cancel")
            return seen

        monkeypatch.setattr(executor, "request", cancel_slips_in)
        try:
            finish_request(None, executor, rid, elect=False, listener=lambda _event: None)  # type: ignore[arg-type]
        except ExecutionIncomplete:
            assert executor.request(rid).state is RequestState.FAILED  # the executor ended it first
        else:
            assert executor.request(rid).state is RequestState.CANCELLED


def test_supersede_leaves_a_task_another_process_ended(tmp_path: Path) -> None:
    with _open(tmp_path) as journal:
        first = journal.record_request(_plan(), bootstrap="b")
        old = journal.tasks(first)[0]
        journal.set_task_states([old.id], TaskState.SUBMITTED)
        second = journal.record_request(Plan.of([Move(old.tp, (1, 2, 3), (1, 4, 5))]), bootstrap="b")
        new = journal.tasks(second)[0]
        journal.set_task_states([old.id], TaskState.CANCELLED)  # a 'ferry cancel' after it was read active
        journal.supersede(old.id, new.id)
        assert journal.task(old.id).state is TaskState.CANCELLED
        assert journal.task(old.id).superseded_by is None
