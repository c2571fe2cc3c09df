"""``FakeAdmin``: an in-memory cluster behind the ClusterAdmin Protocol, for unit tests of pure logic.

It answers the way the real cluster does (tests/support/admin_contract.py runs the same tests
against both), so code tested against it behaves the same on Kafka. Tests drive it with the
set-up methods (``create_topic``, ``produce``, ``stop_broker``...), which mirror what an
integration test does to the real cluster.

Reassignments follow KIP-455 as KRaft implements it: while one is in flight the replicas are
target + the current replicas not in it; a new target replaces it (its in-flight adding replicas
become removing ones); a cancel drops the adding replicas and keeps the rest (RF may stay higher).
The fake has no clock: a move completes at the next read unless it is *throttled* -- a throttle
rate on the follower (adding) broker or the leader, with the partition listed in the topic's
throttled-replicas config, and data to copy. Then it is held, half copied, until the throttle is
lifted; the real-cluster tests use rates that make the copy take minutes, which looks the same.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from support.fake_dirs import FakeDirs
from support.fake_disks import FakeDisks

from ferry.errors import KafkaError, PreconditionError
from ferry.kafka.admin import (
    Disks,
    LogOffsets,
    OngoingReassignment,
    PartitionHealth,
    ReplicaSizes,
    Tiering,
)
from ferry.kafka.freeze import FreezeState
from ferry.kafka.resources import ConfigKey, ResourceType
from ferry.model import Broker, LogDir, PartitionState, TopicPartition

DEFAULT_MIN_INSYNC = 1
"""Kafka's default ``min.insync.replicas``, which the sandbox cluster keeps."""

CLUSTER_ID = "fAkEcLuStEr0iD-22chars"
"""A 22-character id, the shape of Kafka's base64 cluster ids."""

# The one-line reasons KafkaPythonAdmin gives for the controller's per-partition errors.
UNKNOWN_PARTITION = (
    "UnknownTopicOrPartitionError: "
    "This request is for a topic or partition that does not exist on this broker."
)
MESSAGE_BYTES = 100
"""The size of each message ``produce`` appends, for offsets."""
DISK_BYTES = 500 * 10**9
"""Each fake broker's disk, unless its Broker says otherwise."""
INVALID_ASSIGNMENT = "InvalidReplicationAssignmentError: Replication assignment is invalid."
NO_REASSIGNMENT = "NoReassignmentInProgressError: No partition reassignment is in progress."
NOT_AVAILABLE = "PreferredLeaderNotAvailableError: The preferred leader was not available."

_RATE_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
_REPLICA_KEYS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
_REPLICA_LIST = re.compile(r"^\*$|^\d+:\d+(,\d+:\d+)*$")


@dataclass
class _Partition:
    replicas: tuple[int, ...]
    leader: int | None
    isr: tuple[int, ...]
    size: int = 0
    moving: OngoingReassignment | None = None
    end: int = 0
    """Log end offset: messages of MESSAGE_BYTES each."""
    elr: tuple[int, ...] = ()


@dataclass
class FakeAdmin(FakeDisks):
    """A cluster of ``brokers`` with no topics; every broker starts alive."""

    brokers: dict[int, Broker] = field(default_factory=dict)
    partitions: dict[TopicPartition, _Partition] = field(default_factory=dict)
    min_insync: dict[str, int] = field(default_factory=dict)
    configs: dict[ConfigKey, str] = field(default_factory=dict)
    freeze: FreezeState | None = None
    closed: bool = False
    log_dirs: FakeDirs = field(init=False)
    tiering: Tiering = field(default_factory=Tiering)
    """Tiered topics and KIP-1023 brokers, where a test says so."""
    tiered_offsets: dict[TopicPartition, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.log_dirs = FakeDirs(
            lambda: {tp: p.replicas for tp, p in self.partitions.items()},
            lambda: [b.id for b in self.brokers.values() if b.alive],
            self._one_dir,
        )

    def _one_dir(self, broker_id: int) -> LogDir:
        broker = self.brokers[broker_id]
        size = broker.capacity_bytes or DISK_BYTES
        return LogDir(f"/data/{broker_id}", size, size // 2, cordoned=broker.cordoned)

    @classmethod
    def of(cls, brokers: Iterable[Broker]) -> FakeAdmin:
        return cls(brokers={b.id: b for b in brokers})

    # -- set-up, what a test does to a real cluster ------------------------------------------------

    def create_topic(
        self, topic: str, assignments: Mapping[int, Sequence[int]], *, min_insync: int | None = None
    ) -> None:
        """Create ``topic`` with explicit replica assignments; the first replica leads, as in Kafka."""
        if len({len(r) for r in assignments.values()}) > 1:
            # Kafka refuses this too (InvalidReplicationAssignment): one RF per topic at creation.
            raise ValueError("every partition of a new topic needs the same number of replicas")
        for number, replicas in assignments.items():
            unknown = set(replicas) - set(self.brokers)
            if unknown:
                raise ValueError(f"unknown brokers {sorted(unknown)}")
            alive = tuple(r for r in replicas if self.brokers[r].alive)
            self.partitions[TopicPartition(topic, number)] = _Partition(
                tuple(replicas), alive[0] if alive else None, alive
            )
        if min_insync is not None:
            self.min_insync[topic] = min_insync

    def produce(self, topic: str, size: int) -> None:
        """Append ``size`` bytes to every partition of ``topic`` (spread evenly) on live replicas."""
        parts = [p for tp, p in self.partitions.items() if tp.topic == topic]
        for p in parts:
            p.size += size // len(parts)
            p.end += size // len(parts) // MESSAGE_BYTES

    def stop_broker(self, broker_id: int) -> None:
        """The broker goes down: fenced, out of every ISR, leadership moves to the next ISR member."""
        self.brokers[broker_id] = replace(self.brokers[broker_id], alive=False)
        for p in self.partitions.values():
            if broker_id in p.isr and len(p.isr) > 1:
                # Kafka keeps the last ISR member in the ISR (it cannot shrink to empty).
                p.isr = tuple(r for r in p.isr if r != broker_id)
            if p.leader == broker_id:
                alive = [r for r in p.isr if self.brokers[r].alive]
                p.leader = alive[0] if alive else None

    def start_broker(self, broker_id: int) -> None:
        """The broker is back and has caught up: in every ISR again."""
        self.brokers[broker_id] = replace(self.brokers[broker_id], alive=True)
        for p in self.partitions.values():
            if broker_id in p.replicas and broker_id not in p.isr:
                p.isr = tuple(r for r in p.replicas if r in p.isr or r == broker_id)
            if p.leader is None and broker_id in p.isr:
                p.leader = broker_id

    def start_reassignment(self, tp: TopicPartition, target: Sequence[int]) -> None:
        """A reassignment in flight (KIP-455): replicas become target + original until it ends."""
        p = self.partitions[tp]
        current = p.replicas
        if p.moving is not None:
            # Replacing a move: KRaft takes the replicas with the old adding ones moved last.
            old = p.moving.adding_replicas
            current = (*(b for b in p.replicas if b not in old), *old)
        adding = tuple(b for b in target if b not in current)
        removing = tuple(b for b in current if b not in target)
        replicas = (*target, *removing)
        p.replicas = replicas
        p.moving = OngoingReassignment(tp, replicas, adding, removing)

    # -- ClusterAdmin ------------------------------------------------------------------------------

    def describe_brokers(self, *, include_fenced: bool = False) -> tuple[Broker, ...]:
        return tuple(b for _, b in sorted(self.brokers.items()) if include_fenced or b.alive)

    def describe_partitions(self, topics: Collection[str] | None = None) -> tuple[PartitionState, ...]:
        self._advance()
        selected = self._selected(topics)
        return tuple(
            PartitionState(tp, p.replicas, leader=p.leader, isr=p.isr) for tp, p in sorted(selected.items())
        )

    def describe_replica_sizes(self, topics: Collection[str] | None = None) -> ReplicaSizes:
        # DescribeLogDirs reaches live brokers only: a down broker's replicas have no size.
        self._advance()
        return {
            tp: {b: self._replica_size(p, b) for b in p.replicas if self.brokers[b].alive}
            for tp, p in self._selected(topics).items()
        }

    def describe_disks(self) -> Mapping[int, Disks]:
        # A broker without a capacity of its own has the fake's one disk size; down ones say nothing.
        return {
            b.id: Disks(b.capacity_bytes or DISK_BYTES, b.cordoned, (f"/data/{b.id}",) if b.cordoned else ())
            for b in self.brokers.values()
            if b.alive
        }

    def cordon(self, broker_id: int, cordoned: bool = True) -> None:
        """Cordon (or uncordon) every log dir of ``broker_id``."""
        self.brokers[broker_id] = replace(self.brokers[broker_id], cordoned=cordoned)

    def list_reassignments(self, topics: Collection[str] | None = None) -> tuple[OngoingReassignment, ...]:
        self._advance()
        return tuple(p.moving for _, p in sorted(self._selected(topics).items()) if p.moving is not None)

    def describe_min_insync(self, topics: Collection[str]) -> Mapping[str, int]:
        return {t: self.min_insync.get(t, DEFAULT_MIN_INSYNC) for t in self._selected_topics(topics)}

    def describe_health(self, topics: Collection[str] | None = None) -> tuple[PartitionHealth, ...]:
        self._advance()
        return tuple(
            PartitionHealth(tp, p.replicas, p.leader, p.isr, p.elr)
            for tp, p in sorted(self._selected(topics).items())
        )

    def log_offsets(
        self, partitions: Collection[TopicPartition], *, within_s: float | None = None
    ) -> Mapping[TopicPartition, LogOffsets]:
        return {
            tp: LogOffsets(self.partitions[tp].end, 0)
            for tp in partitions
            if tp in self.partitions and self.partitions[tp].leader is not None
        }

    def close(self) -> None:
        self.closed = True

    def cluster_id(self) -> str | None:
        return CLUSTER_ID

    def alter_reassignments(
        self, targets: Mapping[TopicPartition, Sequence[int] | None]
    ) -> Mapping[TopicPartition, str | None]:
        return {tp: self._alter_one(tp, target) for tp, target in targets.items()}

    def describe_throttle_configs(self, keys: Collection[ConfigKey]) -> Mapping[ConfigKey, str]:
        for key in keys:
            self._check_resource(key, "describing throttle configs")
        return {k: self.configs[k] for k in keys if k in self.configs}

    def config_writes_settle_in(self) -> float:
        return 0.0  # its writes fail at once or land at once

    def alter_configs(self, writes: Mapping[ConfigKey, str | None]) -> None:
        for key in writes:
            # kafka-python sends each broker's configs to that broker: an unknown one fails the call.
            if key.resource_type is ResourceType.BROKER:
                self._check_resource(key, "altering configs")
        failed: list[str] = []
        for resource in sorted({(k.resource_type, k.resource_name) for k in writes}):
            entries = {k: v for k, v in writes.items() if (k.resource_type, k.resource_name) == resource}
            # Kafka applies each resource on its own: a bad entry fails its resource, not the others.
            problem = next((why for k, v in entries.items() if (why := self._invalid(k, v))), None)
            if problem:
                failed.append(f"{resource[0]} {resource[1]}: {problem}")
                continue
            for key, value in entries.items():
                if value is None:
                    self.configs.pop(key, None)
                else:
                    self.configs[key] = value
        if failed:
            raise KafkaError(f"altering configs failed: {'; '.join(failed)}")

    def elect_preferred_leaders(
        self, partitions: Collection[TopicPartition]
    ) -> Mapping[TopicPartition, str | None]:
        self._advance()
        answers: dict[TopicPartition, str | None] = {}
        for tp in partitions:
            p = self.partitions.get(tp)
            if p is None:
                answers[tp] = UNKNOWN_PARTITION
                continue
            preferred = p.replicas[0]
            if p.leader != preferred and (preferred not in p.isr or not self.brokers[preferred].alive):
                answers[tp] = NOT_AVAILABLE
                continue
            p.leader = preferred  # already leading is no error either (ElectionNotNeeded)
            answers[tp] = None
        return answers

    def read_freeze(self, *, within_s: float | None = None) -> FreezeState | None:
        return self.freeze

    def write_freeze(self, state: FreezeState) -> None:
        self.freeze = state

    # -- reassignments and throttles ---------------------------------------------------------------

    def _alter_one(self, tp: TopicPartition, target: Sequence[int] | None) -> str | None:
        p = self.partitions.get(tp)
        if p is None:
            return UNKNOWN_PARTITION
        if target is None:
            if p.moving is None:
                return NO_REASSIGNMENT
            # A cancel drops the adding replicas and keeps the rest, as KRaft's revert does.
            p.replicas = tuple(b for b in p.replicas if b not in p.moving.adding_replicas)
            p.moving = None
            return None
        if len(set(target)) != len(target) or not set(target) <= set(self.brokers):
            return INVALID_ASSIGNMENT
        self.start_reassignment(tp, target)
        return None

    def _advance(self) -> None:
        """Complete every move that is not held back by a throttle (the fake's notion of time)."""
        for tp, p in self.partitions.items():
            if p.moving is not None and not self._held(tp, p):
                self._complete(p, p.moving)

    def _complete(self, p: _Partition, moving: OngoingReassignment) -> None:
        target = tuple(b for b in moving.replicas if b not in moving.removing_replicas)
        p.replicas = target
        p.isr = tuple(b for b in target if self.brokers[b].alive)
        if p.leader not in target:
            p.leader = p.isr[0] if p.isr else None
        p.moving = None

    def _held(self, tp: TopicPartition, p: _Partition) -> bool:
        moving = p.moving
        if moving is None or not moving.adding_replicas or p.size == 0:
            return False
        follower = any(self._throttled(tp, b, "follower") for b in moving.adding_replicas)
        return follower or (p.leader is not None and self._throttled(tp, p.leader, "leader"))

    def _throttled(self, tp: TopicPartition, broker: int, side: str) -> bool:
        rate = ConfigKey(ResourceType.BROKER, str(broker), f"{side}.replication.throttled.rate")
        listed = self.configs.get(
            ConfigKey(ResourceType.TOPIC, tp.topic, f"{side}.replication.throttled.replicas")
        )
        if rate not in self.configs or listed is None:
            return False
        return listed == "*" or f"{tp.partition}:{broker}" in listed.split(",")

    def _replica_size(self, p: _Partition, broker: int) -> int:
        # An adding replica of a held move has copied part of the data (Kafka's first fetch).
        if p.moving is not None and broker in p.moving.adding_replicas:
            return p.size // 2
        return p.size

    def _check_resource(self, key: ConfigKey, action: str) -> None:
        if key.resource_type is ResourceType.BROKER and int(key.resource_name) not in self.brokers:
            raise KafkaError(f"{action} failed: UnknownBrokerIdError: {key.resource_name}")

    def _invalid(self, key: ConfigKey, value: str | None) -> str | None:
        """Why Kafka would refuse ``key = value`` (None: it accepts it)."""
        if key.resource_type is ResourceType.TOPIC and key.resource_name not in {
            tp.topic for tp in self.partitions
        }:
            return UNKNOWN_PARTITION
        if value is None:
            return None  # deleting an entry that is not set is no error
        if key.key in _RATE_KEYS and not value.isdigit():
            return f"InvalidRequestError: Invalid value {value} for configuration {key.key}: not a LONG"
        if key.key in _REPLICA_KEYS and not _REPLICA_LIST.match(value):
            return f"InvalidConfigurationError: Invalid value [{value}] for configuration {key.key}"
        return None

    # -- helpers -----------------------------------------------------------------------------------

    def _selected_topics(self, topics: Collection[str] | None) -> list[str]:
        existing = sorted({tp.topic for tp in self.partitions})
        if topics is None:
            return existing
        for topic in sorted(topics):
            if topic not in existing:
                # The same error, and message, as KafkaPythonAdmin gives for UnknownTopicOrPartition.
                raise PreconditionError(f"topic {topic!r} does not exist", hint="check --topics")
        return sorted(topics)

    def _selected(self, topics: Collection[str] | None) -> dict[TopicPartition, _Partition]:
        wanted = set(self._selected_topics(topics))
        return {tp: p for tp, p in self.partitions.items() if tp.topic in wanted}
