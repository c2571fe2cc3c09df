"""The planner's report (:class:`~ferry.model.PlanReport`): moves, bytes, bounds and balance
before and after."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from ferry.model.cluster import ClusterSnapshot, PartitionState, TopicPartition
from ferry.model.goal import Goal, RackMode
from ferry.model.plan import Move
from ferry.model.report import PlanReport
from ferry.plan.balance.least_spread import forced_spread
from ferry.plan.measure.stats import balance
from ferry.plan.racks import RackLayout


def build_report(
    snapshot: ClusterSnapshot,
    goal: Goal,
    targets: Sequence[int],
    planned: Sequence[tuple[PartitionState, Sequence[int]]],
    moves: Sequence[Move],
    bound: int,
    before: Mapping[str, int] | None = None,
) -> PlanReport:
    """Figures of a plan; ``planned`` holds every in-scope partition with its planned replicas.
    ``before``: the :func:`balance_before` figures of those partitions, where already counted."""
    changed = {m.tp: m.target for m in moves}
    after = [(s.tp, changed.get(s.tp, s.replicas)) for s, _ in planned]
    # Not in a forked child beside the count of ``after``: the parent's count would read every
    # partition's objects the child shares, and writing their reference counts copies each page
    # touched; on a million partitions that costs the parent more than the child saves, most of all
    # on Spark's driver (docs/benchmarks.md). The engines count ``before`` earlier instead
    # (``ferry.plan.planner.report_before``): in process in a child forked before the topics'
    # demands, while the balance program is solved; on Spark in a thread, while the workers place.
    if before is None:
        before = balance_before(snapshot, targets, [(s.tp, s.replicas) for s, _ in planned])
    after_figures = balance_after(snapshot, targets, after)
    added = [len(m.adding) for m in moves]
    replica_moves = sum(added)
    return PlanReport(
        partitions=len(planned),
        partitions_changed=len(moves),
        replica_moves=replica_moves,
        lower_bound=bound,
        bytes_moved=sum(n * m.size_bytes for n, m in zip(added, moves, strict=True)),
        leader_changes=sum(1 for m in moves if m.leader_changes),
        target_brokers=tuple(targets),
        rack_mode=goal.rack_mode.value,
        balance_by=goal.balance.value,
        forced_replica_spread=least_spread(snapshot, goal, targets, planned),
        balance={"before": dict(before), "after": after_figures},
    )


def balance_before(
    snapshot: ClusterSnapshot, targets: Sequence[int], before: Sequence[tuple[TopicPartition, Sequence[int]]]
) -> dict[str, int]:
    """The balance figures of a placement before a plan (the report's ``before``): rack violations
    are counted over every broker of the cluster, targets or not."""
    layout = RackLayout.of(snapshot.racks, {*snapshot.broker_ids, *targets}, broker_racks=True)
    return balance(before, targets, layout)


def balance_after(
    snapshot: ClusterSnapshot, targets: Sequence[int], after: Sequence[tuple[TopicPartition, Sequence[int]]]
) -> dict[str, int]:
    """The balance figures of a placement once a plan is done (the report's ``after``)."""
    # After the plan every replica is on a target: the rule is the targets' racks' (a rack left
    # without targets no longer counts, so RF 3 over two racks may put two in one).
    return balance(after, targets, RackLayout.of(snapshot.racks, targets, broker_racks=True))


def least_spread(
    snapshot: ClusterSnapshot,
    goal: Goal,
    targets: Sequence[int],
    planned: Sequence[tuple[PartitionState, Sequence[int]]],
) -> int:
    """The smallest replica spread over ``targets`` that any plan of these partitions can have: what
    the rack rule forces on racks of unequal size (strict mode), else 0 or 1 as the total divides."""
    factors = Counter(len(reps) for _, reps in planned)
    if goal.rack_mode is RackMode.EVEN or not targets:
        return 0 if sum(rf * n for rf, n in factors.items()) % max(1, len(targets)) == 0 else 1
    return forced_spread(RackLayout.of(snapshot.racks, targets), factors).spread
