"""How far ``ferry plan`` is from the fewest moves any plan can make, where it ends above its bound.

The lower bound the report carries is the balance program's optimum, a relaxation: where a rack may
hold two replicas of a partition (fewer racks than replicas, racks far apart in size) it can sit
below every plan that meets the rules. On small draws of such shapes of `benchmarks/shapes.py` this
solves the whole plan as one integer program (``ferry.plan.balance.repair.whole_plan``: every
replica and leader a column, every balance rule and the leader rule a row, proven optimal by HiGHS
with no gap) and prints, per draw: the plan's moves, the program's bound, that optimum, and the
plan's moves above it. A plan at its bound is optimal already, and is not solved again. Each draw
runs in a fresh process (``plan_quality.in_child``), given up after ``--limit`` seconds. Usage:

    .venv/bin/python benchmarks/optimality.py                       # the crowded shapes, 3k, seeds 3,6,7
    .venv/bin/python benchmarks/optimality.py --only "2 racks" --partitions 5000 --seeds 1,2
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import shapes
from ferry.formats.report_json import report_json
from ferry.plan.balance.repair.whole_plan import solve_exactly
from ferry.plan.planner import in_scope, plan, prepare_topic, target_brokers
from ferry.plan.racks import RackLayout
from plan_quality import in_child

CROWDED = (
    "skewed rebalance, 2 racks of 20",
    "remove 2 of 10, 2 racks",
    "grown 40->48, racks of 20/10/5/5, RF 1 to 4",
    "skewed rebalance, 4 racks of 15, RF 1 to 5",
)
"""The shapes where a rack may hold two replicas of a partition."""


def run(shape: shapes.Shape, seed: int, queue: Any) -> None:
    """Plan one draw and, where the plan is above its bound, solve the whole plan exactly; put the
    figures on ``queue``."""
    snapshot, goal = shapes.snapshot_and_goal(shapes.generate(shape, seed))
    start = time.perf_counter()
    result = plan(snapshot, goal)
    seconds = time.perf_counter() - start
    report = report_json(result.figures)
    targets = target_brokers(snapshot, goal)
    layout = RackLayout.of(snapshot.racks, targets)
    scope = in_scope(snapshot, goal)
    prepared = [prepare_topic(parts, goal, layout) for parts in scope]
    states = [state for parts in scope for state in parts]
    planned = {m.tp: m.target for m in result.moves}
    replicas = [list(planned.get(s.tp, s.replicas)) for s in states]
    start = time.perf_counter()
    moves, bound = report["replica_moves"], report["lower_bound"]
    # At its bound the plan is optimal already: no plan makes fewer moves than the bound.
    exact = (
        None if moves == bound else solve_exactly(states, replicas, goal, layout, [d for _, d in prepared])
    )
    queue.put(
        {
            "moves": moves,
            "bound": bound,
            "optimum": bound if moves == bound else None if exact is None else exact.moves,
            "seconds": seconds,
            "exact_seconds": None if moves == bound else time.perf_counter() - start,
            "partitions": len(states),
        }
    )


def _seconds(exact: float | None) -> str:
    """The integer program's seconds, or why it was not solved."""
    return "at the bound: not solved" if exact is None else f"{exact:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--partitions", type=int, default=3000, help="about this many partitions per draw")
    parser.add_argument("--seeds", default="3,6,7", help="the draws of each shape, comma-separated")
    parser.add_argument("--only", default="", help="only the shapes whose name contains this text")
    parser.add_argument("--limit", type=float, default=900, help="seconds per draw before giving up")
    args = parser.parse_args()
    chosen = [s for s in shapes.SHAPES if s.name in CROWDED and args.only in s.name]
    print("| case | seed | partitions | moves | lower bound | optimum | above it | plan s | exact s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for base in chosen:
        shape = base.scaled(args.partitions / 1_000_000, f"{args.partitions // 1000:,}k:")
        for seed in (int(s) for s in args.seeds.split(",")):
            out = in_child(run, (shape, seed), args.limit)
            if out.get("unfinished"):
                print(f"| {shape.name} | {seed} | | | | not within {args.limit:g} s | | | |", flush=True)
                continue
            optimum = out["optimum"]
            above = "" if optimum is None else f"{out['moves'] - optimum:+,}"
            print(
                f"| {shape.name} | {seed} | {out['partitions']:,} | {out['moves']:,} | {out['bound']:,} | "
                f"{'none found' if optimum is None else f'{optimum:,}'} | {above} | "
                f"{out['seconds']:.2f} | {_seconds(out['exact_seconds'])} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
