"""``ferry execute --one-replica-at-a-time`` on the real cluster: the controller never sees more
than one adding replica of the partition, each step keeps its rack counts, and the move ends on
its target with no throttle left."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from ferry_process import write_plan
from kafka_helpers import create_topics, produce, wait_until

from ferry.cli.main import main
from ferry.execute.throttles import FOLLOWER_REPLICAS, LEADER_REPLICAS
from ferry.kafka.client import KafkaPythonAdmin
from ferry.kafka.resources import ConfigKey, ResourceType
from ferry.model import TopicPartition

TOPIC = "one-at-a-time"
TP = TopicPartition(TOPIC, 0)


def test_each_step_adds_one_replica_and_the_move_ends_on_its_target(
    bootstrap: str, admin: KafkaPythonAdmin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    create_topics(bootstrap, {TOPIC: {"assignments": {0: [1, 2]}}})
    produce(bootstrap, TOPIC, 4_000_000)
    seen: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    stop = threading.Event()

    def sample() -> None:
        with KafkaPythonAdmin(bootstrap, timeout_s=15) as watcher:
            while not stop.wait(0.2):
                seen.extend((r.target, r.adding_replicas) for r in watcher.list_reassignments([TOPIC]))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    plan = write_plan(tmp_path / "plan.json", TOPIC, {0: [3, 4]})
    # Kafka's replication quota measures its rate over 10 s at least, so a fresh throttle lets
    # 10 s worth of bytes through at once: at 300 kB/s the 4 MB of a step take over 13 s, so
    # every step is in flight long enough to be seen.
    argv = ["execute", "--plan", str(plan), "--bootstrap-server", bootstrap, "--journal", str(tmp_path / "j")]
    try:
        code = main(
            [*argv, "--throttle", "300000", "--one-replica-at-a-time", "--poll-interval", "0.5", "--wait"]
        )
    finally:
        stop.set()
        sampler.join(timeout=30)
    err = capsys.readouterr().err
    assert code == 0, err
    assert "next step: one-at-a-time-0 step 2/2" in err
    assert seen and all(len(adding) == 1 for _, adding in seen), seen
    # Racks r0 = {1, 3}, r1 = {2, 4}: 1 gives way to 3 first (same rack), then 2 to 4.
    assert {target for target, _ in seen} <= {(3, 2), (3, 4)} and (3, 2) in {t for t, _ in seen}
    wait_until(
        lambda: {p.tp: p.replicas for p in admin.describe_partitions([TOPIC])}[TP] == (3, 4), 15, "target"
    )
    keys = [ConfigKey(ResourceType.TOPIC, TOPIC, k) for k in (LEADER_REPLICAS, FOLLOWER_REPLICAS)]
    wait_until(lambda: admin.describe_throttle_configs(keys) == {}, 15, "throttles removed")
