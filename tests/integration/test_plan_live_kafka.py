"""``ferry plan --bootstrap-server`` on the real cluster, with all brokers up and with one down."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from kafka_helpers import create_topics, produce, wait_until
from support.invariants import rack_caps

from ferry.cli.main import main
from ferry.formats import load_reassignment, load_snapshot, parse_snapshot_details
from ferry.kafka.client import KafkaPythonAdmin, ready_brokers
from ferry.model import ClusterSnapshot, TopicPartition
from ferry.sandbox import Sandbox, SandboxState

RACKS = {1: "r0", 2: "r1", 3: "r0", 4: "r1"}
TOPICS: dict[str, dict[str, Any]] = {
    "live-plan-p6-rf2": {"num_partitions": 6, "replication_factor": 2},
    "live-plan-p4-rf3": {"num_partitions": 4, "replication_factor": 3},
}


@pytest.fixture(scope="module")
def topics(bootstrap: str) -> list[str]:
    create_topics(bootstrap, TOPICS)
    for name, spec in TOPICS.items():
        # Into each partition by number: 30 keyless records go where the producer's partitioner
        # puts them, and once in CI a partition got none; the test wants every size > 0.
        for partition in range(spec["num_partitions"]):
            produce(bootstrap, name, 300_000 // spec["num_partitions"], partition=partition)
    return sorted(TOPICS)


def _placement_after(snap: ClusterSnapshot, out: Path) -> dict[TopicPartition, tuple[int, ...]]:
    placement = {p.tp: p.replicas for p in snap.partitions}
    rollback = load_reassignment(out / "rollback.json").targets
    for tp, replicas in load_reassignment(out / "reassignment.json").targets.items():
        assert rollback[tp] == snap.partition(tp).replicas, f"{tp}: rollback is not the current replicas"
        placement[tp] = replicas
    return placement


def _assert_valid_plan(snap: ClusterSnapshot, out: Path, topics: list[str], targets: set[int]) -> None:
    placement = _placement_after(snap, out)
    rack_names = sorted({RACKS[b] for b in targets})
    sizes = [sum(1 for b in targets if RACKS[b] == r) for r in rack_names]
    for state in snap.partitions:
        final = placement[state.tp]
        if state.tp.topic not in topics:
            assert final == state.replicas, f"{state.tp} is out of scope but moved"
            continue
        assert len(final) == state.replication_factor, state.tp
        assert len(set(final)) == len(final), f"{state.tp}: duplicate broker in {final}"
        assert set(final) <= targets, f"{state.tp}: {final} not on {sorted(targets)}"
        counts = Counter(RACKS[b] for b in final)
        for name, (lo, hi) in zip(rack_names, rack_caps(sizes, len(final))[1], strict=True):
            assert lo <= counts[name] <= hi, f"{state.tp}: {counts[name]} replicas in rack {name}"


@pytest.mark.parametrize(
    ("goal", "targets"),
    [(["--remove-brokers", "4"], {1, 2, 3}), (["--brokers", "2,3,4"], {2, 3, 4})],
)
def test_plan_from_the_live_cluster_is_valid_and_saves_its_snapshot(
    bootstrap: str,
    admin: KafkaPythonAdmin,
    topics: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    goal: list[str],
    targets: set[int],
) -> None:
    out = tmp_path / "plan"
    args = ["plan", "--bootstrap-server", bootstrap, "--topics", ",".join(topics), *goal]
    assert main([*args, "--output-dir", str(out)]) == 0, capsys.readouterr().err
    assert {p.name for p in out.iterdir()} == {
        "reassignment.json",
        "rollback.json",
        "report.json",
        "snapshot.json",
    }
    snap = load_snapshot(out / "snapshot.json")  # a valid v1 snapshot, or this raises
    assert snap.racks == RACKS
    assert all(b.alive for b in snap.brokers)
    live = {p.tp: p for p in admin.describe_partitions(topics)}
    assert {p.tp: p.replicas for p in snap.partitions if p.tp.topic in topics} == {
        tp: p.replicas for tp, p in live.items()
    }
    assert all(snap.partition(tp).size > 0 for tp in live)
    _assert_valid_plan(snap, out, topics, targets)
    report = json.loads((out / "report.json").read_text())
    assert report["snapshot"] == str(out / "snapshot.json")
    assert report["replica_moves"] > 0


def test_down_broker_is_in_the_snapshot_and_planned_away(
    kafka_sandbox: tuple[Sandbox, SandboxState],
    bootstrap: str,
    admin: KafkaPythonAdmin,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sandbox = kafka_sandbox[0]
    topic = "live-plan-down"
    create_topics(bootstrap, {topic: {"assignments": {0: [4, 1], 1: [2, 4], 2: [1, 2], 3: [3, 4]}}})
    produce(bootstrap, topic, 200_000)
    connect = ["--bootstrap-server", bootstrap]
    sandbox.kill(4)
    try:
        wait_until(
            lambda: all(4 not in (p.isr or ()) for p in admin.describe_partitions([topic])),
            30,
            "broker 4 to leave the ISRs",
        )
        snap_file = tmp_path / "snap.json"
        assert main(["snapshot", *connect, "--topics", topic, "-o", str(snap_file)]) == 0
        snap, details = parse_snapshot_details(snap_file.read_bytes(), str(snap_file))
        doc = json.loads(snap_file.read_text())
        assert doc["brokers"][3] == {"id": 4, "rack": "r1", "alive": False}
        for p in snap.partitions:
            assert p.isr is not None and 4 not in p.isr and p.leader != 4
            assert 4 not in details.replica_sizes[p.tp]
        assert snap.partition(TopicPartition(topic, 0)).replicas == (4, 1)

        refused = tmp_path / "refused"
        plan = ["plan", *connect, "--topics", topic]
        assert main([*plan, "--output-dir", str(refused)]) == 4
        assert "broker 4 is down" in capsys.readouterr().err
        assert not refused.exists()

        out = tmp_path / "away"
        assert main([*plan, "--remove-brokers", "4", "--output-dir", str(out)]) == 0
        saved = load_snapshot(out / "snapshot.json")
        assert saved.dead_broker_ids == (4,)
        _assert_valid_plan(saved, out, [topic], {1, 2, 3})
    finally:
        sandbox.restart(4, ready_brokers)
        wait_until(
            lambda: all(4 in (p.isr or ()) for p in admin.describe_partitions() if 4 in p.replicas),
            60,
            "broker 4 to rejoin the ISRs",
        )
