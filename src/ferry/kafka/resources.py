"""Names of dynamic config entries ferry reads and writes (throttles), as plain values.

A separate module so that :mod:`ferry.kafka.admin`'s Protocol, the kafka-python client and the
executor's journal all speak of the same ``ConfigKey`` without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ResourceType(StrEnum):
    """The config resources a throttle lives on (Kafka's ConfigResource.Type names)."""

    TOPIC = "topic"
    BROKER = "broker"


@dataclass(frozen=True, slots=True, order=True)
class ConfigKey:
    """One config entry of one resource, e.g. (broker, "1", "leader.replication.throttled.rate")."""

    resource_type: ResourceType
    resource_name: str
    key: str

    def __str__(self) -> str:
        return f"{self.resource_type}:{self.resource_name}:{self.key}"
