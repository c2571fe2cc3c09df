"""The brokers, the partitions' replicas and the ongoing reassignments, read through one
kafka-python admin client from whichever broker answers first.

Any broker answers all three: DescribeCluster and Metadata from its own cache,
ListPartitionReassignments by forwarding it to the active controller. kafka-python sends the first
two to one broker of its choosing and the last to the broker its metadata once named controller (a
random broker under KRaft) for the client's whole life; a stopped broker would hold a run's every
poll. They go to other brokers too when the first does not answer soon
(:func:`ferry.kafka.client.spread.first_answer`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from functools import partial
from typing import Any

import kafka.errors as kerrors
from kafka.protocol.admin import DescribeClusterRequest, ListPartitionReassignmentsRequest
from kafka.protocol.metadata import MetadataRequest

from ferry.kafka.admin import OngoingReassignment
from ferry.kafka.client.errors import Call, raise_for
from ferry.kafka.client.spread import first_answer
from ferry.model import PartitionState, TopicPartition

_LIST_TIMEOUT_MS = 30_000
"""How long the broker may wait for the controller's answer to a listing it forwards."""


def metadata_request(topics: Collection[str] | None) -> MetadataRequest:
    """Metadata of ``topics`` (None: every topic); never creates one."""
    wanted = (
        None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t) for t in sorted(topics)]
    )
    return MetadataRequest(topics=wanted, allow_auto_topic_creation=False)


def describe_cluster(client: Any, call: Call) -> list[dict[str, Any]]:
    """Every registered broker, fenced ones too (DescribeCluster v2, KIP-1073), as kafka-python's
    ``describe_cluster()`` lists them; that call itself on brokers older than DescribeCluster."""

    def request() -> DescribeClusterRequest:
        return DescribeClusterRequest(
            include_cluster_authorized_operations=False, include_fenced_brokers=True
        )

    def described() -> list[dict[str, Any]]:
        try:
            answer = _checked_answer(client, request)
        except kerrors.IncompatibleBrokerVersion:
            return list(client.describe_cluster()["brokers"])
        return list(answer.to_dict()["brokers"])

    return call("describing the cluster", described)


def describe_partitions(
    client: Any, call: Call, topics: Collection[str] | None
) -> tuple[PartitionState, ...]:
    """Replicas, leader and ISR of every partition of ``topics`` (None: all; one Metadata answer)."""
    answer = call("describing topics", partial(first_answer, client, partial(metadata_request, topics)))
    states: list[PartitionState] = []
    for topic in answer.to_dict()["topics"]:
        raise_for(topic["error_code"], "describing topics", topic["name"])
        states.extend(_partition_state(topic["name"], p) for p in topic["partitions"])
    return tuple(states)


def list_reassignments(
    client: Any, call: Call, topics: Collection[str] | None
) -> tuple[OngoingReassignment, ...]:
    """Ongoing reassignments of ``topics`` (None: all), one ListPartitionReassignments answer."""

    def request() -> ListPartitionReassignmentsRequest:
        return ListPartitionReassignmentsRequest(timeout_ms=_LIST_TIMEOUT_MS, topics=None)

    answer = call("listing partition reassignments", partial(_checked_answer, client, request))
    found = [
        OngoingReassignment(
            TopicPartition(topic.name, int(p.partition_index)),
            tuple(p.replicas),
            tuple(p.adding_replicas),
            tuple(p.removing_replicas),
        )
        for topic in answer.topics
        if topics is None or topic.name in topics
        for p in topic.partitions
    ]
    return tuple(sorted(found, key=lambda r: r.tp))


def _checked_answer(client: Any, request: Callable[[], Any]) -> Any:
    """The first answer to ``request()``, raised as its top-level error where it has one."""
    answer = first_answer(client, request)
    if answer.error_code != 0:
        raise kerrors.for_code(answer.error_code)(answer.error_message)
    return answer


def _partition_state(topic: str, p: Mapping[str, Any]) -> PartitionState:
    leader = int(p["leader_id"])
    return PartitionState(
        TopicPartition(topic, int(p["partition_index"])),
        tuple(int(r) for r in p["replica_nodes"]),
        leader=leader if leader >= 0 else None,
        isr=tuple(int(r) for r in p["isr_nodes"]),
    )
