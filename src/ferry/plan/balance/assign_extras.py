"""Global balance: which brokers take each topic's extra replicas, and which replicas stay.

Per-topic quotas (:mod:`ferry.plan.prepare.quotas`) leave open which brokers carry one replica above their
base. Chosen topic by topic, those extras pile up on the same brokers and the cluster drifts out of
balance although every topic is balanced. This pass decides for all topics at once, as one integer
program (:mod:`ferry.plan.balance.program.integer_program`).

When no assignment meets the program's rows, it is solved again with the broker band widened, and
last with *voluntary* drops: a free replica may then leave a broker that is not over its quota, which
a rack short of open slots needs (each such drop is one more move, and counted as one).

The optimum is the planner's lower bound on replica moves: every plan that meets the balance rules
keeps at most this many replicas in place.

Solving: the rack-room rows are most of the program and seldom bind, so it is solved without them
first (a relaxation) and then only the topics whose rows the solution breaks are solved again, one
at a time, everything else held (:mod:`ferry.plan.balance.topics_again`); only when that loses kept
replicas do their rows join the whole program for another round (:func:`_solve_lazily`).

The first program of each round pools, per rack, the brokers idle for a topic into one
column (:mod:`ferry.plan.balance.program.pools`): on 100,000 topics of 10 partitions over 200 brokers the
program shrinks from 20 million columns to under 5 million (docs/benchmarks.md, "Many small topics").

The rack-room rows count open slots per rack, not which partition takes which, so a topic's quotas
may keep fewer replicas than the program counted; :mod:`ferry.plan.balance.repair.per_partition` then solves
such topics again, exactly, before the answer leaves this pass. The broken rows of topics that pass solves
partition by partition (:attr:`~ferry.plan.prepare.demand.TopicDemand.exact`) are repaired for a few
topics (:data:`REPAIRED`) and join the whole program, both only in small programs (:data:`ESCALATED`);
beyond that they are left to the exact pass, which checks more than the rows do, a chunk of topics at a
time. The program then stays a relaxation of every plan meeting the rules, so its optimum stays a
lower bound on moves, if a looser one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import numpy as np

from ferry.plan.balance.bands import bands, broker_band
from ferry.plan.balance.outcome import Balance
from ferry.plan.balance.program.integer_program import solve
from ferry.plan.balance.program.pools import Refinements
from ferry.plan.balance.program.rack_room import room_violations
from ferry.plan.balance.program.state import ProgramState, singles_apart
from ferry.plan.balance.rack_totals import retarget
from ferry.plan.balance.repair.per_partition import realise_counting
from ferry.plan.balance.setting import Deferral, Setting
from ferry.plan.balance.topics_again import Again, repair, settle
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout


def assign_extras(layout: RackLayout, demands: Sequence[TopicDemand], *, lazy: bool = True) -> Balance:
    """Choose every topic's extras and kept replicas; see the module docstring.

    Args:
        lazy: add rack-room rows only where a solution breaks them (:func:`_solve_lazily`); ``False``
            builds every row up front, which is slower and serves as the reference the lazy path
            must match.
    """
    demands = retarget(layout, demands)
    band = broker_band(layout, demands)
    leader_cap = divmod(sum(d.partitions for d in demands), max(1, len(layout.brokers)))
    solve = _solve_lazily if lazy else _solve_whole
    held_back = Deferral() if len(demands) >= DEFERRED_FROM else None
    # Stricter programs first; the last one lets replicas leave brokers that are not over quota,
    # which a rack short of open slots may need (one voluntary move opens a slot in the right rack).
    for voluntary in (False, True):
        rungs = _rungs(layout, demands, band)
        for i, (rung_band, slack) in enumerate(rungs):
            setting = Setting(rung_band, slack, leader_cap, voluntary, deferral=held_back)
            solved, pooled = _capped(solve, layout, demands, setting)
            if solved is not None:
                return _realised(solve, layout, demands, setting, solved, pooled=pooled)
            loosest = Setting(*rungs[-1], None, voluntary, deferral=held_back)
            if i == 0 and solve(layout, demands, loosest) is None:
                # The loosest rung has the same columns and a subset of the rows of every other: if it
                # has no solution, none has (most often a rack short of open slots: only voluntary
                # drops help), so the rungs between are skipped.
                break
    raise RuntimeError("balance: the per-topic quotas admit no assignment of extras")


Solve = Callable[[RackLayout, Sequence[TopicDemand], Setting], Balance | None]


def _capped(
    solve: Solve, layout: RackLayout, demands: Sequence[TopicDemand], setting: Setting, *, pool: bool = True
) -> tuple[Balance | None, bool]:
    """A rung's answer: under its leader cap where one meets it, else without the cap; and whether
    it is the program's with single-replica topics pooled (``pool``: that program may be tried).

    The cap's rows (:func:`ferry.plan.balance.program.broker_rows.leader_rows`) are of no network's
    kind, so a program with one is HiGHS's, not min-cost flow's: a 100k-partition cluster with a
    few topics at RF 1 took minutes instead of seconds. Without them the program is a relaxation:
    where it has no solution the capped one has none, and where its optimum meets the cap it is
    the capped optimum too. It is solved first with the single-replica topics pooled like the
    others (their extras in columns per broker fill the room pools need, so pooled programs failed
    to split: docs/benchmarks.md), then, where that optimum breaks the cap, with their columns per
    broker (the optimum then lands elsewhere among equals), and only an optimum that still breaks
    it is solved again with the cap's rows."""
    if setting.cap is None:
        return solve(layout, demands, setting), False
    loose = None
    pool = pool and any(d.single_replica for d in demands) and _pooling(layout, demands)
    for pooled in (True, False) if pool else (False,):
        loose = solve(layout, demands, replace(setting, cap=None, pool_singles=pooled))
        if loose is None or _leaders_fit(loose, demands, setting.cap):
            return loose, pooled
    capped = solve(layout, demands, setting)
    return (loose if capped is None else capped), False


def _realised(
    solve: Solve,
    layout: RackLayout,
    demands: Sequence[TopicDemand],
    setting: Setting,
    solved: Balance,
    *,
    pooled: bool,
) -> Balance:
    """``solved`` made to hold partition by partition (:func:`realise_counting`).

    Where single-replica topics were ``pooled`` and the exact pass leaves its topics short of the
    program's count, the rung is solved again with them apart and the answer that keeps more is
    taken. Both programs have the same optimum, but they land on different ones among equals, and
    the exact pass completes some of them and not others: a 100k skewed start at RF 1 to 3 over
    three racks planned 4 moves above its bound from the pooled one, none from the other; a draw
    of another seed the other way round (docs/benchmarks.md)."""
    realised, short = _counted(layout, demands, setting, solved)
    if not short or not pooled:
        return realised
    apart, _ = _capped(solve, layout, demands, setting, pool=False)
    if apart is None:
        return realised
    again, short_again = _counted(layout, demands, setting, apart)
    return again if sum(apart.kept) - short_again > sum(solved.kept) - short else realised


def _counted(
    layout: RackLayout, demands: Sequence[TopicDemand], setting: Setting, solved: Balance
) -> tuple[Balance, int]:
    """:func:`realise_counting` of ``solved``, with single-replica topics among the partners unless
    the leaders they then pin break the leader cap that ``solved`` met (each is its partition's only
    replica, so its leader)."""
    realised, short = realise_counting(layout, demands, solved)
    cap = setting.cap
    if cap is None or _leaders_fit(realised, demands, cap) or not _leaders_fit(solved, demands, cap):
        return realised, short
    return realise_counting(layout, demands, solved, singles=False)


def _leaders_fit(solved: Balance, demands: Sequence[TopicDemand], cap: tuple[int, int]) -> bool:
    """Whether the single-replica partitions each broker holds (their topics' quotas) fit the leader
    counts ``cap`` as the cap's rows pose them: at most ``low`` per broker, ``low + 1`` on at most
    ``extra`` brokers."""
    low, extra = cap
    singles = [quota for quota, d in zip(solved.quotas, demands, strict=True) if d.single_replica]
    if not singles:
        return True
    led = np.sum(np.asarray(singles, dtype=np.int64), axis=0)
    return int(led.max()) <= low + (1 if extra else 0) and int((led > low).sum()) <= extra


def _rungs(
    layout: RackLayout, demands: Sequence[TopicDemand], band: list[tuple[int, int]]
) -> list[tuple[list[tuple[int, int]], int | None]]:
    """(band, slack) from strictest to loosest: with unequal racks, both the water-filled band and
    the band of rack totals that add up (:func:`exact_band`), the narrower first."""
    return [*((b, 0) for b in bands(layout, demands, band)), (band, 1), (band, None)]


def _solve_whole(layout: RackLayout, demands: Sequence[TopicDemand], setting: Setting) -> Balance | None:
    """Solve with every rack-room row from the start."""
    return solve(ProgramState(layout, demands, voluntary=setting.voluntary), setting)


def _solve_lazily(layout: RackLayout, demands: Sequence[TopicDemand], setting: Setting) -> Balance | None:
    """Solve with the rack-room rows that bind only (see
    :func:`ferry.plan.balance.program.rack_room.room_violations`).

    Most rack-room rows hold by themselves, and with their per-partition columns they make up most
    of the program. Solving without them is a relaxation: infeasible means infeasible, and an
    optimum that meets every row is the optimum. Otherwise the few topics whose rows it breaks are
    re-solved on their own (:func:`~ferry.plan.balance.topics_again.repair`), and only if that loses
    kept replicas do their rows join the whole program for another round. The rows of pinned
    partitions owing racks, held back in a large program (:data:`DEFERRED_FROM`), are settled the same
    way first; where that loses kept replicas the program is posed with them from then on.
    """
    rows: set[tuple[int, int]] = set()
    refined = Refinements()
    rounds = SPLIT_ROUNDS if _pooling(layout, demands) else 0
    if singles_apart(demands, pooled=setting.pool_singles):
        rounds = min(rounds, SINGLES_ROUNDS)
    deferral = setting.deferral
    while True:
        defer = deferral is not None and deferral.on
        program, solved = _solve_pooled(layout, demands, setting, rows, refined, rounds, defer=defer)
        if solved is None:
            return None
        owing = {t for t, _ in program.deferred.broken(program.solution)}
        if owing:
            settled = settle(layout, demands, solved, sorted(owing), setting, Again(program.scale, lean=True))
            if settled is None:
                assert deferral is not None  # rows were held back
                # The relaxation is loose here: its rows are posed from the start, and the program's
                # pools are refined afresh (those of the relaxed one split another optimum).
                deferral.on = False
                refined = Refinements()
                continue
            solved = settled
        broken = {(t, k) for t, k in room_violations(program) if t not in owing}
        missing = _worth_repairing(demands, broken - rows)
        if not missing:
            return solved
        topics = sorted({t for t, _ in missing})
        repaired = repair(layout, demands, solved, topics, setting, Again(program.scale))
        if repaired is not None:
            return repaired
        topics = [t for t in topics if not demands[t].exact or len(demands) <= ESCALATED]
        if not topics:
            return solved  # the exact pass solves them partition by partition
        # Each round adds rows that were not there, and there are finitely many: it ends. A topic
        # short in one rack tends to shift the shortage to the next, so it gets every rack's row.
        rows |= {(t, k) for t in topics for k in range(len(layout.members))}


def _pooling(layout: RackLayout, demands: Sequence[TopicDemand]) -> bool:
    """Whether the lazy path solves pooled programs first (:data:`POOLED_FROM`)."""
    return len(demands) * len(layout.brokers) >= POOLED_FROM


def _solve_pooled(
    layout: RackLayout,
    demands: Sequence[TopicDemand],
    setting: Setting,
    rows: set[tuple[int, int]],
    refined: Refinements,
    rounds: int,
    *,
    defer: bool = False,
) -> tuple[ProgramState, Balance | None]:
    """The program with pooled extras (:mod:`ferry.plan.balance.program.pools`), and its solution.

    Where the optimum's pools cannot be split over brokers (after rows against full pools, which
    the program poses itself: :mod:`ferry.plan.balance.program.full_pools`), those pools get a column per
    broker, and rows it broke that were left out are posed (``refined`` grows; kept for the caller's later
    rounds); then it is solved again. After ``rounds`` such rounds the program is solved without
    pools. ``defer``: the rows of pinned partitions owing racks are held back (:data:`DEFERRED_FROM`)."""
    loaded = None
    for _ in range(rounds):
        program = ProgramState(
            layout,
            demands,
            voluntary=setting.voluntary,
            room_rows=rows,
            pool=True,
            pool_singles=setting.pool_singles,
            refined=refined,
            loaded=loaded,
            defer=defer,
        )
        solved = solve(program, setting)
        if not program.unpooled:
            return program, solved
        refined.add(program.broke)
        loaded = program.loaded  # the same band, the same demands: read once
    program = ProgramState(layout, demands, voluntary=setting.voluntary, room_rows=rows, defer=defer)
    return program, solve(program, setting)


SPLIT_ROUNDS = 4
"""Pooled programs solved (:func:`_solve_pooled`) before one without pools."""

SINGLES_ROUNDS = 2
"""Pooled programs solved before one without pools where topics with single-replica partitions
have extras. Their extras keep a column per broker (their leader rows count them) and can fill the
room of brokers that pools needed: the second program unpools every pool of several extras
(:func:`ferry.plan.balance.program.pools.tight`), and where even that does not split, further
rounds only shift the shortage (a 10k grown cluster at RF 1 to 3 solved four pooled programs before
the one without pools: tests/unit/plan/test_skewed_start.py)."""

POOLED_FROM = 100_000
"""Topics times brokers from which the balance program pools. Below it the full program solves in
well under a second, and rounds of pooled programs whose pools cannot be split only add to it
("unequal: 5/4/3/3, RF 2-3" of `benchmarks/plan_quality.py` took 3.2 s at 34853f2, which pooled
every program, and 1.9 s at 4f8c6ff, with this limit)."""


REPAIRED = 100
"""Most topics the exact pass could solve (:attr:`~ferry.plan.prepare.demand.TopicDemand.exact`) whose
rack-room rows are repaired; the others are left to that pass. On "unequal: 5/4/3/3, RF 2-3" of
`benchmarks/plan_quality.py` 50 such topics break their rows, and leaving them out loosens the bound
from 2,346 to 2,299 moves (2,350 made); each repair is a solver call, and thousands of them (or one
integer program of them all) are what made large inputs slow.
"""


ESCALATED = 1_000
"""Most topics of a program that solves it again with the rows of exact topics its repair could not
meet (:func:`_solve_lazily`). A larger program leaves them to the exact pass: there the second
round of the whole program would be an integer program of every topic (the rack-room rows end the
network), millions of columns for HiGHS."""


DEFERRED_FROM = ESCALATED + 1
"""Fewest topics of a program whose lazy rounds hold back the rows of pinned partitions that owe racks
a replica (:mod:`ferry.plan.balance.program.deferred_rows`). Where the optimum breaks some, their topics
are solved again under them, every other topic held (:func:`~ferry.plan.balance.topics_again.settle`);
where that keeps fewer replicas, the relaxation was loose, and the ladder's programs pose the rows
from the start (:class:`~ferry.plan.balance.setting.Deferral`). On "skewed rebalance, 2 racks of 20"
of `benchmarks/plan_quality.py --shapes` (100k partitions, 8,000 topics) they were 218,000 of 268,000
rows and HiGHS's 150 s; held back, the program is a network (docs/benchmarks.md). A smaller program
poses them: its HiGHS solve is short."""


def _worth_repairing(demands: Sequence[TopicDemand], broken: set[tuple[int, int]]) -> set[tuple[int, int]]:
    """The broken rack-room rows to repair: those of topics the exact pass cannot solve, and in a
    program of at most :data:`ESCALATED` topics those of at most :data:`REPAIRED` topics it can, the
    ones breaking most rows first (then by topic).

    A cap, not a cliff: every such topic was left to the exact pass once they were more than
    :data:`REPAIRED`, so one topic more could leave a hundred unrepaired (docs/benchmarks.md,
    "Repaired topics capped"). In a larger program their rows never join it (:func:`_solve_lazily`),
    so a repair would only pre-empt the exact pass, which solves the same topics anyway; as integer
    programs of one topic and then of all of them, it cost more than the pass (docs/benchmarks.md,
    "Exact topics left to the exact pass")."""
    if len(demands) > ESCALATED:
        return {(t, k) for t, k in broken if not demands[t].exact}
    rows = Counter(t for t, _ in broken if demands[t].exact)
    chosen = set(sorted(rows, key=lambda t: (-rows[t], t))[:REPAIRED])
    return {(t, k) for t, k in broken if t not in rows or t in chosen}


def final_quota(layout: RackLayout, quotas: Sequence[int]) -> Mapping[int, int]:
    """Quota per broker id from a layout-ordered tuple."""
    return dict(zip(layout.brokers, quotas, strict=True))
