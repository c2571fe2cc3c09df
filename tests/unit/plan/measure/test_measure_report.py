"""The planner's report (ferry.plan.measure.report): moves, bytes and leader changes as the moves say,
balance before and after, and the spread the rack rule forces."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from support.builders import broker, partition, snapshot

from ferry.model import Goal, Move, PartitionState, RackMode
from ferry.plan.measure.report import build_report
from ferry.plan.measure.stats import balance
from ferry.plan.racks import RackLayout

CLUSTER = snapshot(
    [broker(1, "a"), broker(2, "a"), broker(3, "b"), broker(4, "c"), broker(5, "c")],
    [
        partition("t", 0, [1, 2, 3], size=100),
        partition("t", 1, [1, 3], size=50),
        partition("u", 0, [2, 3, 4], size=10),
        partition("u", 1, [2, 3]),  # size unknown: moves no bytes
    ],
)
ALL = [1, 2, 3, 4, 5]


def moved(
    targets: dict[int, tuple[int, ...]],
) -> tuple[list[Move], list[tuple[PartitionState, tuple[int, ...]]]]:
    """The moves to ``targets`` (by partition index) and every partition with its planned replicas."""
    parts = CLUSTER.partitions
    moves = [
        Move(parts[i].tp, parts[i].replicas, t, parts[i].size)
        for i, t in targets.items()
        if t != parts[i].replicas
    ]
    return moves, [(p, targets.get(i, p.replicas)) for i, p in enumerate(parts)]


def test_build_report_counts_moves_bytes_moved_and_leader_changes_as_the_moves_say() -> None:
    moves, planned = moved({0: (3, 4, 5), 1: (1, 4), 3: (5, 4)})
    report = build_report(CLUSTER, Goal(), ALL, planned, moves, bound=4)
    assert (report.partitions, report.partitions_changed, report.lower_bound) == (4, 3, 4)
    assert report.replica_moves == 2 + 1 + 2 and report.bytes_moved == 2 * 100 + 50 + 2 * 0
    assert report.leader_changes == 2 and report.moves_over_bound == round(5 / 4, 4)
    assert (report.rack_mode, report.balance_by, report.target_brokers) == ("strict", "replicas", tuple(ALL))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.dictionaries(st.integers(0, 3), st.permutations(ALL)))
def test_the_balance_after_is_that_of_the_moves_targets_and_before_that_of_the_cluster(
    drawn: dict[int, list[int]],
) -> None:
    moves, planned = moved({i: tuple(t[: len(CLUSTER.partitions[i].replicas)]) for i, t in drawn.items()})
    report = build_report(CLUSTER, Goal(), ALL, planned, moves, bound=0)
    layout = RackLayout.of(CLUSTER.racks, ALL)
    assert report.after == balance([(p.tp, r) for p, r in planned], ALL, layout)
    assert report.before == balance([(p.tp, p.replicas) for p, _ in planned], ALL, layout)
    assert report.replica_moves == sum(len(set(m.target) - set(m.original)) for m in moves)
    assert report.leader_changes == sum(m.original[0] != m.target[0] for m in moves)
    assert report.moves_over_bound is None  # no bound to measure against
    assert bool(moves) or (report.before == report.after and report.bytes_moved == 0)


def test_a_rack_left_without_targets_no_longer_counts_after_the_plan() -> None:
    moves, planned = moved({2: (2, 3, 1)})  # rack c leaves: RF 3 over racks a and b puts two in a
    report = build_report(CLUSTER, Goal(brokers=frozenset({1, 2, 3})), [1, 2, 3], planned, moves, 0)
    assert report.after["rack_violations"] == 0 and report.after["replicas_off_target"] == 0
    # Before, every rack of the cluster counts: t-0 holds two replicas in rack a, u-0 one on broker 4.
    assert report.before["rack_violations"] == 1 and report.before["replicas_off_target"] == 1


def test_the_forced_spread_is_the_rack_rules_in_strict_mode_and_the_remainders_in_even_mode() -> None:
    cluster = snapshot(
        [broker(1, "a"), broker(2, "a"), broker(3, "b")], [partition("t", p, [1, 3]) for p in range(3)]
    )
    rows = [(p, p.replicas) for p in cluster.partitions]
    # RF 2 over racks of two and one: the lone broker holds all 3, the other two 3 between them.
    assert build_report(cluster, Goal(), [1, 2, 3], rows, [], 0).forced_replica_spread == 3 - 1
    even = Goal(rack_mode=RackMode.EVEN)
    assert build_report(cluster, even, [1, 2, 3], rows, [], 0).forced_replica_spread == 0  # 6 over 3
    assert build_report(cluster, even, [1, 2, 3, 4], rows, [], 0).forced_replica_spread == 1  # 6 over 4
