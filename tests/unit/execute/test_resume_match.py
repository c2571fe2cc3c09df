"""Which interrupted request a re-run of ``ferry execute`` continues: same plan, same cluster."""

from __future__ import annotations

from pathlib import Path

from ferry.execute import lock
from ferry.execute.journal import Journal
from ferry.execute.records import TaskRecord
from ferry.execute.resume import resumable_request, same_plan
from ferry.execute.states import RequestState, TaskState
from ferry.model import Move, Plan, TopicPartition

A, B, C = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)


def _task(tp: TopicPartition, target: tuple[int, ...]) -> TaskRecord:
    return TaskRecord(1, 1, tp, (1, 2), target, 10, TaskState.SUBMITTED)


def test_same_plan_allows_extra_partitions_already_in_place() -> None:
    tasks = [_task(A, (3, 4)), _task(B, (4, 3))]
    file = {A: (3, 4), B: (4, 3), C: (1, 2)}
    assert same_plan(tasks, file, [B])
    assert same_plan(tasks, file, [])


def test_a_different_target_or_a_new_move_is_another_plan() -> None:
    tasks = [_task(A, (3, 4)), _task(B, (4, 3))]
    assert not same_plan(tasks, {A: (3, 4), B: (3, 4)}, [B])  # replica order differs
    assert not same_plan(tasks, {A: (3, 4)}, [A])  # the file lacks B
    assert not same_plan(tasks, {A: (3, 4), B: (4, 3), C: (3, 4)}, [C])  # C moves too
    assert not same_plan([], {A: (3, 4)}, [A])


def _record(journal: Journal, cluster: str, state: RequestState | None) -> int:
    plan = Plan.of([Move(A, (1, 2), (3, 4), 10)])
    request_id = journal.record_request(plan, bootstrap="x", cluster_id=cluster)
    if state is not None:
        journal.set_request_state(request_id, RequestState.RUNNING)
        if state is not RequestState.RUNNING:
            journal.set_request_state(request_id, state)
    return request_id


def test_resumable_request_is_the_newest_dead_one_of_the_cluster(tmp_path: Path) -> None:
    with Journal.open(tmp_path / "j.sqlite") as journal:
        targets = {A: (3, 4)}
        assert resumable_request(journal, "c1", targets, [A]) is None
        _record(journal, "c1", None)  # recorded, never ran: not picked
        older = _record(journal, "c1", RequestState.INTERRUPTED)
        _record(journal, "c2", RequestState.INTERRUPTED)  # another cluster
        _record(journal, "c1", RequestState.DONE)  # ended
        running = _record(journal, "c1", RequestState.RUNNING)  # its executor died (no lock)
        assert resumable_request(journal, "c1", targets, [A]) == running
        with lock.holding(journal.path, running):  # alive after all
            assert resumable_request(journal, "c1", targets, [A]) == older
        assert resumable_request(journal, "c1", {A: (4, 3)}, [A]) is None
