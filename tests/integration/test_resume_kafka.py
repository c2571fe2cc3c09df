"""kill -9 a throttled ``ferry execute`` mid-run, then ``ferry resume``: nothing lost, nothing redone."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from ferry_process import executing, write_plan
from kafka_helpers import create_topics, produce, wait_until

from ferry.cli.main import main
from ferry.execute.journal import Journal
from ferry.execute.states import RequestState, TaskState
from ferry.kafka.client import KafkaPythonAdmin
from ferry.kafka.resources import ConfigKey, ResourceType

MB = 1024 * 1024
RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
REPLICA_KEYS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
TARGETS = {p: [3, 4] for p in range(4)}


def _states(journal_path: Path) -> list[TaskState]:
    if not journal_path.exists():
        return []
    with Journal.open(journal_path) as journal:
        return [t.state for t in journal.tasks()]


def test_kill_9_then_resume_finishes_without_redoing_anything(
    bootstrap: str, admin: KafkaPythonAdmin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Four partitions on brokers 1,2 going to 3,4: with one move per broker they go one at a time.
    create_topics(bootstrap, {"rs-data": {"assignments": {p: [1, 2] for p in range(4)}}})
    produce(bootstrap, "rs-data", 6 * MB)
    plan = write_plan(tmp_path / "plan.json", "rs-data", TARGETS)
    journal_path = tmp_path / "journal.sqlite"
    keys = [ConfigKey(ResourceType.BROKER, str(b), k) for b in (1, 2, 3, 4) for k in RATES]
    keys += [ConfigKey(ResourceType.TOPIC, "rs-data", k) for k in REPLICA_KEYS]
    limits = ["--throttle", "500000", "--max-moves-per-broker", "1"]
    try:
        with executing(plan, bootstrap, journal_path, *limits) as process:
            wait_until(lambda: TaskState.DONE in _states(journal_path), 60, "a first move to finish")
            wait_until(lambda: bool(admin.list_reassignments(["rs-data"])), 30, "the next move to start")
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        in_flight = {r.tp for r in admin.list_reassignments(["rs-data"])}
        assert admin.describe_throttle_configs(keys), "a killed ferry cannot have cleaned up"
        with Journal.open(journal_path) as journal:
            (request,) = journal.requests()
            assert request.state is RequestState.RUNNING  # kill -9 leaves no chance to say more
            before = {t.id: journal.task_log(t.id) for t in journal.tasks(request.id)}
            done_before = {t.id for t in journal.tasks(request.id, [TaskState.DONE])}
            submitted_before = {t.tp: t.id for t in journal.tasks(request.id, [TaskState.SUBMITTED])}
        assert done_before and len(done_before) < 4

        assert main(["resume", str(request.id), "--journal", str(journal_path)]) == 0, capsys.readouterr().err
        assert "request 1: done" in capsys.readouterr().err
    finally:
        admin.alter_reassignments({r.tp: None for r in admin.list_reassignments(["rs-data"])})
    replicas = {p.tp.partition: list(p.replicas) for p in admin.describe_partitions(["rs-data"])}
    assert replicas == TARGETS
    wait_until(lambda: admin.describe_throttle_configs(keys) == {}, 15, "no throttle left")
    with Journal.open(journal_path) as journal:
        assert journal.request(request.id).state is RequestState.DONE
        tasks = journal.tasks(request.id)
        assert {t.state for t in tasks} == {TaskState.DONE}
        assert all(t.applied is None for t in journal.throttles(request.id))
        for task in tasks:
            log = journal.task_log(task.id)
            if task.id in done_before:
                assert log == before[task.id]  # finished before the kill: not touched again
            submits = [row for row in log if row[1] is TaskState.SUBMITTED]
            assert len(submits) == 1, log  # every partition submitted exactly once
        # What was moving at the kill finished under the resumed run, without a second submission.
        assert {tp for tp in in_flight} <= set(submitted_before)


def test_execute_of_the_same_plan_resumes_the_killed_request(
    bootstrap: str, admin: KafkaPythonAdmin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # As above, but the operator simply runs the same 'ferry execute' again after the kill.
    create_topics(bootstrap, {"rx-data": {"assignments": {p: [1, 2] for p in range(4)}}})
    produce(bootstrap, "rx-data", 4 * MB)
    plan = write_plan(tmp_path / "plan.json", "rx-data", TARGETS)
    journal_path = tmp_path / "journal.sqlite"
    keys = [ConfigKey(ResourceType.BROKER, str(b), k) for b in (1, 2, 3, 4) for k in RATES]
    keys += [ConfigKey(ResourceType.TOPIC, "rx-data", k) for k in REPLICA_KEYS]
    limits = ["--throttle", "500000", "--max-moves-per-broker", "1", "--poll-interval", "0.5"]
    try:
        with executing(plan, bootstrap, journal_path, *limits) as process:
            wait_until(lambda: TaskState.DONE in _states(journal_path), 60, "a first move to finish")
            wait_until(lambda: bool(admin.list_reassignments(["rx-data"])), 30, "the next move to start")
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        with Journal.open(journal_path) as journal:
            (request,) = journal.requests()
            done_before = {t.id: journal.task_log(t.id) for t in journal.tasks(request.id, [TaskState.DONE])}
        assert done_before and len(done_before) < 4

        argv = [
            "execute",
            "--plan",
            str(plan),
            "--bootstrap-server",
            bootstrap,
            "--journal",
            str(journal_path),
        ]
        assert main([*argv, *limits]) == 0
        out, err = capsys.readouterr()
        assert out.strip() == str(request.id), (out, err)
        assert f"request {request.id} was interrupted: resuming it" in err
        assert f"request {request.id}: done" in err
    finally:
        admin.alter_reassignments({r.tp: None for r in admin.list_reassignments(["rx-data"])})
    replicas = {p.tp.partition: list(p.replicas) for p in admin.describe_partitions(["rx-data"])}
    assert replicas == TARGETS
    wait_until(lambda: admin.describe_throttle_configs(keys) == {}, 15, "no throttle left")
    with Journal.open(journal_path) as journal:
        assert [r.id for r in journal.requests()] == [request.id]  # no second request
        assert journal.request(request.id).state is RequestState.DONE
        for task in journal.tasks(request.id):
            assert task.state is TaskState.DONE
            log = journal.task_log(task.id)
            if task.id in done_before:
                assert log == done_before[task.id]  # finished before the kill: untouched
            assert len([row for row in log if row[1] is TaskState.SUBMITTED]) == 1, log
