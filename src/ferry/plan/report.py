"""The planner's report: moves, bytes, bounds and balance before and after, as JSON-ready data."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ferry.model.cluster import ClusterSnapshot, PartitionState
from ferry.model.goal import Goal
from ferry.model.plan import Move
from ferry.plan.racks import RackLayout
from ferry.plan.stats import balance


def build_report(
    snapshot: ClusterSnapshot,
    goal: Goal,
    targets: Sequence[int],
    planned: Sequence[tuple[PartitionState, Sequence[int]]],
    moves: Sequence[Move],
    bound: int,
) -> dict[str, Any]:
    """Figures of a plan; ``planned`` holds every in-scope partition with its planned replicas."""
    changed = {m.tp: m.target for m in moves}
    before = [(s.tp, s.replicas) for s, _ in planned]
    after = [(s.tp, changed.get(s.tp, s.replicas)) for s, _ in planned]
    everyone = RackLayout.of(snapshot.racks, {*snapshot.broker_ids, *targets})
    added = [len(m.adding) for m in moves]
    replica_moves = sum(added)
    return {
        "partitions": len(planned),
        "partitions_changed": len(moves),
        "replica_moves": replica_moves,
        "lower_bound": bound,
        "moves_over_bound": round(replica_moves / bound, 4) if bound else None,
        "bytes_moved": sum(n * m.size_bytes for n, m in zip(added, moves, strict=True)),
        "leader_changes": sum(1 for m in moves if m.leader_changes),
        "target_brokers": list(targets),
        "rack_mode": goal.rack_mode.value,
        "balance": {
            "before": balance(before, targets, everyone),
            "after": balance(after, targets, everyone),
        },
    }
