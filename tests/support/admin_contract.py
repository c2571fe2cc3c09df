"""One ClusterAdmin contract, run against FakeAdmin (unit) and the real cluster (integration).

Each test sets a cluster up through a :class:`ContractCluster` driver, then asserts only what the
ClusterAdmin answers. ``tests/unit/kafka/test_fake_admin_contract.py`` and
``tests/integration/test_admin_contract_kafka.py`` subclass :class:`ClusterAdminContract` and give
the ``cluster`` fixture; a fake that drifts from Kafka fails the same test Kafka passes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone
from typing import Protocol

import pytest

from ferry.errors import KafkaError, PreconditionError
from ferry.kafka.admin import NOT_THERE_YET, ClusterAdmin
from ferry.kafka.freeze import FreezeState
from ferry.kafka.resources import ConfigKey, ResourceType
from ferry.model import TopicPartition

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
SLOW = "10000"
"""A rate (bytes/s) at which the contract's 2 MB partitions take minutes to copy."""


def eventually(check: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    """Poll ``check`` (bounded): Kafka applies metadata and configs on each broker a moment apart.

    On the fake the check holds at once.
    """
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.3)


@contextmanager
def configs_set(admin: ClusterAdmin, values: Mapping[ConfigKey, str]) -> Iterator[None]:
    """Set ``values`` for the block and delete them afterwards, whatever happens."""
    admin.alter_configs(values)
    try:
        yield
    finally:
        admin.alter_configs(dict.fromkeys(values))


def slow_follower(topic: str, brokers: Sequence[int]) -> dict[ConfigKey, str]:
    """Throttle configs that hold back every follower of ``topic`` on ``brokers``."""
    values = {ConfigKey(ResourceType.TOPIC, topic, FOLLOWER_REPLICAS): "*"}
    return values | {ConfigKey(ResourceType.BROKER, str(b), FOLLOWER_RATE): SLOW for b in brokers}


def replicas_of(admin: ClusterAdmin, tp: TopicPartition) -> tuple[int, ...]:
    (state,) = [p for p in admin.describe_partitions([tp.topic]) if p.tp == tp]
    return state.replicas


class ContractCluster(Protocol):
    """What a contract test may do to a cluster, real or fake."""

    admin: ClusterAdmin
    racks: Mapping[int, str | None]
    """Every broker's rack; brokers 1..4 over racks r0/r1, as the sandbox starts them."""

    def new_topic(self, assignments: Mapping[int, Sequence[int]], *, min_insync: int | None = None) -> str:
        """Create a topic with a fresh name and these replicas; return once it is visible."""
        ...

    def produce(self, topic: str, size: int) -> None:
        """Write about ``size`` bytes to each partition; return once every live replica has them."""
        ...

    def stop_broker(self, broker_id: int) -> None:
        """Stop a broker; return once the cluster has fenced it."""
        ...

    def start_broker(self, broker_id: int) -> None:
        """Start it again; return once it is back in every ISR."""
        ...


class ClusterAdminContract:
    """The contract; subclasses provide a ``cluster`` fixture yielding a ContractCluster."""

    def test_brokers_with_racks_all_alive(self, cluster: ContractCluster) -> None:
        brokers = cluster.admin.describe_brokers()
        assert {b.id: b.rack for b in brokers} == dict(cluster.racks)
        assert all(b.alive for b in brokers)
        assert cluster.admin.describe_brokers(include_fenced=True) == brokers

    def test_every_live_broker_gives_its_disks_capacity_and_none_is_cordoned(
        self, cluster: ContractCluster
    ) -> None:
        disks = cluster.admin.describe_disks()
        assert set(disks) == set(cluster.racks)
        # A disk holds at least the contract's topics (megabytes) and at most an exabyte.
        assert all(d.capacity_bytes is not None and 10**6 < d.capacity_bytes < 10**18 for d in disks.values())
        assert not any(d.cordoned or d.cordoned_dirs for d in disks.values())

    def test_new_topic_has_its_replicas_first_replica_leading_full_isr(
        self, cluster: ContractCluster
    ) -> None:
        topic = cluster.new_topic({0: [1, 2], 1: [2, 3], 2: [4, 1]})
        states = cluster.admin.describe_partitions([topic])
        assert [(p.tp, p.replicas) for p in states] == [
            (TopicPartition(topic, 0), (1, 2)),
            (TopicPartition(topic, 1), (2, 3)),
            (TopicPartition(topic, 2), (4, 1)),
        ]
        for p in states:
            assert p.leader == p.replicas[0]
            assert p.isr is not None and sorted(p.isr) == sorted(p.replicas)
            assert p.size_bytes is None  # sizes come from describe_replica_sizes

    def test_health_has_replicas_leader_full_isr_and_no_eligible_leaders(
        self, cluster: ContractCluster
    ) -> None:
        topic = cluster.new_topic({0: [1, 2], 1: [3, 4]})
        health = cluster.admin.describe_health([topic])
        assert [(h.tp, h.replicas) for h in health] == [
            (TopicPartition(topic, 0), (1, 2)),
            (TopicPartition(topic, 1), (3, 4)),
        ]
        assert all(h.leader == h.replicas[0] and sorted(h.isr) == sorted(h.replicas) for h in health)
        assert all(h.elr == () for h in health)
        assert TopicPartition(topic, 1) in {h.tp for h in cluster.admin.describe_health()}

    def test_log_end_offsets_move_on_with_what_is_produced(self, cluster: ContractCluster) -> None:
        topic = cluster.new_topic({0: [1, 2], 1: [2, 3]})
        tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
        before = cluster.admin.log_offsets(tps)
        assert set(before) == set(tps)
        assert all(o.end == 0 and o.local_start == 0 for o in before.values())
        cluster.produce(topic, 100_000)
        after = cluster.admin.log_offsets(tps)
        assert all(after[tp].end > 0 and after[tp].local_start == 0 for tp in tps)

    def test_all_topics_include_a_new_one(self, cluster: ContractCluster) -> None:
        topic = cluster.new_topic({0: [3]})
        assert TopicPartition(topic, 0) in {p.tp for p in cluster.admin.describe_partitions()}

    def test_unknown_topic_is_a_precondition_error(self, cluster: ContractCluster) -> None:
        with pytest.raises(PreconditionError, match="'contract-no-such-topic' does not exist"):
            cluster.admin.describe_partitions(["contract-no-such-topic"])

    def test_sizes_per_replica_grow_with_data_and_stay_in_scope(self, cluster: ContractCluster) -> None:
        topic = cluster.new_topic({0: [1, 4], 1: [2, 3]})
        other = cluster.new_topic({0: [2]})
        cluster.produce(topic, 200_000)
        sizes = cluster.admin.describe_replica_sizes([topic])
        assert set(sizes) == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
        assert set(sizes[TopicPartition(topic, 0)]) == {1, 4}
        assert set(sizes[TopicPartition(topic, 1)]) == {2, 3}
        assert all(n >= 200_000 for per_broker in sizes.values() for n in per_broker.values())
        assert TopicPartition(other, 0) not in sizes

    def test_every_replica_is_in_one_of_its_brokers_dirs_and_a_dir_move_is_answered(
        self, cluster: ContractCluster
    ) -> None:
        topic = cluster.new_topic({0: [1, 2]})
        tp = TopicPartition(topic, 0)
        # Each broker creates its replica's log a moment after the topic is visible.
        eventually(
            lambda: all(tp in cluster.admin.describe_log_dirs([topic])[b].replicas for b in (1, 2)),
            "both logs",
        )
        found = cluster.admin.describe_log_dirs([topic])
        assert set(found) == set(cluster.racks)
        for broker in (1, 2):
            replica = found[broker].replicas[tp]
            assert found[broker].dir(replica.path) is not None and replica.future_path is None
        assert tp not in found[3].replicas
        assert all(d.total_bytes and not d.offline and not d.cordoned for f in found.values() for d in f.dirs)
        here = found[1].replicas[tp].path
        answers = cluster.admin.alter_replica_log_dirs(
            {(tp, 1): here, (tp, 2): "/contract-no-such-dir", (tp, 3): found[3].dirs[0].path}
        )
        assert answers[(tp, 1)] is None  # its own dir: nothing to do
        assert (answers[(tp, 2)] or "").startswith("LogDirNotFoundError")
        assert answers[(tp, 3)] == NOT_THERE_YET
        assert cluster.admin.describe_log_dirs([topic])[1].replicas[tp] == found[1].replicas[tp]

    def test_the_dirs_of_named_partitions_hold_those_replicas_only(self, cluster: ContractCluster) -> None:
        topic = cluster.new_topic({0: [1, 2], 1: [2, 3]})
        named, other = TopicPartition(topic, 0), TopicPartition(topic, 1)
        eventually(
            lambda: all(named in cluster.admin.describe_partition_dirs([named])[b].replicas for b in (1, 2)),
            "both logs",
        )
        for within_s in (None, 5.0):
            found = cluster.admin.describe_partition_dirs([named], within_s=within_s)
            assert set(found) == set(cluster.racks)
            assert {b for b, dirs in found.items() if named in dirs.replicas} == {1, 2}
            assert all(other not in dirs.replicas for dirs in found.values())
            assert found[2].replicas[named] == cluster.admin.describe_log_dirs([topic])[2].replicas[named]
        nothing = cluster.admin.describe_partition_dirs([])
        assert set(nothing) == set(cluster.racks) and not any(d.replicas for d in nothing.values())

    def test_min_insync_is_the_topic_value_or_the_default(self, cluster: ContractCluster) -> None:
        strict = cluster.new_topic({0: [1, 2, 3]}, min_insync=2)
        plain = cluster.new_topic({0: [1, 2]})
        assert cluster.admin.describe_min_insync([strict, plain]) == {strict: 2, plain: 1}
        assert cluster.admin.describe_min_insync([]) == {}

    def test_no_reassignments_on_a_quiet_topic(self, cluster: ContractCluster) -> None:
        topic = cluster.new_topic({0: [1, 2]})
        assert cluster.admin.list_reassignments([topic]) == ()

    def test_a_stopped_broker_is_fenced_out_of_isr_and_has_no_sizes(self, cluster: ContractCluster) -> None:
        topic = cluster.new_topic({0: [4, 1], 1: [2, 4], 2: [1, 2]})
        cluster.produce(topic, 50_000)
        cluster.stop_broker(4)
        try:
            assert 4 not in {b.id for b in cluster.admin.describe_brokers()}
            fenced = {b.id: b for b in cluster.admin.describe_brokers(include_fenced=True)}[4]
            assert (fenced.rack, fenced.alive) == (cluster.racks[4], False)
            states = {p.tp.partition: p for p in cluster.admin.describe_partitions([topic])}
            assert [states[i].replicas for i in range(3)] == [(4, 1), (2, 4), (1, 2)]
            assert (states[0].leader, states[0].isr) == (1, (1,))
            assert (states[1].leader, states[1].isr) == (2, (2,))
            sizes = cluster.admin.describe_replica_sizes([topic])
            assert set(sizes[TopicPartition(topic, 0)]) == {1}
            assert set(sizes[TopicPartition(topic, 2)]) == {1, 2}
            assert 4 not in cluster.admin.describe_disks()  # its disks say nothing while down
        finally:
            cluster.start_broker(4)
        states = cluster.admin.describe_partitions([topic])
        assert all(p.isr is not None and sorted(p.isr) == sorted(p.replicas) for p in states)
        # At once, not eventually: a client whose cached metadata still lacks the restarted broker
        # must not report that broker's replicas as missing.
        sizes = cluster.admin.describe_replica_sizes([topic])
        assert set(sizes[TopicPartition(topic, 0)]) == {1, 4}
        assert set(sizes[TopicPartition(topic, 1)]) == {2, 4}

    # -- the executor's writes ---------------------------------------------------------------------

    def test_cluster_id_is_stable(self, cluster: ContractCluster) -> None:
        first = cluster.admin.cluster_id()
        assert first and len(first) >= 16
        assert cluster.admin.cluster_id() == first

    def test_reassignment_completes_with_target_replicas_isr_and_sizes(
        self, cluster: ContractCluster
    ) -> None:
        topic = cluster.new_topic({0: [1, 2], 1: [3, 4]})
        cluster.produce(topic, 100_000)
        tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
        assert cluster.admin.alter_reassignments({tp0: [3, 4], tp1: [4, 1]}) == {tp0: None, tp1: None}

        def settled() -> bool:
            states = {p.tp: p for p in cluster.admin.describe_partitions([topic])}
            return (
                not cluster.admin.list_reassignments([topic])
                and [states[tp0].replicas, states[tp1].replicas] == [(3, 4), (4, 1)]
                and all(sorted(p.isr or ()) == sorted(p.replicas) for p in states.values())
                # The old leader left: one of the new replicas leads. Asked within the same
                # answer, since each describe may reach a broker whose metadata lags a moment.
                and states[tp0].leader in (3, 4)
            )

        eventually(settled, "the moves to complete, led by a new replica")
        eventually(lambda: set(cluster.admin.describe_replica_sizes([topic])[tp0]) == {3, 4}, "sizes")
        assert all(n >= 100_000 for n in cluster.admin.describe_replica_sizes([topic])[tp0].values())

    def test_refusals_come_back_per_partition(self, cluster: ContractCluster) -> None:
        topic = cluster.new_topic({0: [1, 2]})
        tp = TopicPartition(topic, 0)
        answers = cluster.admin.alter_reassignments({tp: None, TopicPartition(topic, 5): [1, 2]})
        assert answers[tp] is not None and answers[tp].startswith("NoReassignmentInProgressError")
        assert (answers[TopicPartition(topic, 5)] or "").startswith("UnknownTopicOrPartitionError")
        for bad in ([1, 99], [1, 1]):
            assert (cluster.admin.alter_reassignments({tp: bad})[tp] or "").startswith(
                "InvalidReplicationAssignmentError"
            )
        assert replicas_of(cluster.admin, tp) == (1, 2)

    def test_throttled_move_is_in_flight_replaced_then_cancelled(self, cluster: ContractCluster) -> None:
        """KIP-455 as KRaft does it: replicas = target + the rest; replace; cancel keeps the rest."""
        topic = cluster.new_topic({0: [1, 2]})
        cluster.produce(topic, 2_000_000)
        tp = TopicPartition(topic, 0)
        admin = cluster.admin
        with configs_set(admin, slow_follower(topic, [1, 2, 3, 4])):
            try:
                assert admin.alter_reassignments({tp: [1, 3]}) == {tp: None}
                eventually(lambda: bool(admin.list_reassignments([topic])), "the move to be listed")
                (moving,) = admin.list_reassignments([topic])
                assert (moving.replicas, moving.adding_replicas, moving.removing_replicas) == (
                    (1, 3, 2),
                    (3,),
                    (2,),
                )
                # Eventually: the broker answering the metadata request may not have applied the
                # move yet when the controller's listing already shows it.
                eventually(lambda: replicas_of(admin, tp) == (1, 3, 2), "the move's replicas 1, 3, 2")
                sizes = admin.describe_replica_sizes([topic])[tp]
                assert 0 <= sizes.get(3, 0) < sizes[1]
                # A new target replaces the move: its adding replica 3 becomes a removing one.
                assert admin.alter_reassignments({tp: [1, 4]}) == {tp: None}
                eventually(lambda: replicas_of(admin, tp) == (1, 4, 2, 3), "the replacement")
                (moving,) = admin.list_reassignments([topic])
                assert (moving.adding_replicas, moving.removing_replicas) == ((4,), (2, 3))
            finally:
                answer = admin.alter_reassignments({tp: None})[tp]
            assert answer is None
            eventually(lambda: not admin.list_reassignments([topic]), "the cancel")
            # Not a revert: 3 stays. Eventually: the broker answering the metadata request may not
            # have applied the cancel yet when the controller's listing already shows it.
            eventually(lambda: replicas_of(admin, tp) == (1, 2, 3), "replicas 1, 2, 3 after the cancel")

    def test_throttle_configs_set_read_back_incrementally_and_delete(self, cluster: ContractCluster) -> None:
        topic = cluster.new_topic({0: [1, 2]})
        admin = cluster.admin
        rates = [
            ConfigKey(ResourceType.BROKER, str(b), k) for b in (1, 2) for k in (LEADER_RATE, FOLLOWER_RATE)
        ]
        listed = ConfigKey(ResourceType.TOPIC, topic, FOLLOWER_REPLICAS)
        keys = [*rates, listed]
        assert admin.describe_throttle_configs(keys) == {}
        values = dict.fromkeys(rates, "12345") | {listed: "0:1,0:2"}
        with configs_set(admin, values):
            eventually(lambda: admin.describe_throttle_configs(keys) == values, "the configs")
            admin.alter_configs({rates[0]: "777"})  # incremental: the others stay
            eventually(lambda: admin.describe_throttle_configs(keys) == values | {rates[0]: "777"}, "777")
        eventually(lambda: admin.describe_throttle_configs(keys) == {}, "the configs to be deleted")
        admin.alter_configs({rates[0]: None})  # deleting what is not set is no error

    def test_a_refused_config_fails_its_resource_only(self, cluster: ContractCluster) -> None:
        admin = cluster.admin
        bad, good = (ConfigKey(ResourceType.BROKER, str(b), LEADER_RATE) for b in (1, 2))
        try:
            with pytest.raises(KafkaError, match="altering configs failed: broker 1"):
                admin.alter_configs({bad: "not-a-number", good: "5"})
            eventually(lambda: admin.describe_throttle_configs([bad, good]) == {good: "5"}, "broker 2's rate")
        finally:
            admin.alter_configs({good: None})

    def test_preferred_leader_election(self, cluster: ContractCluster) -> None:
        """Reordering the replicas makes broker 2 preferred; electing moves leadership to it."""
        topic = cluster.new_topic({0: [1, 2]})
        tp = TopicPartition(topic, 0)
        admin = cluster.admin
        assert admin.alter_reassignments({tp: [2, 1]}) == {tp: None}
        eventually(lambda: replicas_of(admin, tp) == (2, 1), "the reorder")
        assert admin.describe_partitions([topic])[0].leader == 1  # a reorder does not move leaders
        eventually(lambda: sorted(admin.describe_partitions([topic])[0].isr or ()) == [1, 2], "the ISR")
        missing = TopicPartition(topic, 7)
        answers = admin.elect_preferred_leaders([tp, missing])
        assert answers[tp] is None
        assert (answers[missing] or "").startswith("UnknownTopicOrPartitionError")
        eventually(lambda: admin.describe_partitions([topic])[0].leader == 2, "broker 2 to lead")
        assert admin.elect_preferred_leaders([tp]) == {tp: None}  # already leading: no error

    # -- the freeze switch -------------------------------------------------------------------------

    def test_the_latest_freeze_record_is_read_back(self, cluster: ContractCluster) -> None:
        """Each write replaces the last; times come back as the same instant (in UTC)."""
        admin = cluster.admin
        at = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2)))
        first = FreezeState(True, "broker 3 disk swap \u2014 hold on", "ops@host-1", at)
        second = FreezeState(True, "still swapping", "ops@host-2", at + timedelta(minutes=1))
        thawed = FreezeState(False, "", "ops@host-1", datetime(2025, 1, 2, 2, 0, 0, tzinfo=UTC))
        try:
            admin.write_freeze(first)
            assert admin.read_freeze() == first
            admin.write_freeze(second)
            assert admin.read_freeze() == second
        finally:
            # The real cluster is shared by the session: never leave it frozen.
            admin.write_freeze(thawed)
        assert admin.read_freeze() == thawed
