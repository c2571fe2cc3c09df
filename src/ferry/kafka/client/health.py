"""What ``--pace auto`` reads of every partition: replicas, ISR and ELR (DescribeTopicPartitions,
KIP-966), and log offsets on the leaders (ListOffsets), through one kafka-python admin client.

Any broker can say what the ISRs are, and kafka-python asks one at random. A broker that hangs
(a stopped process, a long GC: its connection stays open) would hold the reading until it is back,
by when the ISRs it shrank may be whole again: the pace would never see it. So the list of topics
and each page are asked of other brokers too when the first does not answer soon, and the first
answer is taken (:func:`ferry.kafka.client.spread.first_answer`)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from functools import partial
from typing import Any

from kafka.admin import OffsetSpec
from kafka.protocol.admin import DescribeTopicPartitionsRequest
from kafka.structs import TopicPartition as KafkaTopicPartition

from ferry.kafka.admin import LogOffsets, PartitionHealth
from ferry.kafka.client.errors import Call, raise_for
from ferry.kafka.client.metadata import describe_partitions, metadata_request
from ferry.kafka.client.spread import answers_within, first_answer
from ferry.model import TopicPartition

PAGE = 2_000
"""Partitions per DescribeTopicPartitions answer (Kafka's own default limit)."""


def describe_health(
    client: Any, call: Call, topics: Collection[str] | None = None
) -> tuple[PartitionHealth, ...]:
    """Replicas, leader, ISR and ELR (DescribeTopicPartitions, a page of 2,000 partitions at a
    time; all topics when ``topics`` is None, listed by one Metadata request)."""
    if topics is None:
        listed = call("listing topics", partial(first_answer, client, partial(metadata_request, None)))
        names = sorted(t.name for t in listed.topics)
    else:
        names = sorted(topics)
    found: list[PartitionHealth] = []
    cursor: Any = None
    while names:
        page = call(
            "describing topic partitions", partial(first_answer, client, partial(_page, names, cursor))
        )
        for topic in page.topics:
            raise_for(topic.error_code, "describing topic partitions", topic.name)
            found.extend(_health(topic.name, p) for p in topic.partitions)
        if page.next_cursor is None:
            break
        at = page.next_cursor
        cursor = DescribeTopicPartitionsRequest.Cursor(
            topic_name=at.topic_name, partition_index=at.partition_index
        )
    return tuple(found)


def _page(names: Sequence[str], cursor: Any) -> Any:
    topics = [DescribeTopicPartitionsRequest.TopicRequest(name=t) for t in names]
    return DescribeTopicPartitionsRequest(topics=topics, response_partition_limit=PAGE, cursor=cursor)


def log_offsets(
    client: Any, call: Call, partitions: Collection[TopicPartition], within_s: float | None = None
) -> Mapping[TopicPartition, LogOffsets]:
    """Log end and local start offsets (ListOffsets LATEST and EARLIEST_LOCAL, KIP-405).

    With ``within_s``, every leader is asked both at once and the partitions of a leader that has
    not answered by then are left out (:func:`ferry.kafka.client.spread.answers_within`); without
    it, kafka-python asks the leaders one after another and waits for each.
    """
    if not partitions:
        return {}
    wanted = [KafkaTopicPartition(tp.topic, tp.partition) for tp in sorted(partitions)]
    if within_s is None:
        ends, starts = (
            call("listing offsets", partial(client.list_partition_offsets, dict.fromkeys(wanted, spec)))
            for spec in (OffsetSpec.LATEST, OffsetSpec.EARLIEST_LOCAL)
        )
    else:
        leaders = {
            KafkaTopicPartition(p.tp.topic, p.tp.partition): p.leader
            for p in describe_partitions(client, call, {tp.topic for tp in partitions})
            if p.leader is not None
        }
        ends, starts = call("listing offsets", partial(_answered_offsets, client, wanted, leaders, within_s))
    return {
        TopicPartition(tp.topic, tp.partition): LogOffsets(ends[tp].offset, starts[tp].offset)
        for tp in wanted
        if tp in ends and tp in starts
    }


def _answered_offsets(
    client: Any,
    wanted: Sequence[KafkaTopicPartition],
    leaders: Mapping[KafkaTopicPartition, int],
    within_s: float,
) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """The log end and local start offsets, both asked of every leader at once, of the leaders that
    answered in time."""
    led: dict[int, list[KafkaTopicPartition]] = {}
    for tp in wanted:
        if tp in leaders:
            led.setdefault(leaders[tp], []).append(tp)
    # kafka-python's own request and answer (read uncommitted: the log end, as its call reads).
    requests = {
        leader: [
            client._list_partition_offsets_request(dict.fromkeys(tps, spec), 0)
            for spec in (OffsetSpec.LATEST, OffsetSpec.EARLIEST_LOCAL)
        ]
        for leader, tps in led.items()
    }
    ends: dict[Any, Any] = {}
    starts: dict[Any, Any] = {}
    for end, start in answers_within(client, requests, within_s).values():
        ends.update(client._list_partition_offsets_process_response(end))
        starts.update(client._list_partition_offsets_process_response(start))
    return ends, starts


def _health(topic: str, p: Any) -> PartitionHealth:
    leader = int(p.leader_id)
    return PartitionHealth(
        TopicPartition(topic, int(p.partition_index)),
        tuple(int(r) for r in p.replica_nodes),
        leader if leader >= 0 else None,
        tuple(int(r) for r in p.isr_nodes),
        tuple(int(r) for r in p.eligible_leader_replicas or ()),
    )
