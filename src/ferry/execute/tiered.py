"""What a new replica of a tiered topic copies (KIP-405, KIP-1023), for progress and the ETA.

DescribeLogDirs counts local bytes only, and a new replica of a tiered topic copies only its
leader's local log: progress measured against the leader's local size is right as it is. A broker
with ``follower.fetch.last.tiered.offset.enable`` (KIP-1023, Kafka 4.3) starts a new replica at the
leader's first offset *not yet uploaded*, so it copies only that part -- often a tenth of the
local log -- and measured against the leader's local size its progress would sit low and then jump
to done. For such replicas the bytes to copy are estimated from offsets: the leader's local bytes
x (log end - start) / (log end - local log start), where ``start`` is the first offset not yet
uploaded (ListOffsets LATEST_TIERED + 1), pinned the first time the move is measured (the leader
uploads on meanwhile; the replica keeps what it copied from where it started).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from ferry.errors import KafkaError
from ferry.execute.records import TaskRecord
from ferry.kafka.admin import ClusterAdmin, ReplicaSizes, Tiering
from ferry.model import TopicPartition


@dataclass
class TieredCopies:
    """The bytes new replicas of tiered topics copy, for one run (or one look)."""

    tiering: Tiering
    starts: dict[TopicPartition, int] = field(default_factory=dict)
    """The first offset each partition's new replicas copy, as first seen."""

    def to_copy(
        self,
        admin: ClusterAdmin,
        moving: Sequence[TaskRecord],
        sizes: ReplicaSizes,
        leaders: Mapping[TopicPartition, int | None],
    ) -> dict[TopicPartition, dict[int, int]]:
        """Per moving partition of a tiered topic with new replicas on KIP-1023 brokers: the bytes
        each of those replicas copies. A period whose offsets a leader cannot give yet (one elected
        a moment ago) estimates nothing: progress falls back to the leader's local size."""
        wanted = [t for t in moving if self._from_last_tiered(t)]
        if not wanted:
            return {}
        tps = [t.tp for t in wanted]
        try:
            offsets = admin.log_offsets(tps)
            unseen = [tp for tp in tps if tp not in self.starts]
            tiered = admin.latest_tiered(unseen) if unseen else {}
        except KafkaError as exc:
            if not exc.transient:
                raise
            return {}
        copies: dict[TopicPartition, dict[int, int]] = {}
        for task in wanted:
            found, leader = offsets.get(task.tp), leaders.get(task.tp)
            local = sizes.get(task.tp, {}).get(leader) if leader is not None else None
            if found is None or local is None or found.end <= found.local_start:
                continue
            start = self.starts.setdefault(task.tp, max(found.local_start, tiered.get(task.tp, -1) + 1))
            brokers = [b for b in task.adding if b in self.tiering.from_last_tiered]
            copies[task.tp] = dict.fromkeys(brokers, int(local * found.local_share_from(start)))
        return copies

    def _from_last_tiered(self, task: TaskRecord) -> bool:
        return task.tp.topic in self.tiering.topics and any(
            b in self.tiering.from_last_tiered for b in task.adding
        )


def tiered_copies(admin: ClusterAdmin, tasks: Collection[TaskRecord]) -> TieredCopies | None:
    """The estimator for ``tasks`` (DescribeConfigs of their topics, then of their new replicas'
    brokers where a topic is tiered); None when none of their topics is tiered
    or none of their new replicas is on a broker that fetches from the last tiered offset."""
    adding = {b for t in tasks for b in t.adding}
    if not adding:
        return None
    # The topics first: only each broker answers for its own configs, and a stopped one would hold
    # the reading; without a tiered topic among the moves it is not asked.
    topics = admin.describe_tiering({t.tp.topic for t in tasks}, ()).topics
    if not topics:
        return None
    fetching = admin.describe_tiering((), adding).from_last_tiered
    return TieredCopies(Tiering(topics, fetching)) if fetching else None
