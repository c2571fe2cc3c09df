"""Decommissioning a cordoned broker on the real cluster (Kafka 4.3, KIP-1066): cordon it, plan
``--remove-brokers cordoned``, execute, and it holds nothing of the planned topics, with no
throttle left; a plan made before the cordon is refused by execute; and the same replicas in
another order are no stale plan."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka_helpers import create_topics, produce, wait_until

from ferry.cli.main import main
from ferry.kafka.client import KafkaPythonAdmin
from ferry.kafka.resources import ConfigKey, ResourceType
from ferry.sandbox import Sandbox, SandboxState

MB = 1024 * 1024
TOPIC = "cordon-data"
RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
REPLICA_KEYS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


def _throttle_keys() -> list[ConfigKey]:
    brokers = [ConfigKey(ResourceType.BROKER, str(b), k) for b in (1, 2, 3, 4) for k in RATES]
    return brokers + [ConfigKey(ResourceType.TOPIC, TOPIC, k) for k in REPLICA_KEYS]


def _reassignment(topic: str, replicas: list[int]) -> dict[str, object]:
    return {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": replicas}]}


@pytest.fixture
def cordoned_4(kafka_sandbox: tuple[Sandbox, SandboxState], admin: KafkaPythonAdmin) -> Iterator[int]:
    """Broker 4 cordoned through ``ferry sandbox cordon`` for the test, uncordoned after it."""
    directory = str(kafka_sandbox[0].directory)
    assert main(["sandbox", "cordon", "4", "--dir", directory]) == 0
    try:
        assert admin.describe_disks()[4].cordoned
        yield 4
    finally:
        assert main(["sandbox", "uncordon", "4", "--dir", directory]) == 0
        assert not admin.describe_disks()[4].cordoned


def test_a_cordoned_broker_is_drained_by_remove_brokers_cordoned(
    bootstrap: str,
    admin: KafkaPythonAdmin,
    cordoned_4: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    create_topics(bootstrap, {TOPIC: {"assignments": {0: [4, 1], 1: [2, 4], 2: [3, 4], 3: [1, 2]}}})
    produce(bootstrap, TOPIC, 2 * MB)
    out = tmp_path / "plan"
    live = ["--bootstrap-server", bootstrap]
    code = main(["plan", *live, "--topics", TOPIC, "--remove-brokers", "cordoned", "--output-dir", str(out)])
    assert code == 0, capsys.readouterr().err
    snapshot = json.loads((out / "snapshot.json").read_text())
    assert {b["id"]: b.get("cordoned", False) for b in snapshot["brokers"]} == {
        1: False,
        2: False,
        3: False,
        4: True,
    }
    assert all(b["capacity_bytes"] > 0 for b in snapshot["brokers"])
    # The sandbox gives each broker one log dir: broker 4's is the one cordoned.
    assert [b["id"] for b in snapshot["brokers"] if b.get("cordoned_log_dirs")] == [4]
    assert len(snapshot["brokers"][3]["cordoned_log_dirs"]) == 1
    journal = [
        "--journal",
        str(tmp_path / "journal.sqlite"),
        "--throttle",
        str(4 * MB),
        "--poll-interval",
        "0.5",
    ]
    code = main(["execute", "--plan", str(out / "reassignment.json"), *live, *journal, "--wait"])
    assert code == 0, capsys.readouterr().err
    wait_until(
        lambda: all(cordoned_4 not in p.replicas for p in admin.describe_partitions([TOPIC])),
        15,
        "broker 4 empty",
    )
    assert admin.describe_throttle_configs(_throttle_keys()) == {}


def test_execute_refuses_a_plan_onto_a_broker_cordoned_since_planning(
    bootstrap: str,
    admin: KafkaPythonAdmin,
    kafka_sandbox: tuple[Sandbox, SandboxState],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    topic = "cordon-late"
    create_topics(bootstrap, {topic: {"assignments": {0: [1, 2]}}})
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(_reassignment(topic, [1, 4])))
    directory = str(kafka_sandbox[0].directory)
    assert main(["sandbox", "cordon", "4", "--dir", directory]) == 0
    capsys.readouterr()
    try:
        journal = ["--journal", str(tmp_path / "journal.sqlite")]
        code = main(["execute", "--plan", str(plan), "--bootstrap-server", bootstrap, *journal])
        err = capsys.readouterr().err
    finally:
        assert main(["sandbox", "uncordon", "4", "--dir", directory]) == 0
    assert code == 4
    assert "target broker(s) 4 cordoned: they take no new partitions" in err.splitlines()[0]
    assert [p.replicas for p in admin.describe_partitions([topic])] == [(1, 2)]  # untouched
    assert admin.list_reassignments([topic]) == ()


def test_a_plan_made_from_the_same_replicas_in_another_order_executes_with_a_warning(
    bootstrap: str, admin: KafkaPythonAdmin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = "cordon-order"
    create_topics(bootstrap, {topic: {"assignments": {0: [1, 2]}}})
    plan = tmp_path / "reassignment.json"
    plan.write_text(json.dumps(_reassignment(topic, [3, 1])))
    # The plan was made when the partition's replicas read [2, 1] (before a cancelled reassignment).
    (tmp_path / "rollback.json").write_text(json.dumps(_reassignment(topic, [2, 1])))
    run = ["--bootstrap-server", bootstrap, "--journal", str(tmp_path / "journal.sqlite")]
    code = main(["execute", "--plan", str(plan), *run, "--wait", "--poll-interval", "0.5"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "same replicas as the plan was made from, in another order" in err
    wait_until(lambda: [p.replicas for p in admin.describe_partitions([topic])] == [(3, 1)], 15, "moved")
