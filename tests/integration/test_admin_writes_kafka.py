"""The executor's Admin API writes on a real cluster: reassign, cancel, throttle configs, elections."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka_helpers import create_topics, produce, wait_until

from ferry.errors import KafkaError
from ferry.kafka.client import KafkaPythonAdmin
from ferry.kafka.resources import ConfigKey, ResourceType
from ferry.model import TopicPartition

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LEADER_REPLICAS = "leader.replication.throttled.replicas"


def _replicas(admin: KafkaPythonAdmin, tp: TopicPartition) -> tuple[int, ...]:
    (state,) = [p for p in admin.describe_partitions([tp.topic]) if p.tp == tp]
    return state.replicas


def _read_back(admin: KafkaPythonAdmin, keys: list[ConfigKey], expected: dict[ConfigKey, str]) -> None:
    """Wait (bounded) until the configs read back as expected.

    KRaft applies a config change on the controller and then on each broker's metadata image a
    few milliseconds apart; DescribeConfigs asks one broker, which may not have caught up yet.
    """
    wait_until(lambda: admin.describe_throttle_configs(keys) == expected, 10, f"configs {expected}")


def test_cluster_id_is_known(admin: KafkaPythonAdmin) -> None:
    cluster_id = admin.cluster_id()
    assert cluster_id and len(cluster_id) >= 16


def test_submitted_reassignment_completes(admin: KafkaPythonAdmin, bootstrap: str) -> None:
    create_topics(bootstrap, {"aw-move": {"assignments": {0: [1, 2], 1: [3, 4]}}})
    produce(bootstrap, "aw-move", 200_000)
    tp0, tp1 = TopicPartition("aw-move", 0), TopicPartition("aw-move", 1)
    answers = admin.alter_reassignments({tp0: [3, 4], tp1: [4, 1]})
    assert answers == {tp0: None, tp1: None}
    wait_until(lambda: _replicas(admin, tp0) == (3, 4) and _replicas(admin, tp1) == (4, 1), 60, "replicas")
    wait_until(lambda: not admin.list_reassignments(["aw-move"]), 30, "reassignments to end")


def test_refusals_come_back_per_partition(admin: KafkaPythonAdmin, bootstrap: str) -> None:
    create_topics(bootstrap, {"aw-refuse": {"assignments": {0: [1, 2]}}})
    tp = TopicPartition("aw-refuse", 0)
    answers = admin.alter_reassignments({tp: None, TopicPartition("aw-refuse", 5): [1, 2]})
    assert answers[tp] is not None and "NoReassignmentInProgress" in answers[tp]
    assert answers[TopicPartition("aw-refuse", 5)] is not None
    assert _replicas(admin, tp) == (1, 2)


def test_cancel_stops_a_throttled_move(admin: KafkaPythonAdmin, bootstrap: str) -> None:
    """A move held back by a tiny throttle is in flight until cancelled; the replicas stay original."""
    create_topics(bootstrap, {"aw-cancel": {"assignments": {0: [1, 2]}}})
    produce(bootstrap, "aw-cancel", 2_000_000)
    tp = TopicPartition("aw-cancel", 0)
    throttle = {
        ConfigKey(ResourceType.TOPIC, "aw-cancel", LEADER_REPLICAS): "0:1,0:2",
        ConfigKey(ResourceType.TOPIC, "aw-cancel", "follower.replication.throttled.replicas"): "0:3",
        **{
            ConfigKey(ResourceType.BROKER, str(b), k): "10000"
            for b in (1, 2, 3)
            for k in (LEADER_RATE, FOLLOWER_RATE)
        },
    }
    admin.alter_configs(throttle)
    try:
        assert admin.alter_reassignments({tp: [1, 3]}) == {tp: None}
        (ongoing,) = admin.list_reassignments(["aw-cancel"])
        assert ongoing.adding_replicas == (3,)
        assert admin.alter_reassignments({tp: None}) == {tp: None}
        wait_until(lambda: not admin.list_reassignments(["aw-cancel"]), 30, "cancel")
        assert _replicas(admin, tp) == (1, 2)
    finally:
        admin.alter_configs(dict.fromkeys(throttle))
    _read_back(admin, list(throttle), {})


@pytest.fixture
def broker_rate_keys(admin: KafkaPythonAdmin) -> Iterator[list[ConfigKey]]:
    keys = [ConfigKey(ResourceType.BROKER, str(b), k) for b in (1, 2) for k in (LEADER_RATE, FOLLOWER_RATE)]
    yield keys
    admin.alter_configs(dict.fromkeys(keys))


def test_throttle_configs_set_read_back_and_delete(
    admin: KafkaPythonAdmin, bootstrap: str, broker_rate_keys: list[ConfigKey]
) -> None:
    create_topics(bootstrap, {"aw-throttle": {"num_partitions": 2, "replication_factor": 2}})
    topic_key = ConfigKey(ResourceType.TOPIC, "aw-throttle", LEADER_REPLICAS)
    keys = [*broker_rate_keys, topic_key]
    assert admin.describe_throttle_configs(keys) == {}
    values = {key: "12345" for key in broker_rate_keys} | {topic_key: "0:1,1:2"}
    admin.alter_configs(values)
    _read_back(admin, keys, values)
    # Incremental: changing one entry leaves the others alone.
    admin.alter_configs({broker_rate_keys[0]: "777"})
    _read_back(admin, keys, values | {broker_rate_keys[0]: "777"})
    admin.alter_configs(dict.fromkeys(keys))
    _read_back(admin, keys, {})


def test_bad_config_value_is_a_kafka_error(
    admin: KafkaPythonAdmin, broker_rate_keys: list[ConfigKey]
) -> None:
    with pytest.raises(KafkaError, match="altering configs failed: broker 1"):
        admin.alter_configs({broker_rate_keys[0]: "not-a-number"})


def test_preferred_leader_election(admin: KafkaPythonAdmin, bootstrap: str) -> None:
    """Reordering the replicas makes broker 2 preferred; electing moves leadership to it."""
    create_topics(bootstrap, {"aw-elect": {"assignments": {0: [1, 2]}}})
    tp = TopicPartition("aw-elect", 0)

    def leader() -> int | None:
        (state,) = admin.describe_partitions(["aw-elect"])
        return state.leader

    wait_until(lambda: leader() == 1, 30, "broker 1 to lead")
    admin.alter_reassignments({tp: [2, 1]})
    wait_until(lambda: _replicas(admin, tp) == (2, 1), 30, "reorder")
    wait_until(lambda: set(admin.describe_partitions(["aw-elect"])[0].isr or ()) == {1, 2}, 30, "ISR")
    assert admin.elect_preferred_leaders([tp]) == {tp: None}
    wait_until(lambda: leader() == 2, 30, "broker 2 to lead")
    # Electing again is not an error: the preferred replica already leads.
    assert admin.elect_preferred_leaders([tp]) == {tp: None}
