"""What both fake clusters answer about disks the same way: log dirs (through
:class:`~support.fake_dirs.FakeDirs`) and tiered storage (set by a test in ``tiering`` and
``tiered_offsets``)."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from support.fake_dirs import FakeDirs

from ferry.kafka.admin import BrokerDirs, ReplicaSizes, ReplicaTarget, Tiering
from ferry.model import TopicPartition


class FakeDisks:
    """Mixed into a fake admin that has ``log_dirs``, ``tiering``, ``tiered_offsets`` and
    ``describe_replica_sizes``."""

    log_dirs: FakeDirs
    tiering: Tiering
    tiered_offsets: dict[TopicPartition, int]

    def describe_replica_sizes(self, topics: Collection[str] | None = None) -> ReplicaSizes:
        raise NotImplementedError

    def describe_log_dirs(self, topics: Collection[str] | None = None) -> Mapping[int, BrokerDirs]:
        return self.log_dirs.describe(self.describe_replica_sizes(topics), topics)

    def alter_replica_log_dirs(
        self, targets: Mapping[ReplicaTarget, str]
    ) -> Mapping[ReplicaTarget, str | None]:
        return self.log_dirs.alter(targets)

    def describe_tiering(self, topics: Collection[str], brokers: Collection[int]) -> Tiering:
        return Tiering(self.tiering.topics & set(topics), self.tiering.from_last_tiered & set(brokers))

    def latest_tiered(self, partitions: Collection[TopicPartition]) -> Mapping[TopicPartition, int]:
        return {tp: self.tiered_offsets.get(tp, -1) for tp in partitions}
