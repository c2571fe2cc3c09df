"""``ferry execute`` and ``ferry list`` end to end on the real cluster, moving real data."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from ferry_process import executing
from kafka_helpers import create_topics, produce, wait_until

from ferry.cli.main import main
from ferry.execute.journal import Journal
from ferry.execute.states import RequestState, TaskState
from ferry.kafka.client import KafkaPythonAdmin
from ferry.kafka.resources import ConfigKey, ResourceType
from ferry.model import TopicPartition

MB = 1024 * 1024
RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
REPLICA_KEYS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


def _throttle_keys(topics: list[str]) -> list[ConfigKey]:
    brokers = [ConfigKey(ResourceType.BROKER, str(b), k) for b in (1, 2, 3, 4) for k in RATES]
    return brokers + [ConfigKey(ResourceType.TOPIC, t, k) for t in topics for k in REPLICA_KEYS]


def _write_plan(path: Path, topic: str, targets: dict[int, list[int]]) -> Path:
    doc = {
        "version": 1,
        "partitions": [{"topic": topic, "partition": p, "replicas": r} for p, r in targets.items()],
    }
    path.write_text(json.dumps(doc))
    return path


def _replicas(admin: KafkaPythonAdmin, topic: str) -> dict[int, list[int]]:
    return {p.tp.partition: list(p.replicas) for p in admin.describe_partitions([topic])}


class _LoadSampler:
    """Samples ListPartitionReassignments on its own thread and client: peak moves per broker."""

    def __init__(self, bootstrap: str) -> None:
        self._admin = KafkaPythonAdmin(bootstrap, timeout_s=10)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self.peak: Counter[int] = Counter()
        self.samples = 0

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            load: Counter[int] = Counter()
            for r in self._admin.list_reassignments():
                load.update(set(r.adding_replicas) | set(r.removing_replicas))
            for broker, count in load.items():
                self.peak[broker] = max(self.peak[broker], count)
            self.samples += 1

    def __enter__(self) -> _LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=15)
        self._admin.close()


def test_execute_moves_data_within_limits_and_leaves_no_throttle(
    bootstrap: str, admin: KafkaPythonAdmin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    create_topics(bootstrap, {"ex-data": {"assignments": {0: [1, 2], 1: [2, 3], 2: [3, 4]}}})
    produce(bootstrap, "ex-data", 6 * MB)
    targets = {0: [3, 4], 1: [4, 1], 2: [1, 2]}
    plan = _write_plan(tmp_path / "plan.json", "ex-data", targets)
    # An operator's own throttle rate on broker 1: ferry must put it back, not delete it.
    theirs = ConfigKey(ResourceType.BROKER, "1", RATES[0])
    admin.alter_configs({theirs: "999999999"})
    journal_path = tmp_path / "journal.sqlite"
    sampler = _LoadSampler(bootstrap)
    try:
        connection = ["--bootstrap-server", bootstrap, "--journal", str(journal_path)]
        limits = ["--throttle", str(2 * MB), "--max-moves-per-broker", "1", "--poll-interval", "0.5"]
        with sampler:
            code = main(["execute", "--plan", str(plan), *connection, *limits, "--wait"])
        out, err = capsys.readouterr()
        assert code == 0, err
        request_id = int(out.strip())
        wait_until(lambda: _replicas(admin, "ex-data") == targets, 15, "metadata to show the targets")
        expected = {theirs: "999999999"}
        keys = _throttle_keys(["ex-data"])
        wait_until(lambda: admin.describe_throttle_configs(keys) == expected, 15, "throttles restored")
    finally:
        admin.alter_configs({theirs: None})
    assert "batch 2" in err  # one move per broker at a time: the plan cannot go in one batch
    assert sampler.samples > 3
    assert sampler.peak and max(sampler.peak.values()) == 1, sampler.peak
    assert "preferred-leader election for 3 partition(s)" in err
    with Journal.open(journal_path) as journal:
        assert journal.request(request_id).state is RequestState.DONE
        tasks = journal.tasks(request_id)
        assert {t.state for t in tasks} == {TaskState.DONE}
        assert {t.tp.partition: list(t.original) for t in tasks} == {0: [1, 2], 1: [2, 3], 2: [3, 4]}
        assert all(t.applied is None for t in journal.throttles(request_id))
        assert len({t.batch for t in tasks}) >= 2


def test_foreign_reassignment_is_listed_and_refused(
    bootstrap: str, admin: KafkaPythonAdmin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    create_topics(
        bootstrap, {"ex-foreign": {"assignments": {0: [1, 2]}}, "ex-mine": {"assignments": {0: [3, 4]}}}
    )
    produce(bootstrap, "ex-foreign", 2 * MB)
    tp = TopicPartition("ex-foreign", 0)
    slow = {ConfigKey(ResourceType.TOPIC, "ex-foreign", REPLICA_KEYS[1]): "0:3"}
    slow |= {ConfigKey(ResourceType.BROKER, str(b), RATES[1]): "10000" for b in (3,)}
    connection = ["--bootstrap-server", bootstrap, "--journal", str(tmp_path / "j.sqlite")]
    admin.alter_configs(slow)
    try:
        assert admin.alter_reassignments({tp: [1, 2, 3]}) == {tp: None}
        assert main(["list", *connection]) == 0
        listed = json.loads(capsys.readouterr().out)
        assert listed["partitions"] == [
            {
                "topic": "ex-foreign",
                "partition": 0,
                "replicas": [1, 2, 3],
                "adding_replicas": [3],
                "removing_replicas": [],
                "request": None,
            }
        ]
        plan = _write_plan(tmp_path / "plan.json", "ex-mine", {0: [4, 1]})
        assert main(["execute", "--plan", str(plan), *connection]) == 4
        err = capsys.readouterr().err
        assert "1 reassignment(s) not started by ferry are in flight (ex-foreign-0)" in err
        assert "--additional" in err
        assert _replicas(admin, "ex-mine") == {0: [3, 4]}
    finally:
        admin.alter_reassignments({tp: None})
        admin.alter_configs(dict.fromkeys(slow))
    wait_until(lambda: not admin.list_reassignments(), 30, "the foreign move to be cancelled")
    assert main(["list", *connection]) == 0
    assert capsys.readouterr().out.strip() == "{}"
    with Journal.open(tmp_path / "j.sqlite") as journal:
        assert journal.requests() == ()


def test_sigterm_restores_throttles_and_marks_the_request_interrupted(
    bootstrap: str, admin: KafkaPythonAdmin, tmp_path: Path
) -> None:
    """A slow throttled move, SIGTERM mid-way: exit 130, no throttle left, journal says interrupted."""
    create_topics(bootstrap, {"ex-term": {"assignments": {0: [1, 2]}}})
    produce(bootstrap, "ex-term", 2 * MB)
    plan = _write_plan(tmp_path / "plan.json", "ex-term", {0: [3, 4]})
    journal_path = tmp_path / "journal.sqlite"
    command = [sys.executable, "-m", "ferry", "execute", "--plan", str(plan), "--bootstrap-server", bootstrap]
    command += ["--journal", str(journal_path), "--throttle", "50000", "--poll-interval", "0.5"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    keys = _throttle_keys(["ex-term"])
    try:
        # At 50 kB/s the 2 MB copy takes ~40 s: the throttle is certainly on while we look.
        # 10 configs: both rates on brokers 1-4, leader and follower replica lists on the topic.
        wait_until(lambda: len(admin.describe_throttle_configs(keys)) == 10, 30, "ferry's throttles")
        wait_until(lambda: bool(admin.list_reassignments(["ex-term"])), 15, "the move to start")
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=10)
        admin.alter_reassignments({TopicPartition("ex-term", 0): None})
    assert process.returncode == 130, err
    wait_until(lambda: admin.describe_throttle_configs(keys) == {}, 15, "throttles removed")
    with Journal.open(journal_path) as journal:
        (request,) = journal.requests()
        assert request.state is RequestState.INTERRUPTED
        assert all(t.applied is None for t in journal.throttles(request.id))
    wait_until(lambda: not admin.list_reassignments(["ex-term"]), 30, "the move to be cancelled")


def test_a_second_signal_during_cleanup_still_leaves_no_throttle(
    bootstrap: str, admin: KafkaPythonAdmin, tmp_path: Path
) -> None:
    """SIGTERM, then at once SIGINT (the impatient second Ctrl-C): the restore runs to its end."""
    create_topics(bootstrap, {"ex-twice": {"assignments": {0: [1, 2], 1: [2, 1]}}})
    produce(bootstrap, "ex-twice", 2 * MB)
    plan = _write_plan(tmp_path / "plan.json", "ex-twice", {0: [3, 4], 1: [4, 3]})
    journal_path = tmp_path / "journal.sqlite"
    keys = _throttle_keys(["ex-twice"])
    with executing(plan, bootstrap, journal_path, "--throttle", "50000") as process:
        try:
            wait_until(lambda: len(admin.describe_throttle_configs(keys)) == 10, 30, "ferry's throttles")
            wait_until(lambda: len(admin.list_reassignments(["ex-twice"])) == 2, 15, "the moves to start")
            # Back to back: the second lands while the first unwinds into the executor's cleanup.
            process.send_signal(signal.SIGTERM)
            process.send_signal(signal.SIGINT)
            _, err = process.communicate(timeout=60)
        finally:
            admin.alter_reassignments({TopicPartition("ex-twice", p): None for p in (0, 1)})
    assert process.returncode == 130, err
    assert "cleaning up (restoring throttle configs), please wait" in err
    assert admin.describe_throttle_configs(keys) == {}
    with Journal.open(journal_path) as journal:
        (request,) = journal.requests()
        assert request.state is RequestState.INTERRUPTED
        assert all(t.applied is None for t in journal.throttles(request.id))
    wait_until(lambda: not admin.list_reassignments(["ex-twice"]), 30, "the moves to be cancelled")


def test_additional_says_which_foreign_move_holds_it_back_then_goes_on(
    bootstrap: str, admin: KafkaPythonAdmin, tmp_path: Path
) -> None:
    """A crawling foreign move onto broker 3 holds ferry's move onto 3 back, and ferry says so."""
    create_topics(
        bootstrap, {"ex-slow": {"assignments": {0: [1, 2]}}, "ex-held": {"assignments": {0: [1, 2]}}}
    )
    produce(bootstrap, "ex-slow", 2 * MB)
    slow_tp = TopicPartition("ex-slow", 0)
    slow = {ConfigKey(ResourceType.TOPIC, "ex-slow", REPLICA_KEYS[1]): "0:3"}
    slow |= {ConfigKey(ResourceType.BROKER, "3", RATES[1]): "10000"}
    plan = _write_plan(tmp_path / "plan.json", "ex-held", {0: [1, 3]})
    admin.alter_configs(slow)
    try:
        assert admin.alter_reassignments({slow_tp: [1, 2, 3]}) == {slow_tp: None}
        options = ["--additional", "--max-moves-per-broker", "1", "--wait"]
        with executing(plan, bootstrap, tmp_path / "journal.sqlite", *options) as process:
            time.sleep(5)
            assert process.poll() is None, "ferry cannot have moved onto broker 3 yet"
            assert _replicas(admin, "ex-held") == {0: [1, 2]}
            admin.alter_reassignments({slow_tp: None})  # the operator cancels the foreign move
            _, err = process.communicate(timeout=60)
    finally:
        admin.alter_reassignments({slow_tp: None})
        admin.alter_configs(dict.fromkeys(slow))
    assert process.returncode == 0, err
    expected = (
        "1 move(s) ready to start wait for 1 reassignment(s) ferry did not start: ex-slow-0 on broker 3;"
    )
    assert expected in err
    wait_until(lambda: _replicas(admin, "ex-held") == {0: [1, 3]}, 15, "ferry's move to end")
