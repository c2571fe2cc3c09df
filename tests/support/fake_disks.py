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

    silent: frozenset[int] = frozenset()
    """Brokers that do not answer a bounded read (stopped): left out when ``within_s`` is given."""

    def describe_log_dirs(
        self, topics: Collection[str] | None = None, *, within_s: float | None = None
    ) -> Mapping[int, BrokerDirs]:
        return self._answered(self.log_dirs.describe(self.describe_replica_sizes(topics), topics), within_s)

    def describe_partition_dirs(
        self, partitions: Collection[TopicPartition], *, within_s: float | None = None
    ) -> Mapping[int, BrokerDirs]:
        wanted = set(partitions)
        sizes = self.describe_replica_sizes({tp.topic for tp in wanted})
        found = self.log_dirs.describe({tp: s for tp, s in sizes.items() if tp in wanted}, None)
        return self._answered(found, within_s)

    def _answered(self, found: Mapping[int, BrokerDirs], within_s: float | None) -> Mapping[int, BrokerDirs]:
        """All of ``found``, or with a bound those of the brokers that are not silent."""
        if within_s is None:
            return found
        return {broker: dirs for broker, dirs in found.items() if broker not in self.silent}

    def alter_replica_log_dirs(
        self, targets: Mapping[ReplicaTarget, str]
    ) -> Mapping[ReplicaTarget, str | None]:
        return self.log_dirs.alter(targets)

    def describe_tiering(self, topics: Collection[str], brokers: Collection[int]) -> Tiering:
        return Tiering(self.tiering.topics & set(topics), self.tiering.from_last_tiered & set(brokers))

    def latest_tiered(self, partitions: Collection[TopicPartition]) -> Mapping[TopicPartition, int]:
        return {tp: self.tiered_offsets.get(tp, -1) for tp in partitions}
