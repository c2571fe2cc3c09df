"""Throttle configs: exactly the moving replicas, merged with and restored to pre-existing values."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from support.exec_moves import plans

from ferry.execute.records import ConfigKey, ResourceType
from ferry.execute.throttles import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    changes,
    desired,
    parse_replicas,
    required,
)
from ferry.model import Move, Plan, TopicPartition


def _topic(name: str, key: str) -> ConfigKey:
    return ConfigKey(ResourceType.TOPIC, name, key)


def _broker(b: int, key: str) -> ConfigKey:
    return ConfigKey(ResourceType.BROKER, str(b), key)


MOVE = Move(TopicPartition("orders", 0), (1, 2, 3), (3, 4, 5), 100)


def test_leader_side_current_replicas_follower_side_new_ones_rates_on_all_involved() -> None:
    throttles = required([MOVE], 1000)
    values = desired(throttles, {})
    assert values[_topic("orders", LEADER_REPLICAS)] == "0:1,0:2,0:3"
    assert values[_topic("orders", FOLLOWER_REPLICAS)] == "0:4,0:5"
    rate_keys = {k for k in values if k.resource_type is ResourceType.BROKER}
    assert rate_keys == {_broker(b, k) for b in (1, 2, 3, 4, 5) for k in (LEADER_RATE, FOLLOWER_RATE)}
    assert {values[k] for k in rate_keys} == {"1000"}


def test_no_rate_means_no_throttle_and_reorders_copy_nothing() -> None:
    assert required([MOVE], None).keys == frozenset()
    assert required([Move(TopicPartition("t", 0), (1, 2), (2, 1))], 10).keys == frozenset()


def test_pre_existing_values_are_merged_then_restored() -> None:
    leader = _topic("orders", LEADER_REPLICAS)
    rate = _broker(4, FOLLOWER_RATE)
    previous = {leader: "7:9", rate: "50", _topic("orders", FOLLOWER_REPLICAS): "*"}
    values = desired(required([MOVE], 1000), previous)
    assert values[leader] == "0:1,0:2,0:3,7:9"
    assert values[_topic("orders", FOLLOWER_REPLICAS)] == "*"  # "all replicas" stays all
    assert values[rate] == "1000"
    writes = changes(values, {}, previous)  # what a run that ends writes
    assert writes[leader] == "7:9" and writes[rate] == "50"
    assert writes[_broker(1, LEADER_RATE)] is None  # did not exist: deleted


def test_changes_write_only_differences_and_drop_finished_moves() -> None:
    other = Move(TopicPartition("pay", 1), (1,), (6,), 10)
    both = desired(required([MOVE, other], 5), {})
    only_move = desired(required([MOVE], 5), {})
    writes = changes(both, only_move, {})
    assert writes == {
        _topic("pay", LEADER_REPLICAS): None,
        _topic("pay", FOLLOWER_REPLICAS): None,
        _broker(6, LEADER_RATE): None,
        _broker(6, FOLLOWER_RATE): None,
    }
    assert changes(only_move, only_move, {}) == {}


previous_values = st.dictionaries(
    st.sampled_from([_topic(t, k) for t in "abc" for k in (LEADER_REPLICAS, FOLLOWER_REPLICAS)]),
    st.sampled_from(["*", "0:1", "3:6,2:2", ""]),
)


@given(plans(), st.integers(1, 10**9), previous_values)
def test_every_moving_replica_is_throttled_and_theirs_kept(
    plan: Plan, rate: int, previous: dict[ConfigKey, str | None]
) -> None:
    values = desired(required(plan.moves, rate), previous)
    for move in plan.moves:
        if not move.adding:
            continue
        p = move.tp.partition
        for key, replicas in ((LEADER_REPLICAS, move.original), (FOLLOWER_REPLICAS, move.adding)):
            entries = parse_replicas(values[_topic(move.tp.topic, key)])
            assert entries is None or {(p, b) for b in replicas} <= entries
        for b in (*move.original, *move.adding):
            assert values[_broker(b, LEADER_RATE)] == str(rate)
    for key, old in previous.items():
        if key in values and old and old != "*":
            merged = parse_replicas(values[key])
            assert merged is None or parse_replicas(old) <= merged  # type: ignore[operator]


@given(plans(), plans(), st.integers(1, 100), previous_values)
def test_any_sequence_of_changes_then_restore_ends_at_the_previous_values(
    first: Plan, second: Plan, rate: int, previous: dict[ConfigKey, str | None]
) -> None:
    cluster: dict[ConfigKey, str] = {k: v for k, v in previous.items() if v is not None}

    def apply(writes: dict[ConfigKey, str | None]) -> None:
        for key, value in writes.items():
            if value is None:
                cluster.pop(key, None)
            else:
                cluster[key] = value

    applied: dict[ConfigKey, str] = {}
    for plan in (first, second):
        wanted = desired(required(plan.moves, rate), previous)
        apply(changes(applied, wanted, previous))
        applied = wanted
        assert all(cluster[k] == v for k, v in wanted.items())
    apply(changes(applied, {}, previous))
    assert cluster == {k: v for k, v in previous.items() if v is not None}
