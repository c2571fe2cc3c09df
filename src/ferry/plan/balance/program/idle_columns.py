"""A network program whose pools could not be split, solved again with a column per idle broker in
the groups that failed, without building it again.

A pool (:mod:`ferry.plan.balance.program.pools`) passes its extras to its group's brokers through
one ``z`` per broker, as if any idle broker could take any of them; on a skewed start over three
racks at RF 3 a few brokers of each rack can take far fewer pooled extras than the pools that fill
every idle broker ask of them, and no split exists
(:mod:`ferry.plan.balance.program.full_pools`). Rows against full pools make the program one
HiGHS must solve; on 100k partitions of that shape ("skewed rebalance, 3 racks of 20" of
`benchmarks/plan_quality.py --shapes`) it took 8.2 s, more than half the plan.

Where the program is a network (every row of no network kind implied by others), the groups that
failed are instead given what the full program has there: per pool that can fill (its topic and rack
rows allow as many extras as it has idle brokers) and broker idle for its topic a column ``x[t, b]``
(up to one extra), in the pool's topic and rack rows and the broker's band row, while the pool's
own columns are held at zero. That is still a network, solved by min-cost flow from the matrix
already posed (:func:`per_broker_optimum`), and the optimum read back into the pooled columns: each
such pool the extras its brokers took, each ``z`` what its broker took of them on top of what it
took from the pools left as they were. Only a full pool can ask a broker for more than it can take,
and a pool that cannot fill is never full, so the pools left pooled mostly split; where a group
still does not, every pool of it gets such columns and its ``z`` is held at zero (``every``). The
program with these pools exact is a relaxation of the full program no looser than the pooled one,
and a split of it is a solution of the full one, so where every group splits the optimum is the full
program's. On that shape under a third of the failed groups' pools can fill, and the flow is that
much narrower (docs/benchmarks.md, "Only the pools that can fill, per broker").

Before that whole widened network, only the pools that ask a broker for more than it can take get
such columns, and only their topics are solved again, beside some with room in those groups, every
other topic held where the pooled optimum put it (:func:`held_per_broker`): the same relaxation, so
where that keeps as many replicas and splits it is the full program's optimum too. Where it keeps
fewer or does not split, every full pool of those groups gets such columns and their topics are
solved again, the rest still held; then every pool a split must give distinct brokers (full, or of
several extras); then the whole widened network.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np

from ferry.plan.balance.program.full_pools import can_fill, full_in, idle_pairs, overfull, with_room
from ferry.plan.balance.program.held import HeldColumns, column_owners, evenly, held_optimum
from ferry.plan.balance.program.state import ProgramState
from ferry.plan.balance.solvers.network_program import as_network, network_kinds, network_optimum
from ferry.plan.balance.solvers.transport import BROKER, POOL, Unsolved
from ferry.plan.consecutive import spans, starts


def is_network(program: ProgramState) -> bool:
    """Whether every row of the program that is of no network kind is implied by others (the min-cost
    flow leaves those out: :mod:`ferry.plan.balance.solvers.network_program`)."""
    return network_kinds(program.kinds, program.implied)


def per_broker_optimum(
    program: ProgramState, groups: Collection[int], *, every: bool = False
) -> np.ndarray | Unsolved | None:
    """An optimum of the posed program with the pools of ``groups`` that can fill (``every``: all
    of them) given a column per idle broker (module docstring), read back into the program's
    columns; ``None`` where it has none;
    :data:`~ferry.plan.balance.solvers.transport.UNSOLVED` where min-cost flow cannot answer (the caller
    poses rows against full pools instead)."""
    from scipy.sparse import hstack

    matrix = program.posed_matrix()
    picked = np.isin(np.frombuffer(program.pools.group, dtype=np.int64), list(groups))
    if not every:
        picked &= can_fill(program)
    chosen = np.flatnonzero(picked)
    added, upper, pairs = _widened(program, matrix, groups, chosen, every=every)
    # The widened matrix goes to as_network alone, which lets it go once cut: at a million
    # partitions three copies of it were held while the network was built.
    lows, highs = (np.frombuffer(values, dtype=np.float64) for values in (program.lows, program.highs))
    network = as_network(
        hstack([matrix, added], "csr"),
        list(program.kinds),
        (lows, highs, upper),
        program.implied,
        (np.array(program.grouped[0], dtype=np.int64), np.array(program.grouped[1], dtype=np.int64)),
    )
    del added
    gain, size = _gain_and_size(program, len(pairs[0]))
    found = network_optimum(network, gain=gain, size=size, penalty=program.penalty)
    if not isinstance(found, np.ndarray):
        return found
    return _read(program, found, chosen, pairs)


OVERFULL, FULL, DISTINCT = "overfull", "full", "distinct"
"""Which pools of the groups :func:`held_per_broker` gives a column per idle broker, in the order
they are tried: those idle on a broker that cannot take them all, every full one, every one a
split must give distinct brokers (full, or of several extras)."""
_BEFORE = {FULL: OVERFULL, DISTINCT: FULL}

PARTNER_STEPS = (2, 8)
"""Topics freed beside each topic of the pools given columns, per held solve, until one keeps as
many replicas (:func:`held_per_broker`)."""


def held_per_broker(
    program: ProgramState,
    solution: np.ndarray,
    groups: Collection[int],
    *,
    relax_first: bool,
    which: str = OVERFULL,
) -> np.ndarray | None:
    """``solution`` with a column per idle broker for the ``which`` pools of ``groups``
    (:data:`OVERFULL`: the full ones idle on a broker that cannot take them all,
    :func:`~ferry.plan.balance.program.full_pools.overfull`), solved again for those pools' topics
    alone, every other topic held where ``solution`` put it
    (:mod:`ferry.plan.balance.program.held`), and read back into the program's columns; ``None``
    where that keeps fewer replicas than ``solution`` (or meets no row), and where the stage before
    ``which`` chose the same pools (its answer, which the caller did not take, would come again).

    Only those pools ask such a broker for more than it can take. A few brokers of each rack
    overflow so on a skewed start over three racks, where solving the whole widened network again
    (:func:`per_broker_optimum`) cost as much as the first solve: at 100k partitions ("skewed
    rebalance, 3 racks of 20" of `benchmarks/plan_quality.py --shapes`) 2.2 s of a 7 s plan, for
    about 800 of 24,000 pools. Where this keeps as many replicas and splits, it is an optimum of
    the full program, as :func:`per_broker_optimum`'s is.

    On a million partitions of the same start at RF 1 to 3, the overfull pools' topics alone kept
    fewer replicas at both partner steps, and the whole widened network took 57 s; its optimum
    then fell short in the exact pass, and a second program solved its own again in 96 s
    (throwaway probe). Those of every full pool (:data:`FULL`), the rest held, keep as many in
    25 s and split, and the first program's optimum is the plan's (docs/benchmarks.md). On 30k
    draws at RF 1 to 3 and at RF 2 and 3 they do not split: pools of several extras that did not
    fill crowd the same brokers, and those of every such pool too (:data:`DISTINCT`) split there.
    At a million partitions that frees most topics (68k of 80k: 73 s; throwaway probe), so it
    comes last."""
    from scipy.sparse import hstack

    chosen = _chosen(program, solution, groups, which)
    if not len(chosen):
        return None
    if which in _BEFORE and np.array_equal(chosen, _chosen(program, solution, groups, _BEFORE[which])):
        return None  # the stage before chose these very pools: its answer, not taken, again
    matrix = program.posed_matrix()
    added, upper, pairs = _widened(program, matrix, groups, chosen, every=False)
    topic = np.frombuffer(program.pools.topic, dtype=np.int64)[chosen]
    owner = np.concatenate([column_owners(program, matrix.shape[1]), topic[pairs[0]]])
    gain, size = _gain_and_size(program, len(pairs[0]))
    columns = HeldColumns(hstack([matrix, added], "csr"), upper, gain, size, owner)
    mine = np.unique(topic)
    others = np.setdiff1d(with_room(program, solution, groups), mine)
    start = np.concatenate([solution, np.zeros(len(pairs[0]))])
    for step in PARTNER_STEPS:
        count = min(step * len(mine), len(others))
        freed = np.union1d(mine, evenly(others, count))
        found = held_optimum(program, start, freed.tolist(), relax_first=relax_first, columns=columns)
        if found is not None:
            return _read(program, found, chosen, pairs)
        if count == len(others):
            break
    return None


def _chosen(program: ProgramState, solution: np.ndarray, groups: Collection[int], which: str) -> np.ndarray:
    """The ``which`` pools of ``groups`` in ``solution`` (:data:`OVERFULL`, ...), ascending."""
    if which in (FULL, DISTINCT):
        return full_in(program, solution, groups, several=which == DISTINCT)
    return overfull(program, solution, groups)[1]


def _widened(
    program: ProgramState, matrix: Any, groups: Collection[int], chosen: np.ndarray, *, every: bool
) -> tuple[Any, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """The columns a per-broker solve adds for the ``chosen`` pools (their rows in ``matrix``,
    :func:`_idle_columns`), every column's bound (the chosen pools' own held at zero, and with
    ``every`` the ``z`` of ``groups`` too), and per added column its pool (index into ``chosen``)
    and broker position."""
    pools = program.pools
    topic, group, first, count = (
        np.frombuffer(values, dtype=np.int64)
        for values in (pools.topic, pools.group, pools.first, pools.count)
    )
    pair_pool, pair_pos = idle_pairs(program, topic[chosen], group[chosen])
    upper = np.concatenate([np.frombuffer(program.upper, dtype=np.float64), np.ones(len(pair_pool))])
    upper[spans(first[chosen], count[chosen])] = 0.0
    if every:
        upper[[z for g in groups for z in pools.into[g].values()]] = 0.0
    added = _idle_columns(program, matrix, groups, (first[chosen][pair_pool], pair_pos))
    return added, upper, (pair_pool, pair_pos)


def _gain_and_size(program: ProgramState, added: int) -> tuple[np.ndarray, np.ndarray]:
    """The program's column gains and sizes, zero for the ``added`` columns: a broker idle for a
    pool's topic keeps no replica of it, as the pool columns they stand in for."""
    none = np.zeros(added, dtype=np.int64)
    gain = np.concatenate([np.frombuffer(program.gain, dtype=np.int64), none])
    return gain, np.concatenate([np.frombuffer(program.size, dtype=np.int64), none])


def _read(
    program: ProgramState, found: np.ndarray, chosen: np.ndarray, pairs: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """A widened program's optimum ``found`` read back into the program's columns (:func:`_read_back`)."""
    width = len(program.upper)
    solution = found[:width].copy()
    taken = np.rint(found[width:]).astype(np.int64)
    _read_back(program, solution, (chosen, *pairs, taken))
    return solution


def _idle_columns(
    program: ProgramState, matrix: Any, groups: Collection[int], pairs: tuple[np.ndarray, np.ndarray]
) -> Any:
    """The columns of (pool, idle broker) ``pairs``, each given by a column of its pool and the
    broker's position: in the rows of ``matrix`` (the posed rows) that pool column is in but its pool
    row, and in the broker's band row."""
    from scipy.sparse import coo_array

    pool_column, pos = pairs
    kinds = np.array(program.kinds)
    columns = matrix.tocsc()
    rows, values, owner = _pool_entries(columns, pool_column, kinds)
    band = _band_rows(columns, program, groups, kinds)
    width = len(pos)
    entries = np.concatenate([values, np.ones(width)])
    at = (np.concatenate([rows, band[pos]]), np.concatenate([owner, np.arange(width)]))
    return coo_array((entries, at), shape=(matrix.shape[0], width))


def _pool_entries(columns: Any, pool_columns: np.ndarray, kinds: np.ndarray) -> tuple[np.ndarray, ...]:
    """The rows and values of each of ``pool_columns`` (of the CSC ``columns``) but its pool row, and
    per entry its place in ``pool_columns``: a broker's column enters the rows its pool's does."""
    counts = np.diff(columns.indptr)[pool_columns]
    at = spans(columns.indptr[pool_columns], counts)
    owner = np.repeat(np.arange(len(pool_columns)), counts)
    rows, values = columns.indices[at], columns.data[at]
    keep = kinds[rows] != POOL
    return rows[keep], values[keep], owner[keep]


def _band_rows(columns: Any, program: ProgramState, groups: Collection[int], kinds: np.ndarray) -> np.ndarray:
    """Per broker position, its band row (-1 where none of ``groups`` has it): the broker row its
    ``z`` enters."""
    out = np.full(len(program.layout.brokers), -1, dtype=np.int64)
    for g in groups:
        for pos, z in program.pools.into[g].items():
            rows = columns.indices[columns.indptr[z] : columns.indptr[z + 1]]
            out[pos] = int(rows[kinds[rows] == BROKER][0])
    return out


def _read_back(
    program: ProgramState, solution: np.ndarray, pairs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
) -> None:
    """Into ``solution``: per chosen pool the extras its brokers took, over its columns in order up to
    each one's bound, and per broker of the groups, into its ``z``: what it took of them."""
    chosen, pair_pool, pair_pos, taken = pairs
    pools = program.pools
    first = np.frombuffer(pools.first, dtype=np.int64)[chosen]
    count = np.frombuffer(pools.count, dtype=np.int64)[chosen]
    units = np.bincount(pair_pool, weights=taken, minlength=len(chosen)).astype(np.int64)
    cols = spans(first, count)
    bound = np.rint(np.frombuffer(program.upper, dtype=np.float64)[cols]).astype(np.int64)
    pool = np.repeat(np.arange(len(chosen)), count)
    before = np.cumsum(bound) - bound - _starts_of(bound, count)[pool]
    solution[cols] = np.clip(units[pool] - before, 0, bound)
    per_broker = np.bincount(pair_pos, weights=taken, minlength=len(program.layout.brokers))
    group = np.frombuffer(pools.group, dtype=np.int64)[chosen]
    for g in np.unique(group).tolist():
        for pos, z in pools.into[g].items():
            solution[z] += per_broker[pos]


def _starts_of(bound: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Per pool of ``count`` consecutive columns, the bounds of the columns of the pools before it."""
    ends = np.cumsum(bound)
    at = starts(count)
    out: np.ndarray = np.where(at > 0, ends[np.maximum(at - 1, 0)], 0)
    return out
