"""Reading the cluster while brokers hang: the ISRs page by page, and a run's poll never held by a
stopped broker."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from kafka_helpers import create_topics, stopped, timed, topic_config_per_broker

from ferry.errors import KafkaError
from ferry.kafka.client import KafkaPythonAdmin, health
from ferry.kafka.config import client_settings, parse_properties
from ferry.kafka.freeze import CONTROL_TOPIC, FreezeState
from ferry.kafka.resources import ConfigKey, ResourceType
from ferry.model import TopicPartition
from ferry.sandbox import Sandbox, SandboxState


def test_the_isrs_are_read_page_by_page(
    bootstrap: str, admin: KafkaPythonAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    create_topics(bootstrap, {"health-pages": {"assignments": {0: [1, 2], 1: [2, 3], 2: [3, 4]}}})
    monkeypatch.setattr(health, "PAGE", 1)  # one partition per answer: three pages
    found = admin.describe_health(["health-pages"])
    assert [(h.tp, h.replicas) for h in found] == [
        (TopicPartition("health-pages", 0), (1, 2)),
        (TopicPartition("health-pages", 1), (2, 3)),
        (TopicPartition("health-pages", 2), (3, 4)),
    ]
    assert all(sorted(h.isr) == sorted(h.replicas) for h in found)


def test_two_stopped_brokers_do_not_hold_the_isr_reading(
    kafka_sandbox: tuple[Sandbox, SandboxState], admin: KafkaPythonAdmin
) -> None:
    """kafka-python asks one broker at random; a stopped one keeps its connection open and would
    hold the reading until it is back. Asked of three brokers at once, one of them answers."""
    sandbox, _ = kafka_sandbox
    admin.describe_health()  # connected to the brokers before any stops
    took: list[float] = []
    with stopped(sandbox, (1, 2)):
        for _ in range(4):
            found, seconds = timed(admin.describe_health)
            assert found
            took.append(seconds)
    assert max(took) < 1.5, took  # a reading held by a stopped broker takes until it is back


def test_stopped_brokers_in_the_bootstrap_list_do_not_hold_the_clients_start(
    kafka_sandbox: tuple[Sandbox, SandboxState],
) -> None:
    """kafka-python bootstraps from one server picked at random and waits all the time left for
    it, and a stopped broker takes the connection but never answers: three of four stopped, three
    starts in four failed after the whole timeout. Each server is now tried alone in turn with a
    share of the time, and the client starts on the one that answers, listed last."""
    sandbox, state = kafka_sandbox
    answering = f"127.0.0.1:{state.node(4).port}"
    servers = state.bootstrap.split(",")
    assert answering in servers
    listed = ",".join([*(s for s in servers if s != answering), answering])
    with stopped(sandbox, (1, 2, 3), for_s=4.5):
        client, seconds = timed(lambda: KafkaPythonAdmin(listed, timeout_s=4))
        client.close()
    assert seconds < 4  # three shares of a second, then broker 4


def test_stopped_brokers_in_a_sasl_bootstrap_list_are_not_taken_for_a_refused_login(
    kafka_sandbox: tuple[Sandbox, SandboxState],
) -> None:
    """A stopped broker takes the connection and ends no SASL login, as a broker refusing the
    login seems to: a refused login is only inferred once every address has had its turn."""
    sandbox, state = kafka_sandbox
    assert state.sasl_bootstrap is not None
    settings = client_settings(parse_properties(sandbox.sasl_config_file.read_text(encoding="utf-8")))
    answering = f"127.0.0.1:{state.node(4).sasl_port}"
    servers = state.sasl_bootstrap.split(",")
    assert answering in servers
    listed = ",".join([*(s for s in servers if s != answering), answering])
    with stopped(sandbox, (1, 2, 3), for_s=4.5):
        client, seconds = timed(lambda: KafkaPythonAdmin(listed, settings, timeout_s=4))
        client.close()
    assert seconds < 4


def test_a_server_that_takes_no_connection_first_in_the_bootstrap_list_costs_no_share(bootstrap: str) -> None:
    """A broker that is down refuses the TCP connection: it is tried last, so its share of the time
    is not spent waiting for it while the others answer."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        closed = f"127.0.0.1:{free.getsockname()[1]}"
    client, seconds = timed(lambda: KafkaPythonAdmin(f"{closed},{bootstrap}", timeout_s=10))
    client.close()
    assert seconds < 2  # its share would be two seconds


def test_a_stopped_broker_holds_none_of_a_polls_reads(
    kafka_sandbox: tuple[Sandbox, SandboxState], bootstrap: str, admin: KafkaPythonAdmin
) -> None:
    """What a run reads at every poll: the brokers, the reassignments, the replicas, the log dirs
    and (under --pace auto) the offsets and min ISRs; the bounded reads leave the stopped broker
    out instead of waiting for it."""
    sandbox, _ = kafka_sandbox
    create_topics(bootstrap, {"poll-reads": {"assignments": {0: [1, 3], 1: [2, 4], 2: [3, 1]}}})
    tps = [TopicPartition("poll-reads", p) for p in range(3)]
    admin.describe_log_dirs(["poll-reads"])  # connected to every broker before the stop
    took: dict[str, float] = {}
    with stopped(sandbox, (3,)):
        brokers, took["brokers"] = timed(admin.describe_brokers)
        _, took["reassignments"] = timed(admin.list_reassignments)
        partitions, took["partitions"] = timed(lambda: admin.describe_partitions(["poll-reads"]))
        dirs, took["dirs"] = timed(lambda: admin.describe_log_dirs(["poll-reads"], within_s=0.5))
        offsets, took["offsets"] = timed(lambda: admin.log_offsets(tps, within_s=0.5))
        min_isr, took["min ISR"] = timed(lambda: admin.describe_min_insync(["poll-reads"]))
    assert {b.id for b in brokers} == {1, 2, 3, 4}  # not fenced: stopped for 4 s at most
    assert len(partitions) == 3
    assert set(dirs) == {1, 2, 4}
    assert set(offsets) == set(tps[:2])  # partition 2's leader, broker 3, did not answer
    assert min_isr == {"poll-reads": 1}
    # Each read at most a hedge (the first broker asked, if it is the stopped one, has 0.5 s to
    # answer before others are asked too) and its own bound past what it takes anyway.
    assert max(took.values()) < 1.5, took
    # Back, it answers again.
    assert set(admin.describe_log_dirs(["poll-reads"], within_s=5.0)) == {1, 2, 3, 4}
    assert set(admin.log_offsets(tps, within_s=5.0)) == set(tps)


def test_a_stopped_leader_of_the_control_topic_holds_no_poll_read_of_the_freeze_flag(
    kafka_sandbox: tuple[Sandbox, SandboxState], admin: KafkaPythonAdmin
) -> None:
    """Only the control topic's leader answers the flag: a run's bounded read fails within its
    bound (the run keeps what it read last), where the unbounded one waits until it is back."""
    sandbox, _ = kafka_sandbox
    state = FreezeState(False, "health test", "ops@test", datetime.now(UTC).replace(microsecond=0))
    admin.write_freeze(state)
    assert admin.read_freeze(within_s=5.0) == state  # the consumer connected before the stop
    (control,) = admin.describe_partitions([CONTROL_TOPIC])
    assert control.leader is not None
    with stopped(sandbox, (control.leader,)):
        started = time.monotonic()
        with pytest.raises(KafkaError, match="no answer within 1 s") as raised:
            admin.read_freeze(within_s=1.0)
        took = time.monotonic() - started
    assert raised.value.transient and took < 2.0, took
    assert admin.read_freeze(within_s=10.0) == state  # back, from a new consumer


def test_a_stopped_broker_that_does_not_hold_the_control_topic_holds_no_freeze_or_unfreeze(
    kafka_sandbox: tuple[Sandbox, SandboxState], bootstrap: str
) -> None:
    """``ferry freeze`` on the bad day: a broker of the bootstrap list is stopped, and a new client
    (a new ``ferry freeze`` process) writes the flag and reads it back. The flag's own producer and
    consumer sent their metadata requests to any broker listed, and waited out kafka-python's 10 s
    connection set-up for a stopped one; the flag now goes to the partition's leader alone."""
    sandbox, _ = kafka_sandbox
    topic = f"fz-stopped-{uuid.uuid4().hex[:8]}"
    frozen = FreezeState(True, "broker down", "ops@test", datetime.now(UTC).replace(microsecond=0))
    with KafkaPythonAdmin(bootstrap, timeout_s=10, control_topic=topic) as admin:
        admin.write_freeze(replace(frozen, frozen=False))  # made: RF 3 on three of the four brokers
        (control,) = admin.describe_partitions([topic])
    (outside,) = {1, 2, 3, 4} - set(control.replicas)
    took: list[float] = []
    with stopped(sandbox, (outside,)):
        for state in (frozen, replace(frozen, frozen=False, reason="back"), frozen):
            with KafkaPythonAdmin(bootstrap, timeout_s=6, control_topic=topic) as fresh:
                _, wrote = timed(lambda: fresh.write_freeze(state))  # noqa: B023
                read, seconds = timed(lambda: fresh.read_freeze(within_s=3.0))
            assert read == state
            took += [wrote, seconds]
    assert max(took) < 3.0, took


def test_a_submission_and_a_topic_config_go_to_a_broker_that_answered_whichever_is_stopped(
    kafka_sandbox: tuple[Sandbox, SandboxState], bootstrap: str, admin: KafkaPythonAdmin
) -> None:
    """Any broker forwards AlterPartitionReassignments and a topic's configs to the controller;
    kafka-python sent the first to the one broker it once took for the controller, and waited
    for it while it was stopped, and the second to a broker with nothing in flight."""
    sandbox, _ = kafka_sandbox
    create_topics(bootstrap, {"submit-stopped": {"assignments": {0: [1, 2]}}})
    tp = TopicPartition("submit-stopped", 0)
    listed = ConfigKey(ResourceType.TOPIC, "submit-stopped", "leader.replication.throttled.replicas")
    took: dict[tuple[str, int], float] = {}
    for broker in (1, 2, 3, 4):
        admin.describe_log_dirs(["submit-stopped"])  # connected to every broker before the stop
        with stopped(sandbox, (broker,)):
            admin.list_reassignments()  # a poll's first read, answered by a broker that answers
            # The replicas it has: accepted, and nothing moves.
            answers, took[("submit", broker)] = timed(lambda: admin.alter_reassignments({tp: [1, 2]}))
            value = f"0:{broker}"
            _, took[("config", broker)] = timed(lambda: admin.alter_configs({listed: value}))  # noqa: B023
        assert answers == {tp: None}
        deadline = time.monotonic() + 20  # each broker's copy of the configs catches up
        while (read := _throttle_read(admin, listed)) != {listed: value} and time.monotonic() < deadline:
            time.sleep(0.2)
        assert read == {listed: value}, (
            read,
            topic_config_per_broker(bootstrap, "submit-stopped", listed.key),
        )
    admin.alter_configs({listed: None})
    assert max(took.values()) < 1.5, took


def _throttle_read(admin: KafkaPythonAdmin, key: ConfigKey) -> Mapping[ConfigKey, str] | str:
    """What the admin reads of ``key``, or its error (a broker just resumed may refuse a moment)."""
    try:
        return admin.describe_throttle_configs([key])
    except KafkaError as exc:
        return str(exc)
