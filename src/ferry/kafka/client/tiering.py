"""Tiered storage (KIP-405) as the Admin API shows it: which topics keep their older segments in
remote storage, which brokers start a new replica at the leader's first offset not yet uploaded
(KIP-1023), and the last offset each partition has uploaded."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from functools import partial
from typing import Any

from kafka.admin import ConfigResource, ConfigResourceType, OffsetSpec
from kafka.structs import TopicPartition as KafkaTopicPartition

from ferry.kafka.admin import Tiering
from ferry.kafka.client.configs import any_broker_configs, own_broker_configs
from ferry.kafka.client.errors import Call
from ferry.model import TopicPartition

REMOTE_STORAGE = "remote.storage.enable"
FETCH_LAST_TIERED = "follower.fetch.last.tiered.offset.enable"


def describe_tiering(client: Any, call: Call, topics: Collection[str], brokers: Collection[int]) -> Tiering:
    """The tiered topics among ``topics`` and the brokers among ``brokers`` with KIP-1023 on: one
    DescribeConfigs for the topics, which any broker answers (hedged over brokers, so a stopped one
    does not hold it: :func:`~ferry.kafka.client.configs.any_broker_configs`), and one per broker, which
    only that broker answers."""
    topic_resources = [ConfigResource(ConfigResourceType.TOPIC, t, [REMOTE_STORAGE]) for t in sorted(topics)]
    broker_resources = [
        ConfigResource(ConfigResourceType.BROKER, str(b), [FETCH_LAST_TIERED]) for b in sorted(brokers)
    ]
    described: dict[str, Any] = {}
    if topic_resources:
        described |= call(
            "describing tiered storage configs", partial(any_broker_configs, client, topic_resources)
        )
    if broker_resources:
        described |= call(
            "describing tiered storage configs",
            partial(own_broker_configs, client, broker_resources),
        )
    return Tiering(
        frozenset(t for t, c in described.get("topic", {}).items() if _on(c, REMOTE_STORAGE)),
        frozenset(int(b) for b, c in described.get("broker", {}).items() if _on(c, FETCH_LAST_TIERED)),
    )


def _on(configs: Mapping[str, Any], key: str) -> bool:
    return str((configs.get(key) or {}).get("value", "false")).lower() == "true"


def latest_tiered(
    client: Any, call: Call, partitions: Collection[TopicPartition]
) -> dict[TopicPartition, int]:
    """The last offset each partition has in remote storage (ListOffsets LATEST_TIERED); -1 where
    nothing is uploaded yet."""
    if not partitions:
        return {}
    specs = {
        KafkaTopicPartition(tp.topic, tp.partition): OffsetSpec.LATEST_TIERED for tp in sorted(partitions)
    }
    found = call("listing tiered offsets", lambda: client.list_partition_offsets(specs))
    return {TopicPartition(tp.topic, tp.partition): int(info.offset) for tp, info in found.items()}
