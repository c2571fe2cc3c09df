"""What ``--pace auto`` reads of every partition: replicas, ISR and ELR (DescribeTopicPartitions,
KIP-966), and log offsets on the leaders (ListOffsets), through one kafka-python admin client."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from functools import partial
from typing import Any, Protocol, TypeVar

from kafka.admin import OffsetSpec
from kafka.structs import TopicPartition as KafkaTopicPartition

from ferry.kafka.admin import LogOffsets, PartitionHealth
from ferry.kafka.client.errors import raise_for
from ferry.model import TopicPartition

T = TypeVar("T")


class Call(Protocol):
    """The admin's ``_call``: runs a request with its errors translated and retried."""

    def __call__(self, action: str, call: Callable[[], T]) -> T: ...


def describe_health(
    client: Any, call: Call, topics: Collection[str] | None = None
) -> tuple[PartitionHealth, ...]:
    """Replicas, leader, ISR and ELR (DescribeTopicPartitions, a page of 2,000 partitions at a
    time; all topics when ``topics`` is None, listed by one Metadata request)."""
    if topics is None:
        names = sorted(t["name"] for t in call("listing topics", client.describe_topics))
    else:
        names = sorted(topics)
    found: list[PartitionHealth] = []
    cursor: dict[str, Any] | None = None
    while names:
        page = call(
            "describing topic partitions",
            partial(client.describe_topic_partitions, names, cursor=cursor),
        )
        for topic in page["topics"]:
            raise_for(topic["error_code"], "describing topic partitions", topic["name"])
            found.extend(_health(topic["name"], p) for p in topic["partitions"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    return tuple(found)


def log_offsets(
    client: Any, call: Call, partitions: Collection[TopicPartition]
) -> Mapping[TopicPartition, LogOffsets]:
    """Log end and local start offsets (ListOffsets LATEST and EARLIEST_LOCAL, KIP-405)."""
    if not partitions:
        return {}
    wanted = [KafkaTopicPartition(tp.topic, tp.partition) for tp in sorted(partitions)]

    def offsets(spec: OffsetSpec) -> Mapping[Any, Any]:
        specs = dict.fromkeys(wanted, spec)
        return call("listing offsets", lambda: client.list_partition_offsets(specs))

    ends, starts = offsets(OffsetSpec.LATEST), offsets(OffsetSpec.EARLIEST_LOCAL)
    return {
        TopicPartition(tp.topic, tp.partition): LogOffsets(ends[tp].offset, starts[tp].offset)
        for tp in wanted
        if tp in ends and tp in starts
    }


def _health(topic: str, p: Mapping[str, Any]) -> PartitionHealth:
    leader = int(p["leader_id"])
    return PartitionHealth(
        TopicPartition(topic, int(p["partition_index"])),
        tuple(int(r) for r in p["replica_nodes"]),
        leader if leader >= 0 else None,
        tuple(int(r) for r in p["isr_nodes"]),
        tuple(int(r) for r in p["eligible_leader_replicas"] or ()),
    )
