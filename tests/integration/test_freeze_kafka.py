"""The freeze switch on the real cluster: one process freezes, another executor obeys it."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import kafka.errors as kerrors
import pytest
from ferry_process import write_plan
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.structs import TopicPartition as KafkaTopicPartition
from kafka_helpers import create_topics, produce, wait_until

from ferry.cli.main import main
from ferry.execute.executor import Executor
from ferry.execute.journal import Journal
from ferry.execute.options import ExecuteOptions
from ferry.execute.states import RequestState, TaskState
from ferry.kafka.client import KafkaPythonAdmin, control_log
from ferry.kafka.freeze import FreezeState, encode_freeze
from ferry.kafka.resources import ConfigKey, ResourceType
from ferry.model import Move, Plan, TopicPartition

MB = 1024 * 1024
RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
REPLICA_KEYS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
REASON = "disk swap on broker 3"


def _ferry(*args: str) -> subprocess.CompletedProcess[str]:
    """A ``ferry`` command in a process of its own, as an operator on another machine runs it."""
    command = [sys.executable, "-m", "ferry", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


class _Executor:
    """``ferry execute`` in a subprocess whose stderr lines are collected as they come."""

    def __init__(self, command: list[str]) -> None:
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))

    def said(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)
        self._reader.join(timeout=10)
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()


@contextmanager
def _executing(plan: Path, bootstrap: str, journal: Path, *options: str) -> Iterator[_Executor]:
    command = [sys.executable, "-m", "ferry", "execute", "--plan", str(plan), "--bootstrap-server", bootstrap]
    command += ["--journal", str(journal), "--poll-interval", "0.5", *options]
    executor = _Executor(command)
    try:
        yield executor
    finally:
        executor.stop()


def _tasks(journal_path: Path) -> dict[TaskState, int]:
    if not journal_path.exists():
        return {}
    with Journal.open(journal_path) as journal:
        states = [t.state for t in journal.tasks()]
    return {s: states.count(s) for s in set(states)}


def _thaw(admin: KafkaPythonAdmin) -> None:
    """Never leave the session's cluster frozen: every later executor would wait forever."""
    state = admin.read_freeze()
    if state is not None and state.frozen:
        admin.write_freeze(FreezeState(False, "", "integration-test@localhost", datetime.now(UTC)))


def _assert_held(admin: KafkaPythonAdmin, journal_path: Path) -> None:
    """The move in flight at the pause goes on to its end; then nothing new starts for a while."""
    wait_until(
        lambda: not admin.list_reassignments(["fz-data"]) and TaskState.SUBMITTED not in _tasks(journal_path),
        60,
        "the move in flight to end",
    )
    held = _tasks(journal_path)
    assert held.get(TaskState.PENDING, 0) >= 1, held
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        assert not admin.list_reassignments(["fz-data"]), "a move started while frozen"
        assert _tasks(journal_path) == held
        time.sleep(0.25)


def test_freeze_is_seen_by_a_second_executor_process(
    bootstrap: str, admin: KafkaPythonAdmin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Four 2 MB partitions on brokers 1,2 going to 3,4, one move per broker at a time: each move
    # takes seconds at 500 kB/s, so the freeze lands while moves remain to be submitted.
    create_topics(bootstrap, {"fz-data": {"assignments": {p: [1, 2] for p in range(4)}}})
    for partition in range(4):
        produce(bootstrap, "fz-data", 2 * MB, partition=partition)
    targets = {p: [3, 4] for p in range(4)}
    plan = write_plan(tmp_path / "plan.json", "fz-data", targets)
    journal_path = tmp_path / "journal.sqlite"
    connection = ["--bootstrap-server", bootstrap]
    keys = [ConfigKey(ResourceType.BROKER, str(b), k) for b in (1, 2, 3, 4) for k in RATES]
    keys += [ConfigKey(ResourceType.TOPIC, "fz-data", k) for k in REPLICA_KEYS]
    limits = ["--throttle", "500000", "--max-moves-per-broker", "1"]
    try:
        with _executing(plan, bootstrap, journal_path, *limits) as executor:
            wait_until(lambda: bool(admin.list_reassignments(["fz-data"])), 60, "the first move to start")
            frozen = _ferry("freeze", "--reason", REASON, *connection)
            assert frozen.returncode == 0, frozen.stderr

            # The executor notices at its next poll and says so, without --wait.
            wait_until(lambda: executor.said("paused: the cluster is frozen by"), 30, "the executor to pause")
            (line,) = [x for x in executor.lines if "paused:" in x]
            assert REASON in line and "no new ones until 'ferry unfreeze'" in line
            _assert_held(admin, journal_path)
            assert executor.process.poll() is None  # paused, not gone

            assert main(["status", *connection, "--journal", str(journal_path)]) == 0
            status = capsys.readouterr().out.splitlines()
            assert status[0].startswith("frozen by ") and status[0].endswith(f": {REASON}")
            assert status[2].startswith("  request 1: running, ") and "moves done" in status[2]

            thawed = _ferry("unfreeze", *connection)
            assert thawed.returncode == 0, thawed.stderr
            assert executor.process.wait(timeout=120) == 0, executor.lines
        assert executor.said("resumed: the cluster was unfrozen by ")
        assert executor.said("request 1: done")
    finally:
        _thaw(admin)
        admin.alter_reassignments({r.tp: None for r in admin.list_reassignments(["fz-data"])})
    replicas = {p.tp.partition: list(p.replicas) for p in admin.describe_partitions(["fz-data"])}
    assert replicas == targets
    wait_until(lambda: admin.describe_throttle_configs(keys) == {}, 15, "no throttle left")
    with Journal.open(journal_path) as journal:
        assert journal.request(1).state is RequestState.DONE
        assert {t.state for t in journal.tasks(1)} == {TaskState.DONE}
        assert all(t.applied is None for t in journal.throttles(1))


def _crashed_before_sending(admin: KafkaPythonAdmin, journal_path: Path, bootstrap: str, topic: str) -> int:
    """A request whose executor died between journalling partition 0 as submitted and sending it."""
    plan = Plan.of(Move(TopicPartition(topic, p), (1, 2), (3, 4)) for p in (0, 1))
    with Journal.open(journal_path) as journal:
        options = ExecuteOptions(throttle=500_000, poll_interval_s=0.5)
        rid = Executor(admin, journal).prepare(plan, bootstrap=bootstrap, options=options)
        first = journal.tasks(rid)[0]
        journal.set_task_states([first.id], TaskState.SUBMITTED, batch=1)
        journal.set_request_state(rid, RequestState.INTERRUPTED)
    return rid


def test_resume_sends_nothing_again_while_frozen_and_goes_on_after_unfreeze(
    bootstrap: str, admin: KafkaPythonAdmin, tmp_path: Path
) -> None:
    topic = "fz-resume"
    create_topics(bootstrap, {topic: {"assignments": {p: [1, 2] for p in (0, 1)}}})
    produce(bootstrap, topic, 1 * MB)
    journal_path = tmp_path / "journal.sqlite"
    rid = _crashed_before_sending(admin, journal_path, bootstrap, topic)
    keys = [ConfigKey(ResourceType.BROKER, str(b), k) for b in (1, 2, 3, 4) for k in RATES]
    keys += [ConfigKey(ResourceType.TOPIC, topic, k) for k in REPLICA_KEYS]
    admin.write_freeze(FreezeState(True, REASON, "integration-test@localhost", datetime.now(UTC)))
    resume = _Executor([sys.executable, "-m", "ferry", "resume", str(rid), "--journal", str(journal_path)])
    try:
        wait_until(lambda: resume.said("paused: the cluster is frozen by"), 30, "resume to pause")
        # Longer than the 10 s after which a submitted move missing from the cluster counts as failed.
        deadline = time.monotonic() + 12
        while time.monotonic() < deadline:
            assert not admin.list_reassignments([topic]), "a move was sent while frozen"
            assert {p.replicas for p in admin.describe_partitions([topic])} == {(1, 2)}
            assert _tasks(journal_path) == {TaskState.SUBMITTED: 1, TaskState.PENDING: 1}
            time.sleep(0.5)
        assert resume.process.poll() is None  # paused, not gone
        _thaw(admin)
        assert resume.process.wait(timeout=120) == 0, resume.lines
    finally:
        resume.stop()
        _thaw(admin)
        admin.alter_reassignments({r.tp: None for r in admin.list_reassignments([topic])})
    assert resume.said("resumed: the cluster was unfrozen by ")
    assert resume.said(f"request {rid}: done")
    assert {p.replicas for p in admin.describe_partitions([topic])} == {(3, 4)}
    wait_until(lambda: admin.describe_throttle_configs(keys) == {}, 15, "no throttle left")
    with Journal.open(journal_path) as journal:
        assert journal.request(rid).state is RequestState.DONE
        for task in journal.tasks(rid):
            assert task.state is TaskState.DONE
            assert [row[1] for row in journal.task_log(task.id)].count(TaskState.SUBMITTED) == 1


def test_control_topic_is_made_on_first_write_compacted_single_partition(bootstrap: str) -> None:
    topic = f"fz-control-{uuid.uuid4().hex[:8]}"
    state = FreezeState(True, "r", "me@here", datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC))
    with KafkaPythonAdmin(bootstrap, timeout_s=15, control_topic=topic) as admin:
        assert admin.read_freeze() is None  # no topic yet: not frozen, and nothing created
        assert topic not in {p.tp.topic for p in admin.describe_partitions()}
        admin.write_freeze(state)
        (partition,) = admin.describe_partitions([topic])
        assert len(partition.replicas) == 3  # min(3, brokers) of the session's 4
    with KafkaPythonAdmin(bootstrap, timeout_s=15, control_topic=topic) as other:
        assert other.read_freeze() == state  # another client, from the start of the topic
    client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
    try:
        resource = ConfigResource(ConfigResourceType.TOPIC, topic, ["cleanup.policy"])
        described = client.describe_configs([resource])
        assert described["topic"][topic]["cleanup.policy"]["value"] == "compact"
    finally:
        client.close()


def test_the_flag_is_read_to_the_end_of_the_topic_over_several_fetches(
    bootstrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fetch of at most one byte returns one batch (a broker always returns the first whole): each
    # record written is then a fetch of its own, and the read must go on to the end offset.
    monkeypatch.setattr(control_log, "FETCH_BYTES", 1)
    topic = f"fz-fetches-{uuid.uuid4().hex[:8]}"
    states = [
        FreezeState(frozen, f"step {n}", "me@here", datetime(2025, 1, 2, 3, 4, n, tzinfo=UTC))
        for n, frozen in enumerate((True, False, True, False, True))
    ]
    with KafkaPythonAdmin(bootstrap, timeout_s=10, control_topic=topic) as admin:
        for state in states:
            admin.write_freeze(state)
        assert len(control_log.read(admin._client, topic, 10.0) or ()) == len(states)
        assert admin.read_freeze() == states[-1]
        assert admin.read_freeze(within_s=5.0) == states[-1]


def test_the_flag_is_read_from_the_log_start_when_records_before_it_were_deleted(bootstrap: str) -> None:
    # A control topic an operator made with deletion as well as compaction can start past offset 0:
    # the first fetch from 0 is out of range, and the read starts at the log start instead.
    topic = f"fz-start-{uuid.uuid4().hex[:8]}"
    create_topics(bootstrap, {topic: {"num_partitions": 1, "replication_factor": 2}})
    states = [
        FreezeState(frozen, f"step {n}", "me@here", datetime(2025, 1, 2, 3, 4, n, tzinfo=UTC))
        for n, frozen in enumerate((True, False, True))
    ]
    with KafkaPythonAdmin(bootstrap, timeout_s=10, control_topic=topic) as admin:
        for state in states:
            admin.write_freeze(state)
        client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
        try:
            client.delete_records({KafkaTopicPartition(topic, 0): 2}, timeout_ms=15000)
        finally:
            client.close()
        assert [r.offset for r in control_log.read(admin._client, topic, 10.0) or ()] == [2]
        assert admin.read_freeze(within_s=5.0) == states[-1]


def test_a_follower_does_not_answer_the_flag_from_its_own_high_watermark(
    bootstrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A follower's high watermark trails the leader's, and from Fetch v11 (KIP-392) a broker serves
    # a consumer's fetch from a follower replica. A read sent where metadata still names the leader
    # before an election must go on to the leader, never return the follower's earlier flag.
    topic = f"fz-follower-{uuid.uuid4().hex[:8]}"
    compacted = {"cleanup.policy": "compact"}
    create_topics(bootstrap, {topic: {"assignments": {0: [1, 2, 3]}, "configs": compacted}})
    state = FreezeState(True, "follower", "me@here", datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC))
    with KafkaPythonAdmin(bootstrap, timeout_s=10, control_topic=topic) as admin:
        admin.write_freeze(state)
        (described,) = admin.describe_partitions([topic])
        assert described.leader is not None
        follower = next(b for b in described.replicas if b != described.leader)
        monkeypatch.setattr(control_log, "leader", lambda client, name: follower)
        started = time.monotonic()
        with pytest.raises(kerrors.KafkaTimeoutError, match=r"no leader of .* answered the read"):
            control_log.read(admin._client, topic, 1.5)
        assert time.monotonic() - started < 2.5
        named = iter([follower, described.leader])  # the metadata of the next look catches up
        monkeypatch.setattr(control_log, "leader", lambda client, name: next(named))
        records = control_log.read(admin._client, topic, 10.0)
        assert [r.value for r in records or ()] == [encode_freeze(state)]
