"""A minimal in-memory ClusterAdmin for unit tests of the executor's loop (not a Kafka model).

Reassignments complete after a fixed number of ListPartitionReassignments calls; configs are a
dict; the fake records the most moves it ever had in flight per broker. The fuller FakeAdmin with
a contract suite against the real cluster lives elsewhere; this one only serves tests/unit/execute.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence

from support.fake_dirs import FakeDirs
from support.fake_disks import FakeDisks

from ferry.errors import KafkaError
from ferry.kafka.admin import (
    Disks,
    LogOffsets,
    OngoingReassignment,
    PartitionHealth,
    ReplicaSizes,
    Tiering,
)
from ferry.kafka.freeze import FreezeState
from ferry.kafka.resources import ConfigKey
from ferry.model import Broker, LogDir, PartitionState, TopicPartition


class ExecFakeAdmin(FakeDisks):
    """Partitions, configs and reassignments in dicts; see the module docstring."""

    def __init__(self, replicas: Mapping[TopicPartition, Sequence[int]], *, polls_to_finish: int = 2) -> None:
        self.replicas = {tp: tuple(r) for tp, r in replicas.items()}
        self.configs: dict[ConfigKey, str] = {}
        self.moving: dict[TopicPartition, tuple[tuple[int, ...], int]] = {}  # target, polls left
        # Moves that never finish (a stuck reassignment of another tool).
        self.stuck: set[TopicPartition] = set()
        self.polls_to_finish = polls_to_finish
        self.refuse: set[TopicPartition] = set()
        self.elected: list[TopicPartition] = []
        self.peak_per_broker: Counter[int] = Counter()
        self.config_writes: list[dict[ConfigKey, str | None]] = []
        self.fail_alter_configs = False
        self.freeze: FreezeState | None = None
        self.freeze_reads = 0
        # Calls to fail as an unreachable cluster does (a broker restarting, a failover).
        self.unreachable_polls = 0
        self.unreachable_submits = 0
        self.unreachable_config_writes = 0
        # How long a config write that failed may still land, where a test says so.
        self.settle_in_s = 0.0
        self.late: dict[TopicPartition, tuple[int, ...]] = {}  # submissions not arrived yet
        self.cordoned: set[int] = set()
        # What DescribeTopicPartitions shows, where a test says so (else the ISR is all replicas).
        self.isr: dict[TopicPartition, tuple[int, ...]] = {}
        self.min_insync: dict[str, int] = {}
        self.tiering = Tiering()
        self.tiered_offsets: dict[TopicPartition, int] = {}
        self.log_dirs = FakeDirs(
            lambda: self.replicas,
            lambda: [b.id for b in self.describe_brokers()],
            lambda b: LogDir(f"/d{b}/a", 10**12, 10**12 // 2, cordoned=b in self.cordoned),
        )

    # -- reads -----------------------------------------------------------------------------------

    def describe_brokers(self, *, include_fenced: bool = False) -> tuple[Broker, ...]:
        # Every broker a replica is on or moving to: a real cluster's brokers are registered
        # before a move reaches them.
        held = {b for r in self.replicas.values() for b in r}
        return tuple(
            Broker(b) for b in sorted(held | {b for target, _ in self.moving.values() for b in target})
        )

    def describe_partitions(self, topics: Collection[str] | None = None) -> tuple[PartitionState, ...]:
        return tuple(
            PartitionState(tp, r, leader=r[0], isr=r, size_bytes=None)
            for tp, r in sorted(self.replicas.items())
            if topics is None or tp.topic in topics
        )

    def describe_replica_sizes(self, topics: Collection[str] | None = None) -> ReplicaSizes:
        return {
            tp: dict.fromkeys(r, 100)
            for tp, r in self.replicas.items()
            if topics is None or tp.topic in topics
        }

    def describe_disks(self) -> Mapping[int, Disks]:
        return {b.id: Disks(10**12, b.id in self.cordoned) for b in self.describe_brokers()}

    def list_reassignments(self, topics: Collection[str] | None = None) -> tuple[OngoingReassignment, ...]:
        if self.unreachable_polls > 0:
            self.unreachable_polls -= 1
            raise KafkaError("listing partition reassignments failed: KafkaConnectionError", transient=True)
        for tp, (target, left) in list(self.moving.items()):
            if tp in self.stuck:
                continue
            if left <= 1:
                del self.moving[tp]
                self.replicas[tp] = target
            else:
                self.moving[tp] = (target, left - 1)
        return tuple(self._ongoing(tp, target) for tp, (target, _) in sorted(self.moving.items()))

    def _ongoing(self, tp: TopicPartition, target: tuple[int, ...]) -> OngoingReassignment:
        original = self.replicas[tp]
        adding = tuple(b for b in target if b not in original)
        removing = tuple(b for b in original if b not in target)
        return OngoingReassignment(tp, (*target, *removing), adding, removing)

    def describe_min_insync(self, topics: Collection[str]) -> Mapping[str, int]:
        return {t: self.min_insync.get(t, 1) for t in topics}

    def describe_health(self, topics: Collection[str] | None = None) -> tuple[PartitionHealth, ...]:
        found = []
        for tp, original in sorted(self.replicas.items()):
            if topics is not None and tp.topic not in topics:
                continue
            replicas = self._ongoing(tp, self.moving[tp][0]).replicas if tp in self.moving else original
            found.append(PartitionHealth(tp, replicas, original[0], self.isr.get(tp, original)))
        return tuple(found)

    def log_offsets(
        self, partitions: Collection[TopicPartition], *, within_s: float | None = None
    ) -> Mapping[TopicPartition, LogOffsets]:
        return {tp: LogOffsets(0, 0) for tp in partitions}

    def close(self) -> None:
        pass

    def cluster_id(self) -> str | None:
        return "fake-cluster"

    def read_freeze(self, *, within_s: float | None = None) -> FreezeState | None:
        self.freeze_reads += 1
        return self.freeze

    def describe_throttle_configs(self, keys: Collection[ConfigKey]) -> Mapping[ConfigKey, str]:
        return {k: self.configs[k] for k in keys if k in self.configs}

    # -- writes ----------------------------------------------------------------------------------

    def alter_reassignments(
        self, targets: Mapping[TopicPartition, Sequence[int] | None]
    ) -> Mapping[TopicPartition, str | None]:
        if self.unreachable_submits > 0:
            self.unreachable_submits -= 1
            # Held by a paused broker: it reaches the controller later, when the test says so.
            self.late.update({tp: tuple(t) for tp, t in targets.items() if t is not None})
            raise KafkaError("altering partition reassignments failed: RequestTimedOut", transient=True)
        answers: dict[TopicPartition, str | None] = {}
        for tp, target in targets.items():
            if target is None and tp in self.moving:
                del self.moving[tp]  # cancelled: nothing was copied in the fake, so nothing stays
                answers[tp] = None
                continue
            if tp in self.refuse or target is None:
                answers[tp] = "InvalidReplicaAssignmentError"
                continue
            self.moving[tp] = (tuple(target), self.polls_to_finish)
            answers[tp] = None
        self._record_peak()
        return answers

    def _record_peak(self) -> None:
        load: Counter[int] = Counter()
        for tp, (target, _) in self.moving.items():
            load.update(set(target) ^ set(self.replicas[tp]))
        for broker, count in load.items():
            self.peak_per_broker[broker] = max(self.peak_per_broker[broker], count)

    def alter_configs(self, writes: Mapping[ConfigKey, str | None]) -> None:
        if self.fail_alter_configs:
            raise KafkaError("altering configs failed: fake")
        if self.unreachable_config_writes > 0:
            self.unreachable_config_writes -= 1
            raise KafkaError("altering configs failed: KafkaConnectionError", transient=True)
        self.config_writes.append(dict(writes))
        for key, value in writes.items():
            if value is None:
                self.configs.pop(key, None)
            else:
                self.configs[key] = value

    def config_writes_settle_in(self) -> float:
        return self.settle_in_s

    def write_freeze(self, state: FreezeState) -> None:
        self.freeze = state

    def elect_preferred_leaders(
        self, partitions: Collection[TopicPartition]
    ) -> Mapping[TopicPartition, str | None]:
        self.elected.extend(sorted(partitions))
        return dict.fromkeys(partitions)
