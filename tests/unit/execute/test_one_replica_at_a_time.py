"""``--one-replica-at-a-time`` in the executor: each step its own reassignment, in order; resume
goes on from the step the partition is at; the leader side is throttled on the new replicas too."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from support.exec_fake import ExecFakeAdmin

from ferry.execute.events import Event, ProgressUpdate, StepsSubmitted
from ferry.execute.executor import Executor
from ferry.execute.journal import Journal
from ferry.execute.options import ExecuteOptions
from ferry.execute.records import ConfigKey, ResourceType
from ferry.execute.resume import reconcile
from ferry.execute.states import RequestState, TaskState
from ferry.execute.throttles import LEADER_REPLICAS
from ferry.model import Move, Plan, TopicPartition

TP = TopicPartition("t", 0)
OPTIONS = ExecuteOptions(throttle=1000, one_replica_at_a_time=True)


class Recording(ExecFakeAdmin):
    """The fake, keeping every reassignment target it was sent."""

    def __init__(self, replicas: Mapping[TopicPartition, Sequence[int]]) -> None:
        super().__init__(replicas)
        self.sent: list[tuple[int, ...]] = []

    def alter_reassignments(
        self, targets: Mapping[TopicPartition, Sequence[int] | None]
    ) -> Mapping[TopicPartition, str | None]:
        self.sent += [tuple(t) for tp, t in targets.items() if tp == TP and t is not None]
        return super().alter_reassignments(targets)


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    with Journal.open(tmp_path / "j.sqlite") as j:
        yield j  # type: ignore[misc]


def _executor(admin: ExecFakeAdmin, journal: Journal, events: list[Event]) -> Executor:
    ticks = iter(range(10**6))
    return Executor(
        admin, journal, listener=events.append, clock=lambda: float(next(ticks)), sleep=lambda s: None
    )


def test_a_move_of_three_replicas_is_three_reassignments_each_adding_one(journal: Journal) -> None:
    admin, events = Recording({TP: (1, 2, 3)}), []
    executor = _executor(admin, journal, events)
    rid = executor.prepare(Plan.of([Move(TP, (1, 2, 3), (4, 5, 6), 100)]), bootstrap="b", options=OPTIONS)
    leader_side = ConfigKey(ResourceType.TOPIC, "t", LEADER_REPLICAS)
    executor.run(rid)
    assert admin.sent == [(4, 2, 3), (4, 5, 3), (4, 5, 6)]
    assert admin.replicas[TP] == (4, 5, 6)
    assert journal.request(rid).state is RequestState.DONE
    steps = [e.steps[TP] for e in events if isinstance(e, StepsSubmitted)]
    assert steps == [(2, 3), (3, 3)]
    counted = [e.steps for e in events if isinstance(e, ProgressUpdate)]
    assert counted[0] == (0, 3) and counted[-1] == (3, 3)
    assert (1, 3) in counted and (2, 3) in counted
    written = [w[leader_side] for w in admin.config_writes if leader_side in w]
    assert written[0] == "0:1,0:2,0:3,0:4,0:5,0:6"  # a new replica may lead the next step
    assert admin.configs == {}


def test_without_the_option_the_move_is_one_reassignment(journal: Journal) -> None:
    admin = Recording({TP: (1, 2, 3)})
    executor = _executor(admin, journal, [])
    rid = executor.prepare(
        Plan.of([Move(TP, (1, 2, 3), (4, 5, 6), 100)]), bootstrap="b", options=ExecuteOptions()
    )
    executor.run(rid)
    assert admin.sent == [(4, 5, 6)]


def test_resume_goes_on_from_the_step_the_partition_reached(journal: Journal) -> None:
    admin = Recording({TP: (1, 2, 3)})
    executor = _executor(admin, journal, [])
    rid = executor.prepare(Plan.of([Move(TP, (1, 2, 3), (4, 5, 6), 100)]), bootstrap="b", options=OPTIONS)
    task = journal.tasks(rid)[0]
    journal.transition_if([task.id], TaskState.PENDING, TaskState.SUBMITTED, batch=1)
    journal.set_request_state(rid, RequestState.RUNNING)
    journal.set_request_state(rid, RequestState.INTERRUPTED)
    admin.replicas[TP] = (4, 5, 3)  # two steps done before the executor died
    found = reconcile(admin, journal.tasks(rid, [TaskState.SUBMITTED]))
    assert [t.tp for t in found.unsent] == [TP]
    executor.resume(rid)
    assert admin.sent == [(4, 5, 6)]
    assert journal.request(rid).state is RequestState.DONE
