"""``ferry progress`` while a throttled ``ferry execute`` moves real data, and after it ended."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ferry_process import executing, write_plan
from kafka_helpers import create_topics, produce, wait_until

from ferry.cli.main import main
from ferry.execute.journal import Journal
from ferry.execute.states import RequestState, TaskState
from ferry.kafka.client import KafkaPythonAdmin
from ferry.model import TopicPartition

MB = 1024 * 1024


def _submitted(journal_path: Path) -> bool:
    if not journal_path.exists():
        return False
    with Journal.open(journal_path) as journal:
        return bool(journal.tasks(states=[TaskState.SUBMITTED]))


def _progress(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert main(["progress", *args, "--json"]) == 0, capsys.readouterr().err
    doc: dict[str, object] = json.loads(capsys.readouterr().out)
    return doc


def test_progress_while_running_and_when_done(
    bootstrap: str, admin: KafkaPythonAdmin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    create_topics(bootstrap, {"pg-data": {"assignments": {0: [1, 2], 1: [2, 3]}}})
    produce(bootstrap, "pg-data", 5 * MB)  # ~2.5 MB per partition
    plan = write_plan(tmp_path / "plan.json", "pg-data", {0: [1, 3], 1: [2, 4]})
    journal_path = tmp_path / "journal.sqlite"
    common = ["--bootstrap-server", bootstrap, "--journal", str(journal_path)]
    with executing(plan, bootstrap, journal_path, "--throttle", "300000") as process:
        wait_until(lambda: _submitted(journal_path), 30, "moves to be submitted")
        wait_until(lambda: bool(admin.list_reassignments(["pg-data"])), 15, "moves in flight")
        before = admin.describe_replica_sizes(["pg-data"])
        doc = _progress(capsys, *common, "--interval", "1")  # no id: the running request
        after = admin.describe_replica_sizes(["pg-data"])
        assert doc["state"] == "running" and doc["in_flight"] == 2
        done, total = doc["done_bytes"], doc["total_bytes"]
        assert isinstance(done, int) and isinstance(total, int)
        assert 0 < done < total
        assert doc["rate_bytes_per_s"] is not None
        partitions = doc["partitions"]
        assert isinstance(partitions, list)
        for entry in partitions:
            tp = TopicPartition("pg-data", entry["partition"])
            (adding,) = entry["adding"]
            leader = entry["replicas"][0]
            # The denominator is the leader's size (no writes meanwhile, so it is stable);
            # the numerator lies between the new replica's sizes read just before and after.
            assert adding["total_bytes"] == before[tp][leader] == after[tp][leader]
            assert before[tp].get(adding["broker"], 0) <= adding["done_bytes"] <= after[tp][adding["broker"]]
        request_id = doc["request"]
        assert main(["progress", str(request_id), *common, "--interval", "0"]) == 0
        table = capsys.readouterr().out
        assert f"request {request_id} (running)" in table and "pg-data-0" in table and "in flight" in table
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    doc = _progress(capsys, str(request_id), *common)
    assert (doc["state"], doc["fraction"], doc["moves_done"], doc["in_flight"]) == ("done", 1.0, 2, 0)
    assert doc["done_bytes"] == doc["total_bytes"] == total
    with Journal.open(journal_path) as journal:
        assert journal.request(int(str(request_id))).state is RequestState.DONE
