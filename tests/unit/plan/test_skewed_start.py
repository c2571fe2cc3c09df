"""A skewed start that ignores racks (most partitions hold two replicas in one rack) plans at its
bound: the balance program is a flow with holder and pair nodes, and a topic whose greedy placement
loses a kept replica is placed again from the exact flow. Drawn by the scale benchmarks' own
generator (`benchmarks/shapes.py`), the same cluster on every machine."""

from __future__ import annotations

import sys
from pathlib import Path

from ferry.plan.planner import plan

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
import shapes  # the benchmarks folder is no package: found by path


def test_a_skewed_start_of_30k_partitions_plans_at_its_bound() -> None:
    # At this draw the greedy placement of two topics whose pinned partitions' keeps the balance
    # pass chose lost a kept replica each: 32,270 moves against a bound of 32,268.
    skewed = next(s for s in shapes.SHAPES if s.start == "skewed").scaled(0.03, "30k")
    snapshot, goal = shapes.snapshot_and_goal(shapes.generate(skewed, 7))
    result = plan(snapshot, goal)  # type: ignore[arg-type]
    assert result.report is not None
    assert result.report.replica_moves == result.report.lower_bound == 32_268
    after = result.report.balance["after"]
    assert (after["replica_spread"], after["rack_violations"]) == (1, 0)
