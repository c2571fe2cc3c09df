"""The balance pass's exact step (``ferry.plan.balance.repair.per_partition``) on one generated plan_quality
case.

Solves the balance program once without the exact step, then reports: how many topics the program's
rack-room rows let short (their quotas keep fewer replicas than the program counted, by the exact
per-topic flow), the replicas they keep against the program's count, and for each chunk size the
CPU seconds of the exact step and the replicas every posed topic keeps afterwards. With
``--profile`` it also profiles a whole ``plan()`` and prints the cumulative CPU seconds of its
phases. Usage:

    .venv/bin/python benchmarks/exact_pass.py --case "2,000 topics" --chunks 10,20,50
    .venv/bin/python benchmarks/exact_pass.py --case "huge" --topics 20000 --chunks 20 --profile
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from ferry.plan import planner
from ferry.plan.balance import assign_extras as balance
from ferry.plan.balance.outcome import Balance
from ferry.plan.balance.rack_totals import retarget
from ferry.plan.balance.repair import per_partition as realise
from ferry.plan.balance.repair.kept_flow import kept_per_topic
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout
from plan_quality import HUGE, LARGE, SMALL, UNEQUAL, Case, generate

PHASES = (
    "assign_extras",
    "_solve_lazily",
    "_repair",
    "realise",
    "kept_per_topic",
    "rejoin",
    "prepare_topic",
    "place_topic",
    "assemble",
)


def _case(name: str, topics: int | None) -> Case:
    found = [c for c in SMALL + UNEQUAL + LARGE + HUGE if name in c.name]
    if not found:
        raise SystemExit(f"no plan_quality case named like {name!r}")
    return replace(found[0], topics=topics) if topics else found[0]


def _kept(
    layout: RackLayout, demands: list[TopicDemand], quotas: list[tuple[int, ...]], topics: list[int]
) -> int:
    chosen = [demands[t] for t in topics]
    return sum(kept_per_topic(layout, chosen, [quotas[t] for t in topics], fix_settled=False))


def probe(case: Case, chunks: list[int]) -> None:
    snapshot, goal = generate(case)
    layout = RackLayout.of(snapshot.racks, planner.target_brokers(snapshot, goal))
    demands = [planner.prepare_topic(parts, goal, layout)[1] for parts in planner.in_scope(snapshot, goal)]
    run = balance.realise
    balance.realise = lambda layout, demands, solved: solved  # the program's answer alone
    try:
        solved: Balance = balance.assign_extras(layout, demands)
    finally:
        balance.realise = run
    posed_demands = retarget(layout, demands)
    posed = [t for t, d in enumerate(posed_demands) if realise.exact_posed(d, solved.quotas[t])]
    exact = kept_per_topic(
        layout, [posed_demands[t] for t in posed], [solved.quotas[t] for t in posed], fix_settled=False
    )
    short = [t for t, k in zip(posed, exact, strict=True) if k < solved.kept[t]]
    print(f"{case.name}: {len(posed)} topics posed exactly, {len(short)} short")
    print(
        f"short topics: program counts {sum(solved.kept[t] for t in short)} kept replicas, "
        f"their quotas keep {_kept(layout, posed_demands, solved.quotas, short)}"
    )
    for chunk in chunks:
        realise.CHUNK = chunk
        start = time.process_time()
        after = realise.realise(layout, posed_demands, solved)
        seconds = time.process_time() - start
        kept = _kept(layout, posed_demands, list(after.quotas), posed)
        print(
            f"chunk {chunk}: {seconds:.2f} CPU s, posed topics keep {kept} "
            f"(program {sum(solved.kept[t] for t in posed)})"
        )


def profile(case: Case) -> None:
    snapshot, goal = generate(case)
    profiler = cProfile.Profile()
    start = time.process_time()
    profiler.enable()
    plan = planner.plan(snapshot, goal)
    profiler.disable()
    seconds, report = time.process_time() - start, plan.report
    assert report is not None
    print(
        f"plan(): {seconds:.1f} CPU s under cProfile, "
        f"moves {report.replica_moves}, bound {report.lower_bound}"
    )
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    for (path, _, name), (_, _, _, cumulative, _) in sorted(stats.items(), key=lambda kv: -kv[1][3]):
        if name in PHASES and "ferry/plan" in path:
            print(f"  {Path(path).stem}.{name}: {cumulative:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--case", required=True, help="part of a plan_quality case's name")
    parser.add_argument("--topics", type=int, help="that case with this many topics instead")
    parser.add_argument("--chunks", default="20", help="chunk sizes to try, comma-separated")
    parser.add_argument("--profile", action="store_true", help="also profile a whole plan()")
    args = parser.parse_args()
    case = _case(args.case, args.topics)
    probe(case, [int(c) for c in args.chunks.split(",")])
    if args.profile:
        profile(case)


if __name__ == "__main__":
    main()
