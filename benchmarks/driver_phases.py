"""Where the driver's serial time goes: the balance program and the finish, part by part.

local[2] can only beat local[1] on the Spark stages; the driver's phases between and after them run
in one process on either. This times those phases on a generated Parquet snapshot of
``benchmarks/pipeline_scale.py`` (it must exist: run that benchmark once first), in one process
without Spark, each ``--rounds`` times:

- balance: the global program (``assign_extras``) split into building the rows (per topic, per
  broker), the min-cost flow solve (OR-Tools), HiGHS (wherever it solves, the exact pass's chunks
  on two threads included, so its column can exceed the wall time), the pools' split, the program
  solved again with every topic but the broken ones held, the rack-room check, the repair of the
  topics whose rack-room rows the relaxation broke (``_repair``: re-solved alone, then together), the
  exact pass (``realise``) and the rest;
- finish: preferred leaders (``leaders_with_swaps``), the moves, the report and, inside it, the two
  balance counts (before and after).

``--shape`` draws a shape of ``benchmarks/shapes.py`` in memory instead (``--scale 0.1``: its 100k
draw), with the shape's goal (a removal's brokers).

Parts are timed by wrapping the functions (a clock read per call, no profiler: cProfile's per-call
cost inflated the many-call parts several times over). Usage:

    .venv/bin/python benchmarks/driver_phases.py                      # the 1M case, 2 rounds
    .venv/bin/python benchmarks/driver_phases.py --case 100k --rounds 3
    .venv/bin/python benchmarks/driver_phases.py --case shape-skewed_rebalance_200_brokers --rounds 1
    .venv/bin/python benchmarks/driver_phases.py --shape "racks of 30" --scale 0.1 --rounds 3
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from ferry.formats.parquet import load_parquet_snapshot
from ferry.model import ClusterSnapshot, Goal
from ferry.plan import planner
from ferry.plan.balance import assign_extras as balance
from ferry.plan.balance.program import integer_program as program
from ferry.plan.balance.solvers import parts as solve
from ferry.plan.balance.solvers import transport as flow
from ferry.plan.gc_pause import paused
from ferry.plan.measure import report
from ferry.plan.racks import RackLayout

sys.path.insert(0, str(Path(__file__).parent))

import shapes

PARTS: list[tuple[Any, str, str]] = [
    (program, "add_topic", "build: topics"),
    (program, "add_plain", "build: plain topics"),
    (program, "band_rows", "build: brokers"),
    (flow.Transport, "of", "network"),
    (flow.Transport, "solve", "flow solve"),
    (solve, "_in_parts", "HiGHS"),
    (program, "split", "pool split"),
    (program, "held_optimum", "held program"),
    (program, "_read", "read"),
    (balance, "room_violations", "rack-room check"),
    (balance, "_repair", "repair"),
    (balance, "realise", "realise"),
    (balance, "broker_band", "broker band"),
    (planner, "leaders_with_swaps", "leaders"),
    (planner, "_moves", "moves"),
    (planner, "build_report", "report"),
    (report, "balance", "report: balance counts"),
]


def instrument(spent: dict[str, float]) -> None:
    """Wrap every part so each call adds its wall time to ``spent``."""
    for owner, name, label in PARTS:
        spent[label] = 0.0
        setattr(owner, name, _timed(getattr(owner, name), label, spent))


def _timed(function: Callable[..., Any], label: str, spent: dict[str, float]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - start

    return wrapper


def run(snapshot: ClusterSnapshot, goal: Goal, rounds: int) -> None:
    targets = planner.target_brokers(snapshot, goal)
    layout = RackLayout.of(snapshot.racks, targets)
    spent: dict[str, float] = {}
    instrument(spent)
    print(f"{len(snapshot.partitions):,} partitions, {len(targets)} target brokers\n")
    print("| round | balance s | " + " | ".join(label for _, _, label in PARTS) + " | finish s |")
    print("|---" * (len(PARTS) + 3) + "|")
    with paused():
        topics = planner.in_scope(snapshot, goal)
        demands = [planner.prepare_topic(parts, goal, layout)[1] for parts in topics]
        for r in range(1, rounds + 1):
            spent.update(dict.fromkeys(spent, 0.0))
            start = time.perf_counter()
            outcome = balance.assign_extras(layout, demands)
            balanced = time.perf_counter() - start
            planned = []
            for parts, quota, keeps in zip(topics, outcome.quotas, outcome.keeps, strict=True):
                work = planner.start_topic(parts, goal, layout)
                planner.place_topic(work, layout, quota, keeps, goal.rack_mode)
                planned.extend(planner.planned_replicas(work))
            start = time.perf_counter()
            planner.assemble(snapshot, goal, targets, planned, planner.lower_bound(demands, outcome), 0)
            finished = time.perf_counter() - start
            cells = " | ".join(f"{spent[label]:.2f}" for _, _, label in PARTS)
            print(f"| {r} | {balanced:.2f} | {cells} | {finished:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--case",
        default="1M",
        help="a case folder of pipeline_scale.py (default 1M; a shape's is shape-<its name>, e.g. "
        "shape-skewed_rebalance_200_brokers for --cases 'shape:skewed rebalance, 200 brokers')",
    )
    parser.add_argument(
        "--shape", help="draw this shape of benchmarks/shapes.py (a part of its name) instead of --case"
    )
    parser.add_argument("--scale", type=float, default=0.1, help="with --shape: its scale (0.1: 100k)")
    parser.add_argument("--seed", type=int, default=7, help="with --shape: the draw (default 7)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "ferry-pipeline-scale")
    args = parser.parse_args()
    if args.shape:
        shape = next((s for s in shapes.SHAPES if args.shape in s.name), None)
        if shape is None:
            parser.error(f"--shape {args.shape!r}: no shape of benchmarks/shapes.py has that in its name")
        drawn, wanted = shapes.snapshot_and_goal(shapes.generate(shape.scaled(args.scale, ""), args.seed))
        print(f"{shape.name}, scale {args.scale}, seed {args.seed}: ", end="")
        run(cast(ClusterSnapshot, drawn), cast(Goal, wanted), args.rounds)
        return
    folder = args.data / args.case / "cluster-00"
    if not folder.is_dir():
        parser.error(f"{folder}: no such snapshot; run benchmarks/pipeline_scale.py with that case first")
    run(load_parquet_snapshot(folder), Goal(), args.rounds)


if __name__ == "__main__":
    main()
