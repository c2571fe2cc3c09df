"""The executor's Admin API writes on a real cluster, beyond the contract (support/admin_contract).

Refusals, throttle configs, elections and the cluster id are contract tests, run on the fake too.
"""

from __future__ import annotations

import pytest
from kafka_helpers import create_topics, produce, stopped, wait_until

from ferry.errors import KafkaError
from ferry.kafka.client import KafkaPythonAdmin
from ferry.kafka.resources import ConfigKey, ResourceType
from ferry.model import TopicPartition
from ferry.sandbox import Sandbox, SandboxState

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


def test_submitted_reassignment_completes(admin: KafkaPythonAdmin, bootstrap: str) -> None:
    create_topics(bootstrap, {"aw-move": {"assignments": {0: [1, 2], 1: [3, 4]}}})
    produce(bootstrap, "aw-move", 200_000)
    tp0, tp1 = TopicPartition("aw-move", 0), TopicPartition("aw-move", 1)
    answers = admin.alter_reassignments({tp0: [3, 4], tp1: [4, 1]})
    assert answers == {tp0: None, tp1: None}
    wait_until(lambda: _replicas(admin, tp0) == (3, 4) and _replicas(admin, tp1) == (4, 1), 60, "replicas")
    wait_until(lambda: not admin.list_reassignments(["aw-move"]), 30, "reassignments to end")


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

        def outside_isr() -> set[int]:
            """The cancelled move's replica where it is still a replica but not in the ISR."""
            (state,) = [p for p in admin.describe_partitions(["aw-cancel"]) if p.tp == tp]
            assert {1, 2} <= set(state.replicas) and set(state.replicas) <= {1, 2, 3}
            return set(state.replicas) - {1, 2} - set(state.isr or ())

        # Cancel is not a revert (KIP-455): an adding replica that joined the ISR in time stays, one
        # that did not leaves. The controller answers for the reassignments and a broker for the
        # partition, which it learns from the metadata log a moment later: a bounded wait, as for
        # the throttles.
        wait_until(lambda: not outside_isr(), 15, "the cancelled move's replica out, or in the ISR")
    finally:
        admin.alter_configs(dict.fromkeys(throttle))
    _read_back(admin, list(throttle), {})


def test_a_config_write_that_timed_out_can_land_later_and_the_admin_says_until_when(
    kafka_sandbox: tuple[Sandbox, SandboxState], admin: KafkaPythonAdmin
) -> None:
    """A broker's own rate written while that broker is stopped (SIGSTOP: the request waits in its
    socket) times out; the broker applies it once it runs again, after the write failed. The
    admin says a failed write may land for a minute more; one that went through says nothing."""
    sandbox, state = kafka_sandbox
    rate = ConfigKey(ResourceType.BROKER, "4", FOLLOWER_RATE)
    others = ",".join(f"127.0.0.1:{state.node(b).port}" for b in (1, 2, 3))
    with KafkaPythonAdmin(others, timeout_s=1.5) as quick:
        quick.alter_configs({rate: "1000"})
        assert quick.config_writes_settle_in() == 0.0
        with stopped(sandbox, (4,), for_s=3.0), pytest.raises(KafkaError):
            quick.alter_configs({rate: "2000"})
        assert 55.0 < quick.config_writes_settle_in() <= 65.0  # from the sending, 1.5 s before
    try:
        _read_back(admin, [rate], {rate: "2000"})  # landed after the call failed
    finally:
        admin.alter_configs({rate: None})
