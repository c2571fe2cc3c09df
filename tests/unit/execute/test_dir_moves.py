"""Moves that name log dirs (JBOD) in the executor: a new replica created in its dir, a replica
copied between the dirs of its broker under the per-broker limits and the log-dir throttle, a
refused dir, cancel and resume."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
from support.exec_fake import ExecFakeAdmin
from support.fake_dirs import CORDONED_DIR

from ferry.errors import ExecutionIncomplete
from ferry.execute.cancel import Scope, cancel
from ferry.execute.dir_moves import DirMoves, dir_changes, dir_progress
from ferry.execute.events import Event, ProgressUpdate
from ferry.execute.executor import Executor
from ferry.execute.journal import Journal
from ferry.execute.options import ExecuteOptions
from ferry.execute.progress import Progress
from ferry.execute.records import ConfigKey, ResourceType
from ferry.execute.resume import reconcile
from ferry.execute.states import RequestState, TaskState
from ferry.execute.throttles import DIR_RATE
from ferry.kafka.admin import ReplicaTarget
from ferry.model import Broker, ClusterSnapshot, Move, PartitionState, Plan, TopicPartition

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))
DIRS = {b: (f"/d{b}/a", f"/d{b}/b") for b in (1, 2, 3)}


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    with Journal.open(tmp_path / "j.sqlite") as j:
        yield j  # type: ignore[misc]


def _admin(replicas: dict[TopicPartition, tuple[int, ...]]) -> ExecFakeAdmin:
    admin = ExecFakeAdmin(replicas)
    admin.log_dirs.dirs.update(DIRS)
    return admin


def _run(
    admin: ExecFakeAdmin, journal: Journal, plan: Plan, options: ExecuteOptions
) -> tuple[int, list[Event]]:
    events: list[Event] = []
    ticks = iter(range(10**6))
    executor = Executor(
        admin, journal, listener=events.append, clock=lambda: float(next(ticks)), sleep=lambda s: None
    )
    rid = executor.prepare(plan, bootstrap="b", options=options)
    executor.run(rid)
    return rid, events


def test_a_replica_moves_between_the_dirs_of_its_broker_throttled_and_the_throttle_goes(
    journal: Journal,
) -> None:
    admin = _admin({T0: (1, 2)})
    plan = Plan.of([Move(T0, (1, 2), (1, 2), 100, ("/d1/b", "any"))])
    rid, events = _run(admin, journal, plan, ExecuteOptions(throttle=1000, dir_throttle=500))
    assert journal.request(rid).state is RequestState.DONE
    assert admin.log_dirs.dir_of(T0, 1) == "/d1/b" and admin.log_dirs.dir_of(T0, 2) == "/d2/a"
    assert admin.log_dirs.future == {}
    assert admin.moving == {} and admin.peak_per_broker == {}  # no reassignment was sent
    rate = ConfigKey(ResourceType.BROKER, "1", DIR_RATE)
    assert any(w.get(rate) == "500" for w in admin.config_writes)
    assert admin.configs == {}
    (task,) = journal.tasks(rid)
    assert task.original_dirs == ((1, "/d1/a"), (2, "/d2/a"))
    updates = [e for e in events if isinstance(e, ProgressUpdate)]
    assert updates[-1].progress == Progress(100, 100)
    assert any(0 < u.progress.done < 100 for u in updates)  # the future log, half copied


def test_a_new_replica_is_created_in_its_dir_and_never_copied_twice(journal: Journal) -> None:
    admin = _admin({T0: (1, 2)})
    plan = Plan.of([Move(T0, (1, 2), (1, 3), 100, ("any", "/d3/b"))])
    rid, _ = _run(admin, journal, plan, ExecuteOptions(throttle=1000))
    assert journal.request(rid).state is RequestState.DONE
    assert admin.replicas[T0] == (1, 3)
    assert admin.log_dirs.dir_of(T0, 3) == "/d3/b"
    assert admin.log_dirs.peak_future_per_broker[3] == 0  # the preferred dir, set before the move


@pytest.mark.parametrize(
    ("per_broker", "brokers", "peak", "at_once"), [(1, None, 1, 2), (2, None, 2, 2), (2, 1, 2, 1)]
)
def test_copies_between_dirs_keep_to_the_limits(
    journal: Journal, per_broker: int, brokers: int | None, peak: int, at_once: int
) -> None:
    admin = _admin({T0: (1, 2), T1: (1, 2), T2: (1, 2)})
    plan = Plan.of([Move(tp, (1, 2), (1, 2), 100, ("/d1/b", "/d2/b")) for tp in (T0, T1, T2)])
    options = ExecuteOptions(max_dir_moves_per_broker=per_broker, max_dir_move_brokers=brokers)
    rid, _ = _run(admin, journal, plan, options)
    assert journal.request(rid).state is RequestState.DONE
    assert {admin.log_dirs.dir_of(tp, b) for tp in (T0, T1, T2) for b in (1, 2)} == {"/d1/b", "/d2/b"}
    assert max(admin.log_dirs.peak_future_per_broker.values()) == peak
    assert admin.log_dirs.peak_future_brokers == at_once


def test_a_cordoned_dir_fails_the_move_with_the_brokers_reason(journal: Journal) -> None:
    admin = _admin({T0: (1, 2), T1: (1, 2)})
    admin.log_dirs.cordoned_dirs.add("/d3/b")
    plan = Plan.of(
        [Move(T0, (1, 2), (1, 3), 100, ("any", "/d3/b")), Move(T1, (1, 2), (1, 2), 100, ("/d1/b", "any"))]
    )
    with pytest.raises(ExecutionIncomplete, match="1 of 2 move"):
        _run(admin, journal, plan, ExecuteOptions())
    first, second = journal.tasks(journal.requests()[-1].id)
    assert (
        first.state is TaskState.FAILED
        and first.error == f"refused by a broker: broker 3 refused the log dir: {CORDONED_DIR}"
    )
    assert admin.replicas[T0] == (1, 2)  # the reassignment was never sent
    assert second.state is TaskState.DONE


def test_cancel_leaves_a_replica_in_the_dir_it_was_in(journal: Journal) -> None:
    admin = _admin({T0: (1, 2)})
    admin.log_dirs.stuck_dirs = True
    seen: list[dict[object, object]] = []

    def sleep(_: float) -> None:
        # 'ferry cancel' from another process while the copy is in flight.
        if admin.log_dirs.future and not seen:
            seen.append(dict(admin.log_dirs.future))
            assert cancel(admin, journal, Scope(request=rid)).stopped == (T0,)

    ticks = iter(range(10**6))
    executor = Executor(admin, journal, clock=lambda: float(next(ticks)), sleep=sleep)
    plan = Plan.of([Move(T0, (1, 2), (1, 2), 100, ("/d1/b", "any"))])
    rid = executor.prepare(plan, bootstrap="b", options=ExecuteOptions(throttle=10))
    executor.run(rid)
    assert seen == [{(T0, 1): ("/d1/b", 2)}]
    assert admin.log_dirs.future == {} and admin.log_dirs.dir_of(T0, 1) == "/d1/a"
    assert journal.tasks(rid)[0].state is TaskState.CANCELLED
    assert journal.request(rid).state is RequestState.CANCELLED
    assert admin.configs == {}


class _CancelledWhileStarting(ExecFakeAdmin):
    """'ferry cancel' from another process runs just as the executor starts the copy: it marks the
    task cancelled and finds no copy to stop yet, then the executor's request starts one."""

    journal: Journal
    request: int
    cancels = 0

    def alter_replica_log_dirs(
        self, targets: Mapping[ReplicaTarget, str]
    ) -> Mapping[ReplicaTarget, str | None]:
        if self.cancels == 0 and any(path == "/d1/b" for path in targets.values()):
            self.cancels += 1
            cancel(self, self.journal, Scope(request=self.request))
        return super().alter_replica_log_dirs(targets)


def test_a_copy_started_as_a_cancel_marks_its_task_is_stopped_by_the_executor(journal: Journal) -> None:
    admin = _CancelledWhileStarting({T0: (1, 2)})
    admin.log_dirs.dirs.update(DIRS)
    admin.log_dirs.stuck_dirs = True
    admin.journal = journal
    executor = Executor(admin, journal, clock=iter(range(10**6)).__next__, sleep=lambda s: None)
    plan = Plan.of([Move(T0, (1, 2), (1, 2), 100, ("/d1/b", "any"))])
    admin.request = executor.prepare(plan, bootstrap="b", options=ExecuteOptions(throttle=10))
    executor.run(admin.request)
    assert admin.cancels == 1
    assert admin.log_dirs.future == {} and admin.log_dirs.dir_of(T0, 1) == "/d1/a"
    assert journal.tasks(admin.request)[0].state is TaskState.CANCELLED


class _StopSeesTheMark(ExecFakeAdmin):
    """Records the journal state of every task when a copy is sent back to its own dir."""

    journal: Journal
    states: list[TaskState]

    def alter_replica_log_dirs(
        self, targets: Mapping[ReplicaTarget, str]
    ) -> Mapping[ReplicaTarget, str | None]:
        if any(path == "/d1/a" for path in targets.values()):
            self.states.extend(t.state for t in self.journal.tasks())
        return super().alter_replica_log_dirs(targets)


def test_cancel_marks_a_task_before_it_stops_its_copy(journal: Journal) -> None:
    """Stopped first, an executor's poll between the stop and the mark starts the copy again."""
    admin = _StopSeesTheMark({T0: (1, 2)})
    admin.log_dirs.dirs.update(DIRS)
    admin.log_dirs.stuck_dirs = True
    admin.journal, admin.states = journal, []
    executor = Executor(admin, journal, clock=iter(range(10**6)).__next__, sleep=lambda s: None)
    plan = Plan.of([Move(T0, (1, 2), (1, 2), 100, ("/d1/b", "any"))])
    rid = executor.prepare(plan, bootstrap="b", options=ExecuteOptions(throttle=10))
    journal.set_task_states([t.id for t in journal.tasks(rid)], TaskState.SUBMITTED, batch=1)
    DirMoves(admin).advance(journal.tasks(rid))  # the copy in flight
    assert admin.log_dirs.future
    assert cancel(admin, journal, Scope(request=rid)).stopped == (T0,)
    assert admin.states == [TaskState.CANCELLED]
    assert admin.log_dirs.future == {}


def test_resume_keeps_a_move_at_its_replicas_until_they_are_in_their_dirs(journal: Journal) -> None:
    admin = _admin({T0: (1, 2)})
    rid = journal.record_request(Plan.of([Move(T0, (1, 2), (1, 2), 100, ("/d1/b", "any"))]), bootstrap="b")
    (task,) = journal.tasks(rid)
    journal.set_task_states([task.id], TaskState.SUBMITTED)
    found = reconcile(admin, journal.tasks(rid))
    assert [t.tp for t in found.moving] == [T0] and found.done == ()


def test_only_replicas_that_change_dir_count_as_copies(journal: Journal) -> None:
    rid = journal.record_request(
        Plan.of([Move(T0, (1, 2), (1, 3), 100, ("/d1/a", "/d3/b"))]),
        bootstrap="b",
        original_dirs={T0: {1: "/d1/b", 2: "/d2/a"}},
    )
    (task,) = journal.tasks(rid)
    assert dir_changes(task) == {1: "/d1/a"}  # broker 3's replica is new: it is an adding one
    assert dir_progress(task, {}, finished=True)[0].progress == Progress(100, 100)


def test_a_copy_about_to_end_frees_its_slot_for_the_next(journal: Journal) -> None:
    admin = _admin({T0: (1, 2), T1: (1, 2)})
    rid = journal.record_request(
        Plan.of([Move(tp, (1, 2), (1, 2), 100, ("/d1/b", "any")) for tp in (T0, T1)]), bootstrap="b"
    )
    tasks = journal.tasks(rid)
    DirMoves(admin, per_broker=1).advance(tasks)
    assert set(admin.log_dirs.future) == {(T0, 1)}  # one at a time
    # The fake's copies are half done at the next look: with 50 bytes left under a lead of 60,
    # the first no longer holds the slot.
    DirMoves(admin, per_broker=1, lead_bytes=60).advance(tasks)
    assert set(admin.log_dirs.future) == {(T0, 1), (T1, 1)}


def test_the_dirs_a_request_records_come_from_the_snapshot_it_was_checked_against(journal: Journal) -> None:
    # The snapshot execute takes for its safety checks holds every replica's dir: the request
    # records those (a rollback puts replicas back there) without asking the brokers again.
    admin = _admin({T0: (1, 2)})
    now = ClusterSnapshot.of(
        [Broker(b) for b in (1, 2, 3)],
        [PartitionState(T0, (1, 2), replica_dirs=((1, "/d1/b"), (2, "/d2/b")))],
    )
    plan = Plan.of([Move(T0, (1, 2), (1, 2), 100, ("/d1/a", "any"))])
    rid = Executor(admin, journal).prepare(plan, bootstrap="b", options=ExecuteOptions(), now=now)
    (task,) = journal.tasks(rid)
    assert task.original_dirs == ((1, "/d1/b"), (2, "/d2/b"))
