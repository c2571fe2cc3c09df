"""Reassignments submitted and cancelled through one kafka-python admin client.

AlterPartitionReassignments is a write: it goes to one broker, which forwards it to the active
controller under KRaft (a ZooKeeper-mode broker refuses it unless it is the controller, and then
kafka-python's own call finds that one), and is never asked of several at once the way the reads of
:mod:`ferry.kafka.client.metadata` are (a stopped broker would apply its copy when it is back, over
whatever was decided meanwhile). Which broker: one that answered the run's poll a moment ago, not
the one kafka-python took for the controller once (:func:`ferry.kafka.client.spread.to_one_that_answered`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import kafka.errors as kerrors
from kafka.protocol.admin import AlterPartitionReassignmentsRequest
from kafka.structs import TopicPartition as KafkaTopicPartition

from ferry.kafka.client.spread import to_one_that_answered
from ferry.model import TopicPartition


def alter_reassignments(
    client: Any, targets: Mapping[TopicPartition, Sequence[int] | None], timeout_ms: int
) -> dict[TopicPartition, Any]:
    """Submit or cancel (None) reassignments in one AlterPartitionReassignments request; each
    partition's error class (None: accepted). A partition the answer does not name is left out.

    Raises:
        the request's top-level error (not authorized, no controller).
    """
    wanted = {
        KafkaTopicPartition(tp.topic, tp.partition): None if r is None else [int(b) for b in r]
        for tp, r in targets.items()
    }
    topics = client._process_alter_partition_reassignments_input(wanted)
    answer = to_one_that_answered(
        client, AlterPartitionReassignmentsRequest(timeout_ms=timeout_ms, topics=topics)
    )
    if kerrors.for_code(answer.error_code) is kerrors.NotControllerError:
        # A ZooKeeper-mode cluster: its brokers do not forward the request, only the controller
        # takes it, and kafka-python finds that one.
        found = client.alter_partition_reassignments(wanted)
        return {TopicPartition(tp.topic, tp.partition): error for tp, error in found.items()}
    if answer.error_code != 0:
        raise kerrors.for_code(answer.error_code)(answer.error_message)
    results: dict[TopicPartition, Any] = {}
    for topic in answer.responses:
        for p in topic.partitions:
            error = kerrors.for_code(p.error_code)
            results[TopicPartition(topic.name, int(p.partition_index))] = (
                None if error is kerrors.NoError else error
            )
    return results
