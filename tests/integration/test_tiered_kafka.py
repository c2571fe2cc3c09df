"""Tiered storage on a real cluster (Kafka's LocalTieredStorage, ``ferry sandbox up --tiered``):
the Admin API shows the tiered topic and its uploaded offsets, a live snapshot names the topic,
and a move of it ends with its new replica holding the leader's local log only."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka_helpers import create_topics, produce, wait_until

from ferry.cli.main import main
from ferry.kafka.client import KafkaPythonAdmin, ready_brokers
from ferry.model import TopicPartition
from ferry.sandbox import ClusterSpec, Sandbox, ensure_jars

MB = 1_000_000
TOPIC = "tiered"
TP = TopicPartition(TOPIC, 0)


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    sandbox = Sandbox(tmp_path_factory.mktemp("tiered"))
    try:
        spec = ClusterSpec(brokers=3, racks=0, heap_mb=256, tiered=True)
        yield sandbox.up(spec, ensure_jars(), ready_brokers, timeout_s=120).bootstrap
    finally:
        sandbox.down()


def test_a_tiered_topic_is_seen_snapshotted_and_moved_with_its_local_log_only(
    bootstrap: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configs = {
        "remote.storage.enable": "true",
        "segment.bytes": "1048576",
        "local.retention.bytes": "2097152",
    }
    create_topics(bootstrap, {TOPIC: {"assignments": {0: [1]}, "configs": configs}})
    produce(bootstrap, TOPIC, 8 * MB)
    with KafkaPythonAdmin(bootstrap, timeout_s=15) as admin:
        tiering = admin.describe_tiering([TOPIC], [1, 2, 3])
        assert tiering.topics == frozenset({TOPIC}) and tiering.from_last_tiered == frozenset()
        # Rolled segments go to remote storage, and the local log is trimmed to its retention.
        wait_until(lambda: admin.latest_tiered([TP])[TP] > 0, 30, "segments uploaded")
        wait_until(lambda: admin.log_offsets([TP])[TP].local_start > 0, 30, "the local log trimmed")
        local = admin.describe_replica_sizes([TOPIC])[TP][1]
        assert local < 5 * MB
        out = tmp_path / "plan"
        planned = ["plan", "--bootstrap-server", bootstrap, "--topics", TOPIC, "--brokers", "2"]
        assert main([*planned, "--output-dir", str(out)]) == 0
        snapshot = json.loads((out / "snapshot.json").read_text())
        assert snapshot["tiered_topics"] == [TOPIC]
        (state,) = [p for p in snapshot["partitions"] if p["topic"] == TOPIC]
        assert 0 <= state["untiered_bytes"] < state["size_bytes"]  # the active segment at most
        report = json.loads((out / "report.json").read_text())
        assert report["tiered_topics"] == [TOPIC]
        assert (
            report["bytes_to_copy"] == report["bytes_moved"]
        )  # no broker here fetches from the last tiered offset
        journal = str(tmp_path / "j.sqlite")
        plan = [
            "--plan",
            str(out / "reassignment.json"),
            "--bootstrap-server",
            bootstrap,
            "--journal",
            journal,
        ]
        assert main(["execute", *plan, "--throttle", "5000000", "--poll-interval", "0.5"]) == 0, (
            capsys.readouterr().err
        )
        wait_until(
            lambda: (
                TP in admin.describe_replica_sizes([TOPIC]) and 2 in admin.describe_replica_sizes([TOPIC])[TP]
            ),
            15,
            "the new replica",
        )
        copied = admin.describe_replica_sizes([TOPIC])[TP][2]
        assert copied < 5 * MB  # the local log, not the 8 MB written
