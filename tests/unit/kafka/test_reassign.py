"""Reassignments sent to one broker that answered: the partitions' answers read, and a
ZooKeeper-mode broker's refusal handed to kafka-python's own call to the controller."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from types import SimpleNamespace
from typing import Any

import kafka.errors as kerrors
from kafka.admin import KafkaAdminClient
from kafka.structs import TopicPartition as KafkaTopicPartition

from ferry.kafka.client import spread
from ferry.kafka.client.reassign import alter_reassignments
from ferry.model import TopicPartition

A, B = TopicPartition("t", 0), TopicPartition("t", 1)


class _Manager:
    """Four brokers; every request is answered with ``answer`` and its broker noted."""

    def __init__(self, answer: Any) -> None:
        self.answer, self.sent_to = answer, []
        self.cluster = SimpleNamespace(brokers=lambda: [SimpleNamespace(node_id=n) for n in (1, 2, 3, 4)])

    def least_loaded_node(self) -> int:
        return 1

    async def send(self, request: Any, node_id: int) -> Any:
        self.sent_to.append(node_id)
        return self.answer

    def run(self, ask: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
        return asyncio.run(ask())


class _Client:
    _process_alter_partition_reassignments_input = staticmethod(
        KafkaAdminClient._process_alter_partition_reassignments_input
    )

    def __init__(self, answer: Any) -> None:
        self._manager = _Manager(answer)
        self.through_controller: list[Any] = []

    def alter_partition_reassignments(self, wanted: Any) -> Any:
        self.through_controller.append(wanted)
        return {KafkaTopicPartition("t", 0): None, KafkaTopicPartition("t", 1): None}


def _answer(error_code: int, partitions: list[tuple[int, int]]) -> Any:
    topic = SimpleNamespace(
        name="t", partitions=[SimpleNamespace(partition_index=p, error_code=e) for p, e in partitions]
    )
    return SimpleNamespace(error_code=error_code, error_message=None, responses=[topic])


def test_it_goes_to_the_broker_that_answered_last_and_reads_each_partition() -> None:
    client = _Client(_answer(0, [(0, 0), (1, kerrors.NoReassignmentInProgressError.errno)]))
    spread._ANSWERED[client] = 3
    found = alter_reassignments(client, {A: [1, 2], B: None}, 30_000)
    assert found == {A: None, B: kerrors.NoReassignmentInProgressError}
    assert client._manager.sent_to == [3] and client.through_controller == []
    del spread._ANSWERED[client]
    alter_reassignments(client, {A: [1, 2]}, 30_000)
    assert client._manager.sent_to == [3, 1]  # none answered yet: the least busy


def test_a_broker_that_is_not_the_controller_hands_it_to_kafka_pythons_call() -> None:
    client = _Client(_answer(kerrors.NotControllerError.errno, []))
    found = alter_reassignments(client, {A: [1, 2], B: [2, 3]}, 30_000)
    assert found == {A: None, B: None}
    assert client.through_controller == [
        {KafkaTopicPartition("t", 0): [1, 2], KafkaTopicPartition("t", 1): [2, 3]}
    ]
