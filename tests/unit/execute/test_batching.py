"""The batcher: limits are never exceeded, batches are maximal, order is kept."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.exec_moves import plans

from ferry.errors import UsageError
from ferry.execute.batching import (
    InFlight,
    Limits,
    broker_load,
    busy_brokers,
    held_by_foreign,
    in_flight_of,
    next_batch,
)
from ferry.model import Move, Plan, TopicPartition


def _move(p: int, original: tuple[int, ...], target: tuple[int, ...]) -> Move:
    return Move(TopicPartition("t", p), original, target)


def test_a_move_counts_against_brokers_it_adds_to_or_removes_from() -> None:
    move = _move(0, (1, 2, 3), (3, 4, 5))
    assert busy_brokers(move) == {1, 2, 4, 5}  # 3 keeps its replica: not counted
    assert broker_load(in_flight_of([move])) == {1: 1, 2: 1, 4: 1, 5: 1}


def test_per_broker_limit_skips_moves_onto_a_busy_broker_but_takes_later_ones() -> None:
    pending = [_move(0, (1,), (2,)), _move(1, (1,), (2,)), _move(2, (3,), (4,))]
    assert next_batch(pending, [], Limits(max_moves_per_broker=1)) == [pending[0], pending[2]]


def test_foreign_moves_in_flight_count_too() -> None:
    pending = [_move(0, (1,), (2,)), _move(1, (3,), (4,))]
    foreign = [InFlight(adding=(2,), removing=(5,))]
    assert next_batch(pending, foreign, Limits(max_moves_per_broker=1)) == [pending[1]]


def test_foreign_moves_do_not_count_against_the_cluster_wide_limit() -> None:
    """--max-moves caps ferry's own moves: a foreign move elsewhere (stuck, say) holds nothing back."""
    pending = [_move(0, (1,), (2,)), _move(1, (3,), (4,))]
    stuck = [InFlight(adding=(7,), removing=(8,)), InFlight(adding=(9,), removing=(8,))]
    assert next_batch(pending, [], Limits(max_moves_per_broker=1, max_moves=2), stuck) == pending


def test_held_by_foreign_names_the_moves_and_the_brokers_they_wait_on() -> None:
    pending = [_move(0, (1,), (2,)), _move(1, (3,), (4,)), _move(2, (5,), (6,))]
    own = in_flight_of([_move(9, (5,), (10,))])  # ferry's own move keeps 5 busy: not foreign's doing
    foreign = [InFlight(adding=(2,), removing=(7,)), InFlight(adding=(6,), removing=(8,))]
    limits = Limits(max_moves_per_broker=1)
    chosen = next_batch(pending, own, limits, foreign)
    waiting, brokers = held_by_foreign(pending, own, limits, foreign, chosen)
    assert waiting == [pending[0]]
    assert brokers == {2}
    assert held_by_foreign(pending, own, limits, [], next_batch(pending, own, limits)) == ([], frozenset())


def test_cluster_wide_limit() -> None:
    pending = [_move(p, (p * 2,), (p * 2 + 1,)) for p in range(1, 5)]
    assert next_batch(pending, in_flight_of(pending[:1]), Limits(max_moves=3)) == pending[:2]


def test_limits_must_be_positive() -> None:
    with pytest.raises(UsageError, match="--max-moves-per-broker"):
        Limits(max_moves_per_broker=0)
    with pytest.raises(UsageError, match="--max-moves must"):
        Limits(max_moves=0)


limits = st.builds(Limits, st.integers(1, 3), st.none() | st.integers(1, 6))


@given(plans(), plans(), plans(max_size=4), limits)
def test_batches_keep_limits_order_and_are_maximal(
    pending_plan: Plan, flying_plan: Plan, foreign_plan: Plan, lim: Limits
) -> None:
    pending, flying = list(pending_plan.moves), in_flight_of(flying_plan.moves)
    foreign = in_flight_of(foreign_plan.moves)
    batch = next_batch(pending, flying, lim, foreign)
    # A subsequence of pending, in order.
    positions = [pending.index(m) for m in batch]
    assert positions == sorted(positions)
    # Limits hold after adding the batch, for every broker the batch touches (foreign moves count
    # per broker, not against the cluster-wide cap).
    load = broker_load([*flying, *foreign, *in_flight_of(batch)])
    touched = {b for m in batch for b in busy_brokers(m)}
    assert all(load[b] <= lim.max_moves_per_broker for b in touched)
    if lim.max_moves is not None and batch:
        assert len(flying) + len(batch) <= lim.max_moves
    # Maximal: every skipped move would break a limit if added now.
    cap_reached = lim.max_moves is not None and len(flying) + len(batch) >= lim.max_moves
    for move in pending:
        if move not in batch and not cap_reached:
            assert any(load[b] >= lim.max_moves_per_broker for b in busy_brokers(move)), move


@given(plans(), limits)
def test_repeated_batches_drain_any_plan(plan: Plan, lim: Limits) -> None:
    """Submitting batch after batch and finishing them all in between empties the queue."""
    pending = list(plan.moves)
    rounds = 0
    while pending:
        batch = next_batch(pending, [], lim)
        assert batch, "no progress with nothing in flight"
        pending = [m for m in pending if m not in batch]
        rounds += 1
    assert rounds <= len(plan.moves)
