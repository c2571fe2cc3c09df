"""The balance pass's exact step (``ferry.plan.balance.repair.per_partition``) on one generated plan_quality
case, or one shape of `benchmarks/shapes.py` at a scale.

Solves the balance program once without the exact step, then reports: how many topics the program's
rack-room rows let short (their quotas keep fewer replicas than the program counted, by the exact
per-topic flow), the replicas they keep against the program's count, and for each chunk mix
(``S+P``: ``S`` short topics and ``P`` partners per chunk in the first round, a lone ``S`` keeping the
default partners; ``S+P/S+P``: the first round's chunks, then the later rounds') a line per round
of the exact step (the short topics it solved again, the replicas they gained, its wall seconds),
the step's CPU seconds and the replicas every posed topic keeps afterwards. Before the rounds it
times the step's first part three times: every posed topic's flow (a lower bound, then
the exact flow where that falls short of the program's count). With ``--profile`` it also
profiles a whole ``plan()`` and prints the cumulative CPU seconds of its phases. Usage:

    .venv/bin/python benchmarks/exact_pass.py --case "2,000 topics" --chunks 10,20,50
    .venv/bin/python benchmarks/exact_pass.py --case "huge" --topics 20000 --chunks 30+10 --profile
    .venv/bin/python benchmarks/exact_pass.py --shape "racks of 30" --scale 1 --chunks 20+20,30+10
    .venv/bin/python benchmarks/exact_pass.py --shape "racks of 30" --chunks 30+10/30+10,10+4/30+10
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).parent))

import shapes
from ferry.model import ClusterSnapshot, Goal
from ferry.plan import planner
from ferry.plan.balance import assign_extras as balance
from ferry.plan.balance.outcome import Balance
from ferry.plan.balance.rack_totals import retarget
from ferry.plan.balance.repair import per_partition as realise
from ferry.plan.balance.repair.kept_flow import kept_per_topic
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout
from plan_quality import HUGE, LARGE, SMALL, UNEQUAL, generate

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


Generated = tuple[str, ClusterSnapshot, Goal]
"""A case's name, its cluster and its goal."""


def _case(name: str, topics: int | None) -> Generated:
    found = [c for c in SMALL + UNEQUAL + LARGE + HUGE if name in c.name]
    if not found:
        raise SystemExit(f"no plan_quality case named like {name!r}")
    case = replace(found[0], topics=topics) if topics else found[0]
    return (case.name, *generate(case))


def _shape(name: str, scale: float, seed: int) -> Generated:
    found = [s for s in shapes.SHAPES if name in s.name]
    if not found:
        raise SystemExit(f"no benchmarks/shapes.py shape named like {name!r}")
    shape = found[0].scaled(scale, f"seed {seed}:")
    snapshot, goal = shapes.snapshot_and_goal(shapes.generate(shape, seed))
    return shape.name, cast(ClusterSnapshot, snapshot), cast(Goal, goal)


def _traced(solve_round: Callable[..., bool]) -> Callable[..., bool]:
    """``solve_round`` (:func:`realise._round`), printing a line per round."""

    def traced(*args: Any, **kwargs: Any) -> bool:
        short, exact = args[2], args[6]
        before, start = sum(exact.values()), time.perf_counter()
        gained = solve_round(*args, **kwargs)
        print(
            f"  round: {len(short)} short topics, {sum(exact.values()) - before} replicas gained, "
            f"{time.perf_counter() - start:.2f} s"
        )
        return gained

    return traced


def _kept(
    layout: RackLayout, demands: list[TopicDemand], quotas: list[tuple[int, ...]], topics: list[int]
) -> int:
    chosen = [demands[t] for t in topics]
    return sum(kept_per_topic(layout, chosen, [quotas[t] for t in topics], fix_settled=False))


def probe(case: Generated, chunks: list[Mixes]) -> None:
    name, snapshot, goal = case
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
    print(f"{name}: {len(posed)} topics posed exactly, {len(short)} short")
    walls = []
    for _ in range(3):
        start = time.perf_counter()
        realise._kept(layout, posed_demands, solved, posed)
        walls.append(f"{time.perf_counter() - start:.2f}")
    print(f"exact flows (a lower bound, then exact where it falls short), wall s: {' / '.join(walls)}")
    print(
        f"short topics: program counts {sum(solved.kept[t] for t in short)} kept replicas, "
        f"their quotas keep {_kept(layout, posed_demands, solved.quotas, short)}"
    )
    solve_round = realise._round
    realise._round = _traced(solve_round)
    try:
        for chunk in chunks:
            _chunked(layout, posed_demands, solved, posed, chunk)
    finally:
        realise._round = solve_round


Mixes = tuple[realise.Mix, realise.Mix]
"""The chunks of the first round, then of the later ones."""


def _mix(text: str) -> Mixes:
    first, _, later = text.partition("/")
    return _one_mix(first, realise.FIRST), _one_mix(later, realise.LATER) if later else realise.LATER


def _one_mix(text: str, default: realise.Mix) -> realise.Mix:
    short, _, partners = text.partition("+")
    return int(short), int(partners or default[1])


def _chunked(
    layout: RackLayout,
    posed_demands: list[TopicDemand],
    solved: Balance,
    posed: list[int],
    chunk: Mixes,
) -> None:
    (first, first_partners), (later, later_partners) = realise.FIRST, realise.LATER = chunk
    print(f"chunks of {first} short topics and {first_partners} partners, then {later} and {later_partners}:")
    start = time.process_time()
    after = realise.realise(layout, posed_demands, solved)
    seconds = time.process_time() - start
    kept = _kept(layout, posed_demands, list(after.quotas), posed)
    print(
        f"  in all {seconds:.2f} CPU s, posed topics keep {kept} "
        f"(program {sum(solved.kept[t] for t in posed)})"
    )


def profile(case: Generated) -> None:
    _, snapshot, goal = case
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
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--case", help="part of a plan_quality case's name")
    which.add_argument("--shape", help="part of a benchmarks/shapes.py shape's name")
    parser.add_argument("--topics", type=int, help="with --case: that case with this many topics instead")
    parser.add_argument("--scale", type=float, default=0.1, help="with --shape: times its topics")
    parser.add_argument("--seed", type=int, default=7, help="with --shape: the generator's seed")
    parser.add_argument(
        "--chunks",
        default="{}+{}/{}+{}".format(*realise.FIRST, *realise.LATER),
        help="chunk mixes to try, comma-separated: S+P (short topics + partners; S alone keeps the "
        "default partners) for the first round, then /S+P for the later ones (default: the pass's own)",
    )
    parser.add_argument("--profile", action="store_true", help="also profile a whole plan()")
    args = parser.parse_args()
    case = _case(args.case, args.topics) if args.case else _shape(args.shape, args.scale, args.seed)
    probe(case, [_mix(c) for c in args.chunks.split(",")])
    if args.profile:
        profile(case)


if __name__ == "__main__":
    main()
