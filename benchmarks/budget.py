"""Budgets (``ferry plan --max-moves`` / ``--max-bytes``): steps run one after another until nothing is
left, against one unbudgeted plan; and what a budgeted plan of a 100,000-partition cluster costs.

Convergence: for each case and budget (a share of the full plan's moves), plan a step, apply it
(every moved partition in sync on its new replicas), plan again, until a step moves nothing. Prints
the steps, the moves (bytes with ``--balance bytes``) of all steps over the full plan's, and
whether the end is as balanced as the full plan (replica, topic and leader spread, rack
violations). Scale: plan() of each 100k case with and without a budget of a tenth of its moves, in
this process, wall and CPU seconds. Step: the step alone (choosing a tenth of the full plan's moves
from it, :func:`ferry.plan.budget.step.take_step`), the least CPU seconds of three runs, which a
busy machine disturbs less than the difference of two whole plans. Usage:

    .venv/bin/python benchmarks/budget.py               # convergence and 100k cases
    .venv/bin/python benchmarks/budget.py --converge    # convergence only
    .venv/bin/python benchmarks/budget.py --scale       # 100k cases only
    .venv/bin/python benchmarks/budget.py --step        # the step alone, on the 100k cases
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

from ferry.model import BalanceMode, Plan
from ferry.model.report import PlanReport
from ferry.plan.planner import plan

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.invariants import applied

from plan_quality import LARGE, SMALL, UNEQUAL, Case, generate

CONVERGE = [
    SMALL[0],  # add 3 to 24: even racks
    UNEQUAL[0],
    SMALL[4],  # skewed rebalance
    SMALL[2],  # remove 3 of 27
    SMALL[5],  # RF 2 -> 3
    replace(SMALL[0], name="add 3 to 24 (bytes)", balance=BalanceMode.BYTES, sizes="lognormal"),
]
SHARES = (0.05, 0.2, 0.5)
FIGURES = ("replica_spread", "topic_replica_spread_max", "leader_spread", "rack_violations")


def _report(done: Plan) -> PlanReport:
    assert done.report is not None
    return done.report


def converge(case: Case) -> list[str]:
    snapshot, goal = generate(case)
    full = _report(plan(snapshot, goal))
    measure = "bytes_moved" if goal.balance is BalanceMode.BYTES else "replica_moves"
    rows = []
    for share in SHARES:
        budget = max(1, round(share * full.replica_moves))
        current, total, steps, started = snapshot, 0, 0, time.perf_counter()
        while True:
            step = plan(current, replace(goal, max_moves=budget))
            if not step.moves:
                break
            total += getattr(_report(step), measure)
            current, steps = applied(current, step), steps + 1
        end = _report(plan(current, goal)).before
        same = all(end[f] <= full.after[f] for f in FIGURES)
        ratio = total / getattr(full, measure) if getattr(full, measure) else 1.0
        seconds = time.perf_counter() - started
        rows.append(
            f"| {case.name} | {budget} ({share:.0%}) | {steps} | {ratio:.4f} ({measure.replace('_', ' ')}) "
            f"| {'yes' if same else 'no'} | {seconds:.1f} |"
        )
    return rows


def scale(case: Case) -> str:
    snapshot, goal = generate(case)
    wall, cpu = time.perf_counter(), time.process_time()
    full = _report(plan(snapshot, goal))
    plain = (time.perf_counter() - wall, time.process_time() - cpu)
    budget = max(1, full.replica_moves // 10)
    wall, cpu = time.perf_counter(), time.process_time()
    step = _report(plan(snapshot, replace(goal, max_moves=budget)))
    budgeted = (time.perf_counter() - wall, time.process_time() - cpu)
    assert step.budget is not None
    return (
        f"| {case.name} | {len(snapshot.partitions):,} | {full.replica_moves:,} | {budget:,} "
        f"| {plain[0]:.2f} / {plain[1]:.2f} | {budgeted[0]:.2f} / {budgeted[1]:.2f} "
        f"| {step.budget['imbalance_before']:,} -> {step.budget['imbalance_after']:,} |"
    )


def step_cost(case: Case) -> str:
    from ferry.plan.budget.step import take_step
    from ferry.plan.gc_pause import paused
    from ferry.plan.prepare.scope import in_scope, target_brokers
    from ferry.plan.racks import RackLayout

    snapshot, goal = generate(case)
    done = plan(snapshot, goal)
    targets = {m.tp: m.target for m in done.moves}
    full = [(p, targets.get(p.tp, p.replicas)) for parts in in_scope(snapshot, goal) for p in parts]
    brokers = {b.id: b for b in snapshot.brokers}
    budgeted = replace(goal, max_moves=max(1, _report(done).replica_moves // 10))
    runs = []
    for _ in range(3):
        # A fresh layout each run: the step keeps what it learns per layout in the layout's memo.
        layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, goal))
        with paused():  # as plan() runs it
            cpu = time.process_time()
            step = take_step(layout, budgeted, full, brokers)
            runs.append(time.process_time() - cpu)
    return (
        f"| {case.name} | {len(full):,} | {budgeted.max_moves:,} | {step.figures['moves']:,} "
        f"| {min(runs):.2f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--converge", action="store_true", help="convergence cases only")
    parser.add_argument("--scale", action="store_true", help="100k cases only")
    parser.add_argument("--step", action="store_true", help="the step alone, on the 100k cases")
    args = parser.parse_args()
    if args.step:
        print("| case | partitions | budget | moves taken | step CPU s (least of 3) |")
        print("|---|---|---|---|---|")
        for case in LARGE:
            print(step_cost(case), flush=True)
        return
    both = not (args.converge or args.scale)
    if args.converge or both:
        print("| case | budget (share of full plan) | steps | all steps / full plan | as balanced | s |")
        print("|---|---|---|---|---|---|")
        for case in CONVERGE:
            for row in converge(case):
                print(row, flush=True)
    if args.scale or both:
        print()
        print(
            "| case | partitions | full plan moves | budget | plan s (wall / CPU) | budgeted s | imbalance |"
        )
        print("|---|---|---|---|---|---|---|")
        for case in LARGE:
            print(scale(case), flush=True)


if __name__ == "__main__":
    main()
