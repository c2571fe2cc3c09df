"""Live snapshot assembly and JSON, against a small in-memory ClusterAdmin."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from support.fake_admin import FakeAdmin

from ferry.errors import InputError
from ferry.formats import parse_snapshot_details
from ferry.kafka.admin import BrokerDirs, ClusterAdmin, LogOffsets, OngoingReassignment, ReplicaDir, Tiering
from ferry.kafka.snapshot import (
    collect,
    leader_size,
    render_json,
    to_json,
    with_current_brokers,
    write_json,
)
from ferry.model import Broker, LogDir, PartitionState, TopicPartition

pytestmark = pytest.mark.unit

A0 = TopicPartition("a", 0)
A1 = TopicPartition("a", 1)
B0 = TopicPartition("b", 0)


HALF = 5 * 10**11
DIRS = {
    # Broker 1: two dirs, one of them cordoned; broker 3's dirs do not say how big they are, and
    # are all cordoned.
    1: (LogDir("/data/a", HALF, HALF), LogDir("/data/b", HALF, HALF, cordoned=True)),
    2: (LogDir("/data/a", 2 * 10**12, 10**12),),
    3: (LogDir("/data/a", cordoned=True), LogDir("/data/b", cordoned=True)),
}


@dataclass
class StubAdmin:
    """Answers from fixed data and records which topics each call asked for."""

    calls: list[tuple[str, object]] = field(default_factory=list)

    def describe_brokers(self, *, include_fenced: bool = False) -> tuple[Broker, ...]:
        return (Broker(2, "r1"), Broker(1, "r0"), Broker(3, "r0"))

    def describe_partitions(self, topics: Collection[str] | None = None) -> tuple[PartitionState, ...]:
        self.calls.append(("partitions", topics))
        every = (
            PartitionState(A0, (1, 2), leader=2, isr=(1, 2)),
            PartitionState(A1, (2, 3), leader=None, isr=()),
            PartitionState(B0, (3, 1), leader=3, isr=(3, 1)),
        )
        return tuple(p for p in every if topics is None or p.tp.topic in topics)

    def describe_log_dirs(
        self, topics: Collection[str] | None = None, *, within_s: float | None = None
    ) -> Mapping[int, BrokerDirs]:
        self.calls.append(("log dirs", topics))
        held = {
            A0: {1: ("/data/a", 100), 2: ("/data/a", 120)},
            A1: {2: ("/data/a", 50), 3: ("/data/b", 70)},
            B0: {3: ("/data/a", 9), 1: ("/data/b", 9)},
        }
        return {
            broker: BrokerDirs(
                dirs,
                {
                    tp: ReplicaDir(*on[broker])
                    for tp, on in held.items()
                    if broker in on and (topics is None or tp.topic in topics)
                },
            )
            for broker, dirs in DIRS.items()
        }

    def list_reassignments(self, topics: Collection[str] | None = None) -> tuple[OngoingReassignment, ...]:
        # Moving a-0 from [1] to [2]: while it lasts, replicas are target + original (KIP-455).
        return (OngoingReassignment(A0, (1, 2), (2,), (1,)),)

    def describe_tiering(self, topics: Collection[str], brokers: Collection[int]) -> Tiering:
        # Topic b keeps its older segments in remote storage; broker 3 starts new replicas at the
        # last tiered offset (KIP-1023).
        return Tiering(frozenset({"b"}) & set(topics), frozenset({3}) & set(brokers))

    def log_offsets(
        self, partitions: Collection[TopicPartition], *, within_s: float | None = None
    ) -> Mapping[TopicPartition, LogOffsets]:
        return {tp: LogOffsets(1000, 600) for tp in partitions}

    def latest_tiered(self, partitions: Collection[TopicPartition]) -> Mapping[TopicPartition, int]:
        return dict.fromkeys(partitions, 899)  # 900-999 not uploaded: a quarter of the local log

    def describe_min_insync(self, topics: Collection[str]) -> Mapping[str, int]:
        return {t: 2 for t in topics}

    def close(self) -> None:
        return None


def test_stub_satisfies_the_protocol() -> None:
    admin: ClusterAdmin = StubAdmin()
    assert admin.describe_brokers()


def test_collect_uses_leader_size_and_keeps_extras() -> None:
    live = collect(StubAdmin())
    snap = live.snapshot
    assert snap.broker_ids == (1, 2, 3)
    assert snap.partition(A0).size_bytes == 120  # leader 2's replica
    assert snap.partition(A1).size_bytes == 70  # no leader: largest replica
    assert live.reassignments[A0].adding_replicas == (2,)
    assert live.min_insync == {"a": 2, "b": 2}


def test_collect_narrows_every_call_to_the_requested_topics() -> None:
    admin = StubAdmin()
    live = collect(admin, ["b"])
    assert [p.tp for p in live.snapshot.partitions] == [B0]
    assert admin.calls == [("partitions", ["b"]), ("log dirs", ["b"])]


def test_leader_size_unknown_without_sizes() -> None:
    assert leader_size(PartitionState(A0, (1,), leader=1), {}) is None


def test_json_extends_snapshot_v1() -> None:
    doc = to_json(collect(StubAdmin()))
    assert doc["version"] == 1
    # Each disk's size as the cluster gives it; a broker whose dirs do not say has none.
    assert doc["brokers"] == [
        {
            "id": 1,
            "rack": "r0",
            "capacity_bytes": 10**12,
            "cordoned_log_dirs": ["/data/b"],
            "log_dirs": [
                {"path": "/data/a", "total_bytes": HALF, "usable_bytes": HALF},
                {"path": "/data/b", "total_bytes": HALF, "usable_bytes": HALF, "cordoned": True},
            ],
        },
        {
            "id": 2,
            "rack": "r1",
            "capacity_bytes": 2 * 10**12,
            "log_dirs": [{"path": "/data/a", "total_bytes": 2 * 10**12, "usable_bytes": 10**12}],
        },
        {
            "id": 3,
            "rack": "r0",
            "cordoned": True,
            "cordoned_log_dirs": ["/data/a", "/data/b"],
            "fetch_last_tiered": True,
            "log_dirs": [{"path": "/data/a", "cordoned": True}, {"path": "/data/b", "cordoned": True}],
        },
    ]
    a0, a1, _ = doc["partitions"]
    assert a0 == {
        "topic": "a",
        "partition": 0,
        "replicas": [1, 2],
        "leader": 2,
        "isr": [1, 2],
        "size_bytes": 120,
        "replica_sizes": {"1": 100, "2": 120},
        "adding_replicas": [2],
        "removing_replicas": [1],
        "replica_dirs": {"1": "/data/a", "2": "/data/a"},
    }
    assert "leader" not in a1
    assert doc["min_insync_replicas"] == {"a": 2, "b": 2}
    assert doc["tiered_topics"] == ["b"]
    assert [p.get("untiered_bytes") for p in doc["partitions"]] == [None, None, 2]  # 9 bytes x 100/400
    assert json.loads(render_json(collect(StubAdmin()))) == doc


def test_live_json_reads_back_as_a_snapshot_with_its_details() -> None:
    live = collect(StubAdmin())
    snap, extra = parse_snapshot_details(render_json(live), "live.json")
    assert snap == live.snapshot
    assert extra.replica_sizes == live.replica_sizes
    assert extra.adding_replicas == {A0: (2,)}
    assert extra.removing_replicas == {A0: (1,)}
    assert extra.min_insync == live.min_insync
    assert [p.replica_dirs for p in snap.partitions] == [p.replica_dirs for p in live.snapshot.partitions]
    assert snap.partition(B0).dir_on(1) == "/data/b"
    assert snap.tiered_topics == frozenset({"b"})


def test_write_json_is_atomic_and_reports_unwritable_path(tmp_path: Path) -> None:
    live = collect(StubAdmin())
    out = tmp_path / "snap.json"
    write_json(live, out)
    assert json.loads(out.read_text())["version"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["snap.json"]
    with pytest.raises(InputError, match="cannot write snapshot"):
        write_json(live, tmp_path / "missing-dir" / "snap.json")


def test_a_down_broker_is_kept_with_its_rack_and_marked_dead() -> None:
    fake = FakeAdmin.of([Broker(1, "r0"), Broker(2, "r1"), Broker(3, "r0")])
    fake.create_topic("t", {0: [3, 1], 1: [1, 2]})
    fake.produce("t", 2000)
    fake.stop_broker(3)
    live = collect(fake)
    assert live.snapshot.brokers[2] == Broker(3, "r0", alive=False)
    t0 = live.snapshot.partition(TopicPartition("t", 0))
    assert (t0.replicas, t0.leader, t0.isr, t0.size_bytes) == ((3, 1), 1, (1,), 1000)
    assert live.replica_sizes[t0.tp] == {1: 1000}
    assert parse_snapshot_details(render_json(live), "s.json")[0] == live.snapshot


class UnregisteredStub(StubAdmin):
    """Broker 3 holds replicas but is no longer registered: its rack is gone with it."""

    def describe_brokers(self, *, include_fenced: bool = False) -> tuple[Broker, ...]:
        return (Broker(2, "r1"), Broker(1, "r0"))


def test_an_unregistered_replica_holder_is_listed_dead_without_rack() -> None:
    live = collect(UnregisteredStub())
    assert live.snapshot.brokers == (
        Broker(1, "r0", capacity_bytes=10**12, cordoned_log_dirs=("/data/b",), log_dirs=DIRS[1]),
        Broker(2, "r1", capacity_bytes=2 * 10**12, log_dirs=DIRS[2]),
        Broker(3, None, alive=False),
    )
    doc = to_json(live)
    assert doc["brokers"][2] == {"id": 3, "alive": False}
    # Still a valid snapshot although the other brokers have racks: a dead broker is never a target.
    assert parse_snapshot_details(render_json(live), "s.json")[0] == live.snapshot


def test_with_current_brokers_sees_a_broker_that_went_down_after_the_snapshot() -> None:
    fake = FakeAdmin.of(Broker(b, f"r{b % 2}") for b in (1, 2, 3))
    fake.create_topic("t", {0: [1, 2]})
    taken = collect(fake).snapshot
    fake.stop_broker(3)
    now = with_current_brokers(fake, taken)
    assert now.dead_broker_ids == (3,)
    assert now.partitions == taken.partitions  # only the brokers are read again
    assert taken.dead_broker_ids == ()


def test_with_current_brokers_keeps_the_dirs_cordons_and_capacity_the_snapshot_read() -> None:
    # DescribeCluster does not list disks: the safety checks of dirs and cordons at plan time
    # would otherwise see brokers without them, and pass a move into a cordoned or full dir.
    live = collect(StubAdmin())
    now = with_current_brokers(StubAdmin(), live.snapshot)
    assert [(b.id, b.log_dirs, b.cordoned, b.capacity_bytes) for b in now.brokers] == [
        (b.id, b.log_dirs, b.cordoned, b.capacity_bytes) for b in live.snapshot.brokers
    ]
    assert now.brokers[0].log_dirs == DIRS[1] and now.brokers[2].cordoned
