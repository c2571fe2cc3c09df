"""Measuring a request's progress on FakeAdmin: a held (throttled) move is half copied."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from support.admin_contract import slow_follower
from support.fake_admin import FakeAdmin

from ferry.cli.progress_render import progress_table, summary_line
from ferry.execute.journal import Journal
from ferry.execute.progress import Estimate
from ferry.execute.report import RequestProgress, measure, to_json
from ferry.execute.states import RequestState, TaskState
from ferry.model import Broker, Move, Plan, TopicPartition

A, B, C = (TopicPartition("t", p) for p in range(3))


def _report(tmp_path: Path) -> RequestProgress:
    fake = FakeAdmin.of(Broker(b) for b in (1, 2, 3, 4))
    fake.create_topic("t", {0: [1, 2], 1: [2, 3], 2: [3, 4]})
    fake.produce("t", 3000)  # 1000 bytes per partition
    fake.alter_configs(slow_follower("t", [1, 2, 3, 4]))
    plan = Plan.of(
        [Move(A, (1, 2), (1, 3), 1000), Move(B, (2, 3), (2, 4), 1000), Move(C, (3, 4), (1, 2), 1000)]
    )
    with Journal.open(tmp_path / "j.sqlite") as journal:
        request = journal.record_request(plan, bootstrap="fake")
        tasks = journal.tasks(request)
        journal.set_task_states([tasks[0].id], TaskState.SUBMITTED, batch=1)
        journal.set_task_states([tasks[1].id], TaskState.SUBMITTED, batch=1)
        journal.set_task_states([tasks[1].id], TaskState.DONE)
        fake.alter_reassignments({A: [1, 3]})
        tasks = journal.tasks(request)
    return RequestProgress(
        request, RequestState.RUNNING, tasks, measure(fake, tasks).replicas, Estimate(50.0, 30.0)
    )


def test_held_move_half_done_finished_complete_pending_untouched(tmp_path: Path) -> None:
    report = _report(tmp_path)
    assert report.partitions == {
        A: report.partitions[A],
        B: report.partitions[B],
        C: report.partitions[C],
    }
    assert (report.partitions[A].done, report.partitions[A].total) == (500, 1000)
    assert (report.partitions[B].done, report.partitions[B].total) == (1000, 1000)
    assert (report.partitions[C].done, report.partitions[C].total) == (0, 2000)  # two new replicas
    assert (report.total.done, report.total.total) == (1500, 4000)
    assert {b: (p.done, p.total) for b, p in report.brokers.items()} == {
        1: (0, 1000),
        2: (0, 1000),
        3: (500, 1000),
        4: (1000, 1000),
    }
    assert (report.moves_done, report.in_flight) == (1, 1)


def test_json_and_table(tmp_path: Path) -> None:
    report = _report(tmp_path)
    doc = to_json(report)
    assert (doc["done_bytes"], doc["total_bytes"], doc["fraction"]) == (1500, 4000, 0.375)
    assert (doc["rate_bytes_per_s"], doc["eta_s"], doc["moves_done"], doc["moves_total"]) == (
        50.0,
        30.0,
        1,
        3,
    )
    assert doc["partitions"][0] == {
        "topic": "t",
        "partition": 0,
        "state": "submitted",
        "replicas": [1, 3],
        "done_bytes": 500,
        "total_bytes": 1000,
        "adding": [{"done_bytes": 500, "total_bytes": 1000, "broker": 3}],
    }
    assert [b["broker"] for b in doc["brokers"]] == [1, 2, 3, 4]
    assert doc["silent_brokers"] == []
    table = progress_table(report)
    assert "request 1 (running)" in table and "t-0" in table and "50.0" in table
    assert "did not answer" not in table


def test_a_broker_that_did_not_answer_is_named_in_the_table_and_the_json(tmp_path: Path) -> None:
    report = replace(_report(tmp_path), silent=frozenset({3}))
    assert to_json(report)["silent_brokers"] == [3]
    table = progress_table(report)
    assert "broker(s) 3 did not answer within 3 s" in table
    assert summary_line(report) == "37.5% (1.5 KiB of 3.9 KiB), 1/3 moves done, 1 in flight, 50 B/s, ETA 30 s"


def test_a_broker_that_does_not_answer_keeps_its_last_figures(tmp_path: Path) -> None:
    """A run measures again and again: broker 3 stops answering, so its new replica of A keeps
    what it had (not 0, as a replica with no size would read); broker 4's growth is seen. A read
    with no earlier one (``ferry progress``) waits for it no more than a run's poll does: what
    broker 3 receives counts as nothing copied, and the broker is named."""
    fake = FakeAdmin.of(Broker(b) for b in (1, 2, 3, 4))
    fake.create_topic("t", {0: [1, 2], 1: [2, 3]})
    fake.produce("t", 2000)
    fake.alter_configs(slow_follower("t", [1, 2, 3, 4]))
    plan = Plan.of([Move(A, (1, 2), (1, 3), 1000), Move(B, (2, 3), (2, 4), 1000)])
    with Journal.open(tmp_path / "j.sqlite") as journal:
        request = journal.record_request(plan, bootstrap="fake")
        journal.set_task_states([t.id for t in journal.tasks(request)], TaskState.SUBMITTED, batch=1)
        tasks = journal.tasks(request)
    fake.alter_reassignments({A: [1, 3], B: [2, 4]})
    first, none_silent = measure(fake, tasks)
    assert {(r.tp, r.broker): r.progress.done for r in first} == {(A, 3): 500, (B, 4): 500}
    assert none_silent == frozenset()
    fake.silent = frozenset({3})
    fake.produce("t", 2000)  # the leaders grow to 2000 bytes, the new replicas to 1000
    kept, silent = measure(fake, tasks, None, first)
    assert silent == {3}  # a broker of the moves: a throttle written to it would wait
    assert {(r.tp, r.broker): (r.progress.done, r.progress.total) for r in kept} == {
        (A, 3): (500, 1000),
        (B, 4): (1000, 2000),
    }
    once, silent = measure(fake, tasks)
    assert silent == {3}
    assert {(r.tp, r.broker): r.progress.done for r in once} == {(A, 3): 0, (B, 4): 1000}
    fake.silent = frozenset()
    answered, silent = measure(fake, tasks)
    assert silent == frozenset()
    assert {(r.tp, r.broker): r.progress.done for r in answered} == {(A, 3): 1000, (B, 4): 1000}
