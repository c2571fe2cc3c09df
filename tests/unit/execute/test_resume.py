"""Resume: submitted tasks sorted by what the cluster says (on FakeAdmin), and the executor's guard."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import pytest
from support.admin_contract import slow_follower
from support.fake_admin import FakeAdmin

from ferry.errors import PreconditionError
from ferry.execute import lock
from ferry.execute.executor import Executor
from ferry.execute.journal import Journal
from ferry.execute.resume import reconcile
from ferry.execute.states import RequestState, TaskState
from ferry.kafka.admin import OngoingReassignment
from ferry.model import Broker, Move, Plan, TopicPartition

TPS = [TopicPartition("t", p) for p in range(5)]


def _cluster() -> FakeAdmin:
    fake = FakeAdmin.of(Broker(b) for b in (1, 2, 3, 4))
    fake.create_topic("t", {p: [1, 2] for p in range(5)})
    fake.produce("t", 5000)
    return fake


def test_finished_moving_unsent_and_foreign(tmp_path: Path) -> None:
    fake = _cluster()
    plan = Plan.of(Move(tp, (1, 2), (3, 4), 1000) for tp in TPS)
    with Journal.open(tmp_path / "j.sqlite") as journal:
        request = journal.record_request(plan, bootstrap="fake")
        tasks = journal.tasks(request)
        journal.set_task_states([t.id for t in tasks[:4]], TaskState.SUBMITTED, batch=1)
        fake.alter_reassignments({TPS[0]: [3, 4]})
        assert not fake.list_reassignments()  # unthrottled: finished by the next look
        fake.alter_configs(slow_follower("t", [3, 4]))
        fake.alter_reassignments({TPS[1]: [3, 4], TPS[3]: [1, 3]})  # held: in flight
        found = reconcile(fake, journal.tasks(request, [TaskState.SUBMITTED]))
    assert [t.tp for t in found.done] == [TPS[0]]
    assert [t.tp for t in found.moving] == [TPS[1]]
    assert [t.tp for t in found.unsent] == [TPS[2]]  # journalled, never sent
    assert [(t.tp, why) for t, why in found.failed] == [(TPS[3], "re-targeted elsewhere: moving to [1, 3]")]


class _LaggingMetadata(FakeAdmin):
    """The reassignments just ended for the controller; the metadata still shows them moving."""

    def list_reassignments(self, topics: Collection[str] | None = None) -> tuple[OngoingReassignment, ...]:
        return ()


def test_a_move_ended_but_not_yet_in_the_metadata_is_followed_not_failed(tmp_path: Path) -> None:
    fake = _LaggingMetadata.of(Broker(b) for b in (1, 2, 3, 4))
    fake.create_topic("t", {0: [1, 2], 1: [1, 2]})
    fake.produce("t", 5000)
    plan = Plan.of(Move(tp, (1, 2), (3, 4), 1000) for tp in TPS[:2])
    with Journal.open(tmp_path / "j.sqlite") as journal:
        request = journal.record_request(plan, bootstrap="fake")
        journal.set_task_states([t.id for t in journal.tasks(request)], TaskState.SUBMITTED, batch=1)
        fake.alter_configs(slow_follower("t", [3, 4]))
        fake.alter_reassignments({TPS[0]: [3, 4], TPS[1]: [2, 3]})  # held: [3, 4, 1, 2] and [2, 3, 1]
        found = reconcile(fake, journal.tasks(request, [TaskState.SUBMITTED]))
    assert [t.tp for t in found.moving] == [TPS[0]]
    assert [(t.tp, why) for t, why in found.failed] == [
        (TPS[1], "found replicas [2, 3, 1], neither original nor target")
    ]


def test_resume_refuses_a_live_or_finished_request(tmp_path: Path) -> None:
    fake = _cluster()
    with Journal.open(tmp_path / "j.sqlite") as journal:
        request = journal.record_request(Plan.of([Move(TPS[0], (1, 2), (3, 4))]), bootstrap="fake")
        executor = Executor(fake, journal, sleep=lambda s: None)
        with lock.holding(journal.path, request), pytest.raises(PreconditionError, match="another ferry"):
            executor.resume(request)
        executor.resume(request)
        assert journal.request(request).state is RequestState.DONE
        assert fake.describe_partitions(["t"])[0].replicas == (3, 4)
        with pytest.raises(PreconditionError, match="is done: nothing to resume"):
            executor.resume(request)
