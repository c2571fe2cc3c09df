"""A tiered topic's new replica on a KIP-1023 broker copies only what its leader has not uploaded:
progress counts it against that, estimated from offsets and pinned at the first look."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from support.exec_fake import ExecFakeAdmin

from ferry.execute.progress import Progress
from ferry.execute.records import TaskRecord
from ferry.execute.report import measure
from ferry.execute.states import TaskState
from ferry.execute.tiered import tiered_copies
from ferry.kafka.admin import LogOffsets, ReplicaSizes, Tiering
from ferry.model import TopicPartition

TP = TopicPartition("logs", 0)


class _Tiered(ExecFakeAdmin):
    """``logs-0`` on broker 1 (1,000 local bytes, offsets 600-1,000 local), moving to 2."""

    def __init__(self) -> None:
        super().__init__({TP: (1,)})
        self.copied = 0
        self.end = 1000

    def describe_replica_sizes(self, topics: Collection[str] | None = None) -> ReplicaSizes:
        return {TP: {1: 1000, 2: self.copied}}

    def log_offsets(
        self, partitions: Collection[TopicPartition], *, within_s: float | None = None
    ) -> Mapping[TopicPartition, LogOffsets]:
        return {TP: LogOffsets(self.end, 600)}


def _task() -> TaskRecord:
    return TaskRecord(1, 1, TP, (1,), (2,), 1000, TaskState.SUBMITTED)


def test_a_kip_1023_replica_is_measured_against_what_is_not_uploaded() -> None:
    admin = _Tiered()
    admin.tiering = Tiering(frozenset({"logs"}), frozenset({2}))
    admin.tiered_offsets = {TP: 899}  # 900-999 not uploaded: a quarter of the local log
    tiered = tiered_copies(admin, [_task()])
    assert tiered is not None
    admin.copied = 125
    (replica,) = measure(admin, [_task()], tiered).replicas
    assert replica.progress == Progress(125, 250)
    # The leader uploads on; the replica keeps copying from where it started (offset 900).
    admin.tiered_offsets = {TP: 950}
    admin.copied = 250
    (replica,) = measure(admin, [_task()], tiered).replicas
    assert replica.progress == Progress(250, 250)


def test_without_kip_1023_or_tiering_the_leaders_local_log_is_the_measure() -> None:
    admin = _Tiered()
    admin.tiering = Tiering(frozenset({"logs"}), frozenset())
    assert tiered_copies(admin, [_task()]) is None
    admin.copied = 125
    assert measure(admin, [_task()], None).replicas[0].progress == Progress(125, 1000)
