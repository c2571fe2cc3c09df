"""A live snapshot reflects the topics, replicas, racks, leaders and data of a real cluster."""

from __future__ import annotations

from typing import Any

import pytest
from kafka_helpers import create_topics, produce, racks_of, wait_until

from ferry.errors import PreconditionError
from ferry.kafka.client import KafkaPythonAdmin
from ferry.kafka.snapshot import LiveSnapshot, collect
from ferry.model import TopicPartition

RACKS = {1: "r0", 2: "r1", 3: "r0", 4: "r1"}
TOPICS: dict[str, dict[str, Any]] = {
    "snap-p1-rf1": {"num_partitions": 1, "replication_factor": 1},
    "snap-p6-rf2": {"num_partitions": 6, "replication_factor": 2},
    "snap-p4-rf3": {
        "num_partitions": 4,
        "replication_factor": 3,
        "configs": {"min.insync.replicas": "2"},
    },
    "snap-assigned": {"assignments": {0: [1, 2], 1: [3, 4], 2: [4, 1]}},
}
MB = 1024 * 1024


@pytest.fixture(scope="module")
def topics(bootstrap: str) -> dict[str, dict[str, Any]]:
    """The module's topics, created once, with about 4 MB of data in total."""
    create_topics(bootstrap, TOPICS)
    for name, size in (("snap-p6-rf2", 2 * MB), ("snap-p4-rf3", MB), ("snap-assigned", MB // 2)):
        produce(bootstrap, name, size)
    produce(bootstrap, "snap-p1-rf1", 100_000)
    return TOPICS


def _snapshot(admin: KafkaPythonAdmin) -> LiveSnapshot:
    return collect(admin, sorted(TOPICS))


def test_brokers_and_racks(admin: KafkaPythonAdmin, topics: object) -> None:
    snap = _snapshot(admin).snapshot
    assert snap.racks == RACKS


def test_partition_counts_replication_and_assignment(admin: KafkaPythonAdmin, topics: object) -> None:
    snap = _snapshot(admin).snapshot
    for name, spec in TOPICS.items():
        parts = [p for p in snap.partitions if p.tp.topic == name]
        if "assignments" in spec:
            assignments = spec["assignments"]
            assert isinstance(assignments, dict)
            assert {p.tp.partition: list(p.replicas) for p in parts} == assignments
        else:
            assert len(parts) == spec["num_partitions"]
            assert {p.replication_factor for p in parts} == {spec["replication_factor"]}


def test_leaders_isr_and_rack_aware_placement(admin: KafkaPythonAdmin, topics: object) -> None:
    snap = _snapshot(admin).snapshot
    for p in snap.partitions:
        assert p.leader in p.replicas
        assert p.isr is not None
        assert set(p.isr) == set(p.replicas), f"{p.tp} ISR {p.isr} != replicas {p.replicas}"
        if p.replication_factor == 2 and p.tp.topic != "snap-assigned":
            # Kafka's rack-aware default placement spreads RF <= racks over distinct racks.
            assert len(set(racks_of(p.replicas, RACKS))) == 2, p


def test_sizes_are_positive_and_per_replica(admin: KafkaPythonAdmin, topics: object) -> None:
    live = _snapshot(admin)
    for p in live.snapshot.partitions:
        sizes = live.replica_sizes[p.tp]
        assert set(sizes) == set(p.replicas)
        assert p.size_bytes is not None
        assert p.leader is not None
        assert p.size_bytes == sizes[p.leader]
        assert p.size_bytes > 0, p
    total = sum(p.size for p in live.snapshot.partitions if p.tp.topic == "snap-p6-rf2")
    assert 2 * MB <= total < 3 * MB


def test_sizes_grow_with_more_data(bootstrap: str, admin: KafkaPythonAdmin, topics: object) -> None:
    before = _snapshot(admin).snapshot
    produce(bootstrap, "snap-p1-rf1", MB)
    after = _snapshot(admin).snapshot
    tp = TopicPartition("snap-p1-rf1", 0)
    assert after.partition(tp).size >= before.partition(tp).size + 1_000_000


def test_min_insync_and_no_reassignments(admin: KafkaPythonAdmin, topics: object) -> None:
    live = _snapshot(admin)
    assert live.min_insync["snap-p4-rf3"] == 2
    assert live.min_insync["snap-p6-rf2"] == 1
    assert dict(live.reassignments) == {}


def test_unknown_topic_is_a_precondition_error(admin: KafkaPythonAdmin) -> None:
    with pytest.raises(PreconditionError, match="'no-such-topic' does not exist"):
        collect(admin, ["no-such-topic"])


def test_ongoing_reassignment_shows_adding_and_removing(
    bootstrap: str, admin: KafkaPythonAdmin, topics: object
) -> None:
    """Throttle a move to a crawl so it is still in flight when the snapshot is taken."""
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
    from kafka.structs import TopicPartition as KafkaTopicPartition

    client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
    tp_rf1 = KafkaTopicPartition("snap-p1-rf1", 0)
    current = _snapshot(admin).snapshot
    source = current.partition(TopicPartition("snap-p1-rf1", 0)).replicas[0]
    target = next(b for b in RACKS if b != source)
    throttle = {
        "leader.replication.throttled.rate": "1",
        "follower.replication.throttled.rate": "1",
    }
    brokers = [ConfigResource(ConfigResourceType.BROKER, str(b), throttle) for b in RACKS]
    topic_cfg = ConfigResource(
        ConfigResourceType.TOPIC,
        tp_rf1.topic,
        {
            "leader.replication.throttled.replicas": "*",
            "follower.replication.throttled.replicas": "*",
        },
    )
    try:
        client.alter_configs([*brokers, topic_cfg], raise_on_unknown=False)
        client.alter_partition_reassignments({tp_rf1: [target]})
        live = _snapshot(admin)
        moving = live.reassignments[TopicPartition("snap-p1-rf1", 0)]
        assert moving.adding_replicas == (target,)
        assert moving.removing_replicas == (source,)
    finally:
        client.alter_partition_reassignments({tp_rf1: None})
        client.reset_configs([*brokers, topic_cfg], raise_on_unknown=False)
        client.close()
    wait_until(lambda: not _snapshot(admin).reassignments, 30, "the reassignment to be cancelled")
