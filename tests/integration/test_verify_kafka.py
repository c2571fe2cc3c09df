"""``ferry verify`` on the real cluster: targets reached or not, and throttles a crashed run left."""

from __future__ import annotations

from pathlib import Path

import pytest
from ferry_process import write_plan
from kafka_helpers import create_topics, produce, wait_until

from ferry.cli.main import main
from ferry.execute.executor import Executor
from ferry.execute.journal import Journal
from ferry.execute.options import ExecuteOptions
from ferry.execute.states import RequestState, TaskState
from ferry.kafka.client import KafkaPythonAdmin
from ferry.kafka.resources import ConfigKey, ResourceType
from ferry.model import Move, Plan, TopicPartition

RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
REPLICA_KEYS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


def _crashed_request(admin: KafkaPythonAdmin, journal: Journal, plan: Plan, bootstrap: str) -> int:
    """What a ferry killed mid-run leaves: journal says running + submitted, its throttles are set."""
    request_id = Executor(admin, journal).prepare(
        plan, bootstrap=bootstrap, options=ExecuteOptions(throttle=10**9)
    )
    journal.set_request_state(request_id, RequestState.RUNNING)
    planned = {t.config: t.planned for t in journal.throttles(request_id) if t.planned is not None}
    journal.set_throttles_applied(request_id, planned)
    admin.alter_configs(planned)
    journal.set_task_states([t.id for t in journal.tasks(request_id)], TaskState.SUBMITTED, batch=1)
    admin.alter_reassignments({m.tp: m.target for m in plan.moves})
    return request_id


def _replicas(admin: KafkaPythonAdmin) -> dict[int, list[int]]:
    return {p.tp.partition: list(p.replicas) for p in admin.describe_partitions(["vf-data"])}


def test_verify_reports_targets_and_restores_leftover_throttles(
    bootstrap: str, admin: KafkaPythonAdmin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    create_topics(bootstrap, {"vf-data": {"assignments": {0: [1, 2], 1: [2, 3]}}})
    produce(bootstrap, "vf-data", 200_000)
    theirs = ConfigKey(ResourceType.BROKER, "1", RATES[0])
    keys = [ConfigKey(ResourceType.BROKER, str(b), k) for b in (1, 2, 3, 4) for k in RATES]
    keys += [ConfigKey(ResourceType.TOPIC, "vf-data", k) for k in REPLICA_KEYS]
    journal_path = tmp_path / "journal.sqlite"
    common = ["--bootstrap-server", bootstrap, "--journal", str(journal_path)]
    admin.alter_configs({theirs: "999999999"})  # the operator's own rate: to be put back
    try:
        wait_until(
            lambda: admin.describe_throttle_configs([theirs]) == {theirs: "999999999"}, 15, "their rate"
        )
        tp0, tp1 = TopicPartition("vf-data", 0), TopicPartition("vf-data", 1)
        plan = Plan.of([Move(tp0, (1, 2), (3, 4), 100_000), Move(tp1, (2, 3), (2, 4), 100_000)])
        with Journal.open(journal_path) as journal:
            request_id = _crashed_request(admin, journal, plan, bootstrap)
        wait_until(lambda: len(admin.describe_throttle_configs(keys)) == 10, 15, "ferry's throttles")
        wait_until(lambda: not admin.list_reassignments(["vf-data"]), 60, "the moves to end")
        # The controller ends a move before every broker's metadata shows it: verify reads the latter.
        wait_until(lambda: _replicas(admin) == {0: [3, 4], 1: [2, 4]}, 30, "every broker to see the moves")

        # A plan one partition of which is elsewhere: exit 6, but the throttles are cleaned anyway.
        other = write_plan(tmp_path / "other.json", "vf-data", {0: [3, 4], 1: [1, 3]})
        assert main(["verify", "--plan", str(other), *common]) == 6
        out, err = capsys.readouterr()
        assert "vf-data-0: reached [3, 4]" in out
        assert "vf-data-1: not reached: replicas [2, 4], target [1, 3]" in out
        assert "throttles: 10 config(s) left by ferry restored" in out
        assert "1 of 2 partition(s) not at their target" in err
        wait_until(
            lambda: admin.describe_throttle_configs(keys) == {theirs: "999999999"},
            15,
            "only theirs to remain",
        )
        with Journal.open(journal_path) as journal:
            assert all(t.applied is None for t in journal.throttles(request_id))

        done = write_plan(tmp_path / "plan.json", "vf-data", {0: [3, 4], 1: [2, 4]})
        assert main(["verify", "--plan", str(done), *common]) == 0
        out = capsys.readouterr().out
        assert "vf-data-1: reached [2, 4]" in out and "throttles: none left" in out
    finally:
        admin.alter_configs({theirs: None})
