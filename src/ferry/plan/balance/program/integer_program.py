"""The integer program of the global balance pass (:mod:`ferry.plan.balance.assign_extras` poses and
solves it).

Columns and rows, solved by HiGHS (:mod:`ferry.plan.balance.solvers.highs`):

* ``x[t, b]`` in {0, 1}: broker ``b`` takes one extra replica of topic ``t``. Each topic hands out
  exactly its extras, within each rack's (min, max); each broker's total load stays in the band that
  global water-filling allows, so the cluster-wide spread is at most one wherever racks permit.
* pooled (:mod:`ferry.plan.balance.program.pools`), for topics without single-replica partitions:
  ``y[t, rack]`` instead of the ``x[t, b]`` of the rack's brokers idle for ``t`` (holding no
  more of it than their base quota: an extra gains them nothing), and
  ``z[rack, b]`` in each broker's band row, what the rack's pool passes on to ``b``; where an
  optimum's pools filled more idle brokers than one of them could take, rows against that
  (:mod:`ferry.plan.balance.program.full_pools`); a broker whose own extras fill its band is not
  pooled where a topic's pool could need it (:mod:`ferry.plan.balance.program.loaded`);
* ``f[t, b]``: replicas of ``t`` that stay on ``b``, of partitions free to keep any of their replicas;
  left out where it follows from ``x[t, b]`` (:func:`ferry.plan.balance.program.topic_rows._imply_kept`).
* ``k[p, b]`` in {0, 1}: partition ``p`` keeps its replica on ``b``, for the few *pinned* partitions
  that cannot keep them all (a lowered replication factor, two replicas in one rack, or a rack
  below its lower bound: ``z[p, rack]`` counts the replicas that rack still needs).
* ``g[t, group, b]``: partitions of a group that only sheds replicas
  (:mod:`ferry.plan.prepare.shrink_groups`) that keep their replica on ``b``; at most ``rf`` per
  partition of the group.
* per broker: ``f[t, b] + sum_p k[p, b] + sum_group g[t, group, b] <= base[t, b] + x[t, b]``.
* per rack: the replicas a rack must receive (its quota minus what stays in it) fit into the open
  slots of partitions with room under the rack's upper bound. A replica dropped from broker ``b``
  opens a slot that may go to rack ``k`` only if its partition has room there, so at most
  ``y[t, b, k] = min(drops at b, partitions at b with room in k)`` of them count; pinned partitions
  count ``w[p, k] = min(open slots, room in k)``. Without these rows the program could hand an extra
  to a rack that the partitions losing replicas are already full in, and no placement could realise
  it with the moves the optimum promises.
* leaders: a single-replica partition is led by its only replica, so per broker the single-replica
  partitions fit the leader counts (``low`` each, ``low + 1`` on at most ``extra`` brokers, for
  ``P = low * B + extra`` partitions). Dropped again if no assignment meets it.
* maximise the replicas kept; a tiny size term makes the smaller replicas move among equals.

The rack-room rows may be left out for some (topic, rack) pairs (:attr:`ProgramState.room_rows`): that is
a relaxation, and :func:`ferry.plan.balance.program.rack_room.room_violations` tells which left-out rows a
solution breaks. Topics held fixed outside the program (:class:`Outside`) still count in the broker and leader
rows.
"""

from __future__ import annotations

from array import array
from itertools import compress, groupby

import numpy as np

from ferry.plan.balance.outcome import Balance
from ferry.plan.balance.program.broker_rows import band_rows, base_load, leader_rows
from ferry.plan.balance.program.columns import extend_from
from ferry.plan.balance.program.full_pools import oversaturated, saturation_rows
from ferry.plan.balance.program.held import held_optimum, partners
from ferry.plan.balance.program.idle_columns import (
    DISTINCT,
    FULL,
    OVERFULL,
    held_per_broker,
    is_network,
    per_broker_optimum,
)
from ferry.plan.balance.program.loaded import loaded_brokers
from ferry.plan.balance.program.pinned_run import runs_pinned
from ferry.plan.balance.program.plain_topics import PLAIN_CHUNK, add_plain, is_plain
from ferry.plan.balance.program.pool_groups import LOADED, PER_RACK
from ferry.plan.balance.program.pools import split, tight
from ferry.plan.balance.program.state import ProgramState
from ferry.plan.balance.program.topic_rows import add_topic
from ferry.plan.balance.setting import Setting
from ferry.plan.balance.solvers.transport import Unsolved
from ferry.plan.consecutive import batched
from ferry.plan.prepare.shrink_groups import realise


def solve(state: ProgramState, setting: Setting) -> Balance | None:
    """Build ``state``'s program under ``setting``, solve it and split its pools; ``None`` when it
    has no solution or its pools could not be split (:attr:`ProgramState.broke` says which, for
    the next program)."""
    build(state, setting)
    if len(state.upper) == 0:
        return _read(state, np.zeros(0))
    solution = _optimum(state)
    if solution is not None and state.pools.into:
        solution = _split(state, solution)
    state.let_go()
    if solution is None or state.broke:
        return None
    state.solution = solution
    return _read(state, solution)


def _optimum(state: ProgramState) -> np.ndarray | None:
    return state.optimum(
        state.scale, relax_first=_relax_first(state), keep=bool(state.pools.into), cutoff=cutoff(state)
    )


def cutoff(state: ProgramState) -> float | None:
    """The objective that separates solutions keeping :attr:`ProgramState.need` replicas (under it)
    from those keeping fewer (at or over it); ``None`` without a need.

    The objective is minus the columns' gains (the kept replicas beyond the topics' constants), less
    the size terms (under half a kept replica in all), plus the fines (under a quarter:
    :func:`ferry.plan.balance.solvers.parts.optimum`)."""
    if state.need is None:
        return None
    return 0.5 - (state.need - sum(state.constant))


def _relax_first(state: ProgramState) -> bool:
    """Without rack-room rows the relaxation mostly has an integer optimum already."""
    return state.room_rows is not None and not state.room_rows


def _split(state: ProgramState, solution: np.ndarray) -> np.ndarray | None:
    """Split the pools of ``solution`` (:attr:`Pools.split`), or say why not
    (:attr:`ProgramState.broke`). Where full pools no broker could take are why, the program is
    solved again first: the topics of those pools alone, or a network with a column per idle broker
    in the groups that failed (:mod:`ferry.plan.balance.program.idle_columns`), otherwise with rows
    that rule such pools out (:mod:`ferry.plan.balance.program.full_pools`), only its parts with
    those rows. Where the pools split but a row left out is broken (:attr:`ProgramState.loose`),
    those topics' loose rows are posed and the program solved again near its optimum, without
    building it again (:func:`_posed_again`; a second program was built before, on the 100k shapes
    of racks of 30 to 6 brokers and of the skewed start of `benchmarks/plan_quality.py --shapes`)."""
    found, failed, taken = split(state.layout, state.extras, state.pools, solution)
    rounds, ruled = 0, set[int]()
    while True:
        # Solved again for its loose rows, an optimum may overfill a broker where the first did not.
        fresh = oversaturated(state, solution, set(failed) - state.refined.saturate - ruled)
        if fresh:
            redone = _full_pools_again(state, solution, fresh)
            if redone is None:
                return None
            solution, (found, failed, taken), posed = redone
            ruled |= posed
        capped = state.loose.broken(solution)
        if not capped or failed:
            break
        if (again := _posed_again(state, solution, capped, every=rounds == LOOSE_ROUNDS)) is None:
            return None
        solution, rounds = again, rounds + 1
        found, failed, taken = split(state.layout, state.extras, state.pools, solution)
    state.broke.together = {g // PER_RACK for g in failed if g % PER_RACK == LOADED}
    others = [g for g in failed if g % PER_RACK != LOADED]
    failed_before = {k for _, k in state.refined.unpool}
    state.broke.unpool = tight(taken, others, failed_before, everywhere=state.singles_apart())
    if state.broke.unpool or state.broke.together:
        # The next program poses these from the start.
        state.broke.saturate, state.broke.capped = ruled, capped
    else:
        state.pools.split = found
    return solution


def _full_pools_again(
    state: ProgramState, solution: np.ndarray, groups: set[int]
) -> tuple[np.ndarray, tuple[list[list[int]], list[int], dict[int, list[tuple[int, int]]]], set[int]] | None:
    """The program solved again where full pools kept ``groups`` from splitting, and split; with the
    groups whose rows against full pools it posed (the next program poses them from the start);
    ``None`` without an optimum. First the topics of the pools that overfill a broker are solved
    again alone, with a column per idle broker, near ``solution``, then those of every full pool
    of ``groups``, then of every pool a split must give distinct brokers; then a network gets such
    columns in those groups' pools that can fill, then where a group still fails in all its pools
    (:mod:`ferry.plan.balance.program.idle_columns`); the rows are posed only where the flow cannot
    answer."""
    relax_first = _relax_first(state)
    for which in (OVERFULL, FULL, DISTINCT):
        near = held_per_broker(state, solution, groups, relax_first=relax_first, which=which)
        if near is None:
            continue
        found = split(state.layout, state.extras, state.pools, near)
        if not groups & set(found[1]):
            return near, found, set()
    for every in (False, True) if is_network(state) else ():
        again = per_broker_optimum(state, groups, every=every)
        if isinstance(again, Unsolved):
            break
        if again is None:
            return None
        found = split(state.layout, state.extras, state.pools, again)
        if every or not groups & set(found[1]):
            return again, found, set()
    saturation_rows(state, groups)
    posed_optimum = _optimum(state)
    if posed_optimum is None:
        return None
    return posed_optimum, split(state.layout, state.extras, state.pools, posed_optimum), groups


LOOSE_ROUNDS = 3
"""Solves again with only the broken topics' loose rows posed, before one with every loose row."""


def _posed_again(
    state: ProgramState, solution: np.ndarray, broken: set[tuple[int, int]], *, every: bool
) -> np.ndarray | None:
    """The program solved again with the loose rows of the topics that broke one posed (``every``:
    all loose rows), near ``solution``: a column it left at zero is fined (the fines break ties
    below one kept replica, :func:`ferry.plan.balance.solvers.parts.optimum`), so the kept count is
    the same optimum's and the other topics mostly keep their extras where they were.

    Solved anew, any optimum would do, and one that moves the excess to other topics' racks breaks
    their loose rows instead (Refinements.every_cap); posing every loose row made the flow three to
    six times as slow as the first (the rows' nodes, tens of thousands at 100k partitions) for a
    handful to a few hundred broken topics.

    The broken topics are solved again first, with partners that can take their extras
    (:func:`~ferry.plan.balance.program.held.partners`) and every other topic held as ``solution``
    has it (:mod:`ferry.plan.balance.program.held`), a program of their columns alone; only where
    that keeps fewer replicas is the whole program solved again."""
    fined = state.penalty
    topics = {t for t, _ in broken}
    freed = set() if every else topics | partners(state.loose, solution, broken)
    state.loose.pose(state, None if every else topics)
    if not every:
        free = np.ones(len(state.upper), dtype=bool)
        free[np.frombuffer(fined, dtype=np.int64)] = False  # a column fined already: two fines at most
        state.penalty = array("q", fined)
        extend_from(state.penalty, np.flatnonzero(free & (solution < 0.5)))
    try:
        if not every:
            found = held_optimum(state, solution, freed, relax_first=_relax_first(state))
            if found is not None:
                return found
        return _optimum(state)
    finally:
        state.penalty = fined


def build(state: ProgramState, setting: Setting) -> None:
    """Every column and row of the program under ``setting``."""
    # Pools feed the broker band rows: without them there is nothing to pool for.
    pooling = state.pool and setting.slack is not None
    if pooling and state.loaded is None:
        highs = np.array([hi for _, hi in setting.band], dtype=np.int64)
        room = highs + (setting.slack or 0) - base_load(state)
        state.loaded = loaded_brokers(len(state.layout.brokers), state.demands, room)
    _topics(state, pooling)
    if setting.slack is not None:
        band_rows(state, setting.band, setting.slack)
    if setting.cap is not None:
        leader_rows(state, *setting.cap)


PINNED_RUN_FROM = 3
"""Fewest topics with pinned partitions in a row built as a run (the same program either way): cut
into runs of one or two, the 100k skewed start's took longer than built one by one, in runs of
three less (seen outside the benchmark scripts)."""


def _topics(state: ProgramState, pooling: bool) -> None:
    """Every topic's columns and rows: the plain ones
    (:mod:`ferry.plan.balance.program.plain_topics`) first, in bulk, then the others, each in
    topic order, runs of at least :data:`PINNED_RUN_FROM` topics with pinned partitions
    (:mod:`ferry.plan.balance.program.pinned_run`) in bulk too. Plain topics come interleaved with
    the others (three racks at three replicas, a start that breaks the rack rule on some partitions
    of most topics), and runs of one or two cost numpy more than they save."""
    plain = [pooling and is_plain(state, t, d) for t, d in enumerate(state.demands)]
    chosen = list(compress(range(len(plain)), plain))
    if state.bulk:
        for chunk in batched(chosen, PLAIN_CHUNK):
            add_plain(state, list(chunk))
    else:
        for t in chosen:
            add_topic(state, t, state.demands[t], pooling=pooling)
    rest = compress(range(len(plain)), (not p for p in plain))
    in_runs = state.bulk and pooling
    for pinned, grouped in groupby(rest, key=lambda t: in_runs and runs_pinned(state, t, state.demands[t])):
        run = list(grouped)
        if pinned and len(run) >= PINNED_RUN_FROM:
            for part in map(list, batched(run, PLAIN_CHUNK)):
                # A run of pooled single-replica topics alone has no pinned partition to lay out.
                add_plain(state, part, pinned=any(state.demands[t].pinned for t in part))
        else:
            for t in run:
                add_topic(state, t, state.demands[t], pooling=pooling)


def _read(state: ProgramState, x: np.ndarray) -> Balance:
    topics = len(state.demands)
    quotas = [list(d.quota.base) for d in state.demands]
    topic, pos, col = state.extras.arrays()
    chosen = x[col] > 0.5
    for t, i in zip(topic[chosen].tolist(), pos[chosen].tolist(), strict=True):
        quotas[t][i] += 1
    for t, at in enumerate(state.pools.split if state.pools.into else ()):
        for i in at:
            quotas[t][i] += 1
    topic, _, col = state.kept.arrays()
    kept = np.bincount(topic, weights=x[col], minlength=topics).round().astype(np.int64) + state.constant
    decided = [{} if pins is None else pins.kept(x) for pins in state.pinned]
    for t, d in enumerate(state.demands):
        for g, group in enumerate(d.shrink_groups):
            decided[t].update(realise(group, state.group_counts(t, g, group)))
    return Balance([tuple(q) for q in quotas], kept.tolist(), decided)
