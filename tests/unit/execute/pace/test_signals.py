"""What the controller reads: produce rates from log end offsets, copy rates, and health."""

from __future__ import annotations

import pytest

from ferry.execute.pace.controller import Health, Role
from ferry.execute.pace.signals import Observation, produce_rates, signals, worst_health
from ferry.kafka.admin import LogOffsets, PartitionHealth
from ferry.model import Move, TopicPartition

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def _observe(
    at: float, ends: dict[TopicPartition, int], leader_bytes: dict[TopicPartition, int], **copied: int
) -> Observation:
    offsets = {tp: LogOffsets(end, 0) for tp, end in ends.items()}
    held = {(A0, int(k[1:])): v for k, v in copied.items()}
    return Observation(at, held, offsets, leader_bytes)


def test_produce_rate_is_offsets_per_second_times_bytes_per_offset() -> None:
    before = _observe(0.0, {A0: 1_000, A1: 0}, {A0: 100_000})
    now = _observe(20.0, {A0: 3_000, A1: 500}, {A0: 300_000})
    rates = produce_rates(before, now)
    assert rates[A0] == 2_000 * 100 / 20  # 100 bytes per offset
    # A1's leader size is unknown: the topic's mean bytes per offset stands in.
    assert rates[A1] == 500 * 100 / 20


def test_on_the_same_leader_with_no_segment_deleted_the_rate_is_what_its_log_grew_by() -> None:
    before = Observation(0.0, {}, {A0: LogOffsets(1_000, 0)}, {A0: 5_000_000}, {A0: 1})
    grown = Observation(10.0, {}, {A0: LogOffsets(1_100, 0)}, {A0: 5_020_000}, {A0: 1})
    assert produce_rates(before, grown)[A0] == 2_000.0  # not 100 offsets x 4.6 kB
    other_leader = Observation(10.0, {}, {A0: LogOffsets(1_100, 0)}, {A0: 5_020_000}, {A0: 2})
    deleted = Observation(10.0, {}, {A0: LogOffsets(1_100, 500)}, {A0: 3_000_000}, {A0: 1})
    assert produce_rates(before, other_leader)[A0] == pytest.approx(100 * 5_020_000 / 1_100 / 10)
    assert produce_rates(before, deleted)[A0] == pytest.approx(100 * 3_000_000 / 600 / 10)


def test_no_time_between_observations_gives_no_rate() -> None:
    same = _observe(5.0, {A0: 1}, {A0: 1})
    assert produce_rates(same, same) == {}


def test_readings_of_a_move_per_broker_and_role() -> None:
    move = Move(A0, (1, 2), (1, 3), 300_000)
    health = [PartitionHealth(A0, (1, 3, 2), 1, (1, 2))]
    before = _observe(0.0, {A0: 1_000}, {A0: 100_000}, b3=0)
    now = _observe(10.0, {A0: 2_000}, {A0: 200_000}, b3=50_000)
    found = signals([move], health, {"a": 2}, before, now)
    follower, leader = found.readings[(3, Role.FOLLOWER)], found.readings[(1, Role.LEADER)]
    assert follower.achieved == leader.achieved == 5_000.0
    assert follower.produce == leader.produce == 10_000.0  # 1,000 offsets of 100 bytes in 10 s
    assert follower.moving == leader.moving == 1
    assert found.readings[(2, Role.FOLLOWER)].moving == 0  # the leaving replica copies nothing
    assert found.under_min_isr == ()


def test_a_new_replica_in_the_isr_no_longer_counts_as_copying() -> None:
    move = Move(A0, (1, 2), (1, 3), 10)
    health = [PartitionHealth(A0, (1, 3, 2), 1, (1, 2, 3))]
    obs = _observe(0.0, {A0: 0}, {A0: 0})
    found = signals([move], health, {}, obs, _observe(1.0, {A0: 0}, {A0: 0}))
    assert found.readings[(3, Role.FOLLOWER)].moving == 0


def test_collateral_health_counts_against_the_lagging_broker_and_its_leader() -> None:
    move = Move(A0, (1, 2), (1, 3), 10)
    health = [
        PartitionHealth(A0, (1, 3, 2), 1, (1,)),  # moving, under min ISR 2: the plan's doing
        PartitionHealth(B0, (2, 3, 4), 2, (2, 4)),  # not moving: lost 3, at min ISR 2
    ]
    obs = _observe(0.0, {A0: 0}, {A0: 0})
    found = signals([move], health, {"a": 2, "b": 2}, obs, _observe(1.0, {A0: 0}, {A0: 0}))
    assert found.under_min_isr == (A0,)
    assert found.readings[(3, Role.FOLLOWER)].health == Health(isr_loss=1, at_min_isr=1)
    assert found.readings[(2, Role.LEADER)].health == Health(isr_loss=1, at_min_isr=1)
    assert found.readings[(1, Role.LEADER)].health == Health()


def test_eligible_leader_replicas_are_trouble_on_every_broker_of_the_partition() -> None:
    move = Move(A0, (1,), (4,), 10)
    health = [PartitionHealth(A0, (4, 1), 1, (1,)), PartitionHealth(B0, (1, 4), 1, (1,), elr=(4,))]
    obs = _observe(0.0, {A0: 0}, {A0: 0})
    found = signals([move], health, {"b": 2}, obs, _observe(1.0, {A0: 0}, {A0: 0}))
    assert found.readings[(4, Role.FOLLOWER)].health.elr == 1
    assert found.readings[(1, Role.LEADER)].health.elr == 1
    assert found.readings[(1, Role.LEADER)].health.under_min_isr == 1


def test_partners_are_the_two_ends_of_every_copy() -> None:
    moves = [Move(A0, (1, 2), (1, 3), 10), Move(A1, (2, 1), (2, 4), 10), Move(B0, (1, 2), (1, 5), 10)]
    health = [
        PartitionHealth(A0, (1, 3, 2), 1, (1, 2)),
        PartitionHealth(A1, (2, 4, 1), 2, (2, 1)),
        PartitionHealth(B0, (1, 5, 2), 1, (1, 2, 5)),  # its new replica is in the ISR: copied
    ]
    obs = Observation(0.0, {}, {}, {})
    found = signals(moves, health, {}, obs, Observation(1.0, {}, {}, {}))
    assert found.partners == {
        (3, Role.FOLLOWER): {(1, Role.LEADER)},
        (1, Role.LEADER): {(3, Role.FOLLOWER)},
        (4, Role.FOLLOWER): {(2, Role.LEADER)},
        (2, Role.LEADER): {(4, Role.FOLLOWER)},
    }


def test_the_worst_state_of_each_partition_is_kept_between_readings() -> None:
    shrunk = PartitionHealth(B0, (2, 3, 4), 2, (2, 4))
    whole = PartitionHealth(B0, (2, 3, 4), 2, (2, 3, 4))
    elected = PartitionHealth(B0, (2, 3, 4), 2, (2, 4), elr=(3,))
    moved = PartitionHealth(B0, (2, 4, 5), 2, (2, 4, 5))
    assert worst_health({}, [shrunk]) == {B0: shrunk}
    assert worst_health({B0: shrunk}, [whole]) == {B0: shrunk}  # healed since: the shrink counts
    assert worst_health({B0: shrunk}, [elected]) == {B0: elected}  # as small, and ELR besides
    assert worst_health({B0: shrunk}, [moved]) == {B0: moved}  # other replicas: another partition now
    assert worst_health({A0: shrunk}, []) == {A0: shrunk}
