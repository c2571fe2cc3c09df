"""The balance program's columns and rows of plain pooled topics, many topics at a time.

Most topics of a wide cluster of small topics are plain: pooled (:mod:`ferry.plan.balance.program.pools`),
without pinned partitions, shrinking groups or rack floors their rack rows do not already cover
(:func:`~ferry.plan.balance.program.pinned_rows.binding_floors`), and without rack-room rows
posed. Such a topic has only its extras ``x[t, b]`` on the brokers holding it, its pooled columns,
its topic row and its rack rows; every replica it keeps follows from those
(:func:`~ferry.plan.balance.program.topic_rows._imply_kept`). Built topic by topic, 100,000
of them took over 5 s of Python on the driver (`benchmarks/driver_phases.py`, "build: topics"); here only each
topic's holders are read in Python, and the columns, rows and entries of a run of plain topics are
laid out with numpy, in the order the topic-by-topic build gives them (the same program, column
for column and row for row).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ferry.plan.balance.program.columns import extend_from
from ferry.plan.balance.program.loaded import loaded_pools
from ferry.plan.balance.program.pinned_run import PinnedRun, TailRows, in_runs
from ferry.plan.balance.program.pools import pool_columns
from ferry.plan.balance.program.run_holders import Holders
from ferry.plan.balance.program.run_layout import RunLayout
from ferry.plan.balance.program.state import PlainRun, ProgramState
from ferry.plan.balance.solvers.transport import RACK, TOPIC
from ferry.plan.consecutive import per_group, spans, starts
from ferry.plan.prepare.demand import TopicDemand, distinct_bases, extra_bounds

PLAIN_CHUNK = 8192
"""Most plain topics built at once: the arrays of a run grow with it, and the program's build was
the driver's peak of memory at 100,000 topics when they were built in one go."""


def is_plain(program: ProgramState, t: int, d: TopicDemand) -> bool:
    """Whether topic ``t`` is built here (module docstring); the program must be pooling."""
    return not d.pinned and in_runs(program, t, d)


def add_plain(program: ProgramState, topics: list[int], *, pinned: bool = False) -> None:
    """Columns, rows and per-topic records of the plain ``topics`` (in order), as
    :func:`~ferry.plan.balance.program.topic_rows.add_topic` would add them one by one; with
    ``pinned``, of topics :func:`~ferry.plan.balance.program.pinned_run.runs_pinned` admits."""
    layout, demands = program.layout, [program.demands[t] for t in topics]
    racks = len(layout.members)
    h = Holders.of(demands, len(layout.brokers))
    rack_at = np.asarray(layout.rack_at, dtype=np.int64)
    bounds, extras = extra_bounds(demands, racks)
    opened = (bounds[:, :, 1] > 0) & (extras[:, None] > 0)
    # Holders of no more than their base are idle for the topic, pooled (ferry.plan.balance.program.pools).
    is_x = opened[h.topic, rack_at[h.pos]] & (h.held > h.base)
    own = np.zeros(opened.shape, dtype=bool)
    if program.loaded:
        most = np.where(opened, np.minimum(extras[:, None], bounds[:, :, 1]), 0)
        limits = (most, program.groups.apart)
        found = loaded_pools(layout, demands, program.loaded, (h.topic, h.pos, is_x), limits)
        own, take = found.posed, found.take
        distinct, rows = distinct_bases(demands)
        h, order = h.joined(found.topic, found.pos, distinct[rows[found.topic], found.pos])
        is_x = np.concatenate([is_x | take, np.ones(len(found.topic), dtype=bool)])[order]
    rack = rack_at[h.pos]
    roomy = np.fromiter((bool(d.rack_room) for d in demands), dtype=bool, count=len(demands))
    # A broker that cannot exceed its quota keeps all it holds of free partitions; the others keep
    # min(free, base), and one more where they take an extra (ProgramState._imply_kept), unless
    # pinned replicas sit there (a holder row of its own: ferry.plan.balance.program.pinned_run).
    fixed = (h.held <= h.base) & ~(program.voluntary & roomy[h.topic] & (h.free > 0))
    tail = PinnedRun.of(program, topics, h, fixed) if pinned else None
    follows = ~fixed if tail is None else ~fixed & ~tail.on
    _keep(program, topics, h, fixed, follows)
    # A rack row of most extras may be left out (loose): only the topic's row bounds a pool for sure.
    cols = RunLayout.of(program, h, (rack, is_x, opened, extras), tail)
    carries = (follows & (h.free > h.base))[is_x]
    x_col = np.full(len(h.pos), -1, dtype=np.int32)
    x_col[is_x] = cols.x
    placed = None
    if tail is not None:
        placed = _Placed(tail, *tail.columns(h, cols.tail), x_col)
        tail.record(program, topics, h, (placed.k, placed.f))
    _checked_later(program, topics, h, (x_col, fixed), placed)
    _columns(program, h, is_x, carries, cols, placed)
    _records(program, topics, h, (is_x, carries), cols, placed)
    _rows(program, topics, (bounds, extras, own), rack[is_x], cols, None if placed is None else (h, placed))


def _checked_later(
    program: ProgramState,
    topics: list[int],
    h: Holders,
    entries: tuple[np.ndarray, np.ndarray],
    placed: _Placed | None,
) -> None:
    """What the rack-room check reads of the run (:class:`PlainRun`); ``entries``: per holder entry
    its extra's column and whether it keeps all its free replicas whatever the extra."""
    x_col, fixed = entries
    # Kept until the solution is checked: in 32 bits, 3 million holders of 100,000 topics.
    topic, pos, free, base = (a.astype(np.int32) for a in (h.topic, h.pos, h.free, h.base))
    ids = np.asarray(topics, dtype=np.int64)
    if placed is None:
        program.plain.append(PlainRun(ids, topic, pos, free, base, x_col, fixed))
        return
    run = placed.run
    f_col = np.full(len(h.pos), -1, dtype=np.int32)
    f_col[run.has_f] = placed.f
    # A holder row without an f column: the broker holds no free replica, and keeps all of none.
    fixed = fixed | (run.kept_row & ~run.has_f)
    pinned = (replace(run.pins, cols=placed.k), run.pin_topic)
    program.plain.append(PlainRun(ids, topic, pos, free, base, x_col, fixed, f_col, pinned))


@dataclass(frozen=True)
class _Placed:
    """A pinned run (:mod:`ferry.plan.balance.program.pinned_run`) with its columns: per pinned
    replica ``k``, per holder entry with an ``f`` column that column, and per holder entry its ``x``
    column (-1: none)."""

    run: PinnedRun
    k: np.ndarray
    f: np.ndarray
    x_col: np.ndarray


def _keep(
    program: ProgramState, topics: list[int], h: Holders, fixed: np.ndarray, follows: np.ndarray
) -> None:
    """Replicas kept without a column, and the brokers whose kept replicas follow from ``x``
    (``follows``; the others not ``fixed`` have a holder row)."""
    kept = np.where(fixed, h.free, np.where(follows, np.minimum(h.free, h.base), 0))
    constant = np.bincount(h.topic, weights=kept, minlength=len(topics)).astype(np.int64).tolist()
    implied = per_group(h.pos[follows].tolist(), h.topic[follows], len(topics))
    for t, n, at in zip(topics, constant, implied, strict=True):
        program.constant[t] += n
        program.implied_at[t] = at


def _columns(
    program: ProgramState,
    h: Holders,
    is_x: np.ndarray,
    carries: np.ndarray,
    cols: RunLayout,
    placed: _Placed | None,
) -> None:
    """Bounds, gains and size terms of the run's columns; the penalty columns."""
    start, total = len(program.upper), int(cols.count.sum())
    upper = np.zeros(total, dtype=np.float64)
    gain = np.zeros(total, dtype=np.int64)
    size = np.zeros(total, dtype=np.int64)
    x = cols.x - start
    upper[x] = 1
    gain[x] = carries
    size[x] = h.shed[is_x]
    pooled = cols.pooled
    _, pool_upper, fines = pool_columns(
        cols.idle[pooled.topic, pooled.group], cols.most[pooled.topic, pooled.group]
    )
    upper[pooled.cols - start] = pool_upper
    if placed is not None:
        at = np.concatenate([placed.k, placed.f]) - start
        upper[at], size[at] = placed.run.values(h)
        gain[at] = 1
    program.add_columns(upper, gain, size)
    extend_from(program.penalty, np.repeat(pooled.cols, fines))


def _records(
    program: ProgramState,
    topics: list[int],
    h: Holders,
    extras: tuple[np.ndarray, np.ndarray],
    cols: RunLayout,
    placed: _Placed | None,
) -> None:
    """Per topic: its extras (broker position, column) and the columns counting kept replicas (a
    pinned run's ``k`` and ``f`` columns, then the extras carrying one: ``extras``, per holder entry
    whether it has an extra and per extra whether it carries one); the pools."""
    is_x, carries = extras
    ids = np.asarray(topics, dtype=np.int64)
    program.extras.extend(ids[cols.x_topic], h.pos[is_x], cols.x)
    topic, col = cols.x_topic[carries], cols.x[carries]
    if placed is not None:
        pinned_topic, pinned_col, place = placed.run.kept(h, (placed.k, placed.f))
        place = np.concatenate([place, np.full(len(col), 2)])
        topic, col = np.concatenate([pinned_topic, topic]), np.concatenate([pinned_col, col])
        order = np.lexsort((place, topic))
        topic, col = topic[order], col[order]
    program.kept.extend(ids[topic], np.full(len(topic), -1), col)
    pooled = cols.pooled
    program.pools.extend(
        ids[pooled.topic],
        pooled.group,
        cols.pool[pooled.topic, pooled.group],
        cols.pool_count[pooled.topic, pooled.group],
    )


def _rows(
    program: ProgramState,
    topics: list[int],
    limits: tuple[np.ndarray, np.ndarray, np.ndarray],
    x_rack: np.ndarray,
    cols: RunLayout,
    pinned: tuple[Holders, _Placed] | None,
) -> None:
    """Each topic's row (exactly its extras) and rack rows (its extras in a rack within the rack's
    bounds), posed or, where only a loose upper bound, left to
    :attr:`~ferry.plan.balance.program.state.ProgramState.loose`; then a pinned run's rows
    (:meth:`~ferry.plan.balance.program.pinned_run.PinnedRun.rows`). ``limits``: per topic and rack
    its bounds, per topic its extras, and per topic and rack whether its loaded brokers pose its row
    of most extras (:mod:`ferry.plan.balance.program.loaded`)."""
    bounds, extras, own = limits
    lo, hi = bounds[:, :, 0], bounds[:, :, 1]
    loose, posed = _rack_rows(program, topics, (lo, hi, own), cols)
    giving = extras > 0
    plain_rows = giving + posed.sum(axis=1)
    nrows = plain_rows if pinned is None else plain_rows + pinned[1].run.row_count
    first_row = len(program.lows) + starts(nrows)
    rack_row = np.where(posed, first_row[:, None] + giving[:, None] + np.cumsum(posed, axis=1) - posed, -1)
    # Entries of every (topic, rack): its extras on holders, then its pooled columns.
    pooled = cols.pooled
    e_topic = np.concatenate([cols.x_topic, pooled.col_topic])
    e_rack = np.concatenate([x_rack, pooled.col_rack])
    e_col = np.concatenate([cols.x, pooled.cols])
    order = np.lexsort((e_col, e_rack, e_topic))
    e_topic, e_rack, e_col = e_topic[order], e_rack[order], e_col[order]
    _loose(program, topics, loose, hi, e_topic, e_rack, e_col)
    pair_row = rack_row[e_topic, e_rack]
    in_rack = pair_row >= 0
    t_rows = np.flatnonzero(giving)
    plain = cols.tail - cols.first
    t_cols = np.repeat(t_rows, plain[t_rows])
    rows: list[np.ndarray] = [first_row[t_cols], pair_row[in_rack]]
    entry_cols: list[np.ndarray] = [spans(cols.first[t_rows], plain[t_rows]), e_col[in_rack]]
    ones = len(rows[0]) + len(rows[1])
    vals: list[np.ndarray] = [np.ones(ones)]
    place: list[np.ndarray] = [np.zeros(ones, dtype=np.int64)]
    tail = None
    if pinned is not None:
        h, placed = pinned
        tail = placed.run.rows(program, topics, h, (placed.k, placed.f, placed.x_col), first_row + plain_rows)
        for parts, more in zip((rows, entry_cols, vals, place), tail.entries, strict=True):
            parts.append(more)
        extend_from(program.grouped[0], tail.grouped[0])
        extend_from(program.grouped[1], tail.grouped[1])
    row, col = np.concatenate(rows), np.concatenate(entry_cols)
    # By row, then (a holder row's) pinned replicas, f, x, each by column.
    order = np.lexsort((col, np.concatenate(place), row))
    extend_from(program.rows, row[order])
    extend_from(program.cols, col[order])
    extend_from(program.vals, np.concatenate(vals)[order])
    _bounds(program, (first_row, rack_row, int(nrows.sum())), (giving, extras, posed, lo, hi), tail)
    decided = first_row[giving & np.all(lo == hi, axis=1) & (lo.sum(axis=1) == extras)]
    extend_from(
        program.implied, decided if tail is None else np.sort(np.concatenate([decided, tail.implied]))
    )


def _rack_rows(
    program: ProgramState,
    topics: list[int],
    limits: tuple[np.ndarray, np.ndarray, np.ndarray],
    cols: RunLayout,
) -> tuple[np.ndarray, np.ndarray]:
    """Per topic and rack, whether its rack row is left out (loose), and whether it is posed."""
    lo, hi, own = limits
    pooling = cols.per_rack(cols.pool_count) > 0
    present = (cols.x_in > 0) | pooling
    wanted = present & ~((lo == 0) & (hi >= cols.x_in + cols.per_rack(cols.idle)))
    capped = _capped(program, topics, cols.x_in.shape[1])
    loose = wanted & (lo == 0) & pooling & ~own & ~capped
    return loose, wanted & ~loose


def _capped(program: ProgramState, topics: list[int], racks: int) -> np.ndarray:
    """Per topic and rack, whether its loose row of most extras is posed all the same
    (:meth:`~ferry.plan.balance.program.state.ProgramState.capped`)."""
    refined = program.refined
    out = np.full((len(topics), racks), refined.every_cap, dtype=bool)
    if refined.capped and not refined.every_cap:
        index = {t: j for j, t in enumerate(topics)}
        for t, k in refined.capped:
            if t in index:
                out[index[t], k] = True
    return out


def _loose(
    program: ProgramState,
    topics: list[int],
    loose: np.ndarray,
    hi: np.ndarray,
    e_topic: np.ndarray,
    e_rack: np.ndarray,
    e_col: np.ndarray,
) -> None:
    """The loose rows' (topic, rack), most extras and columns, in topic and rack order."""
    l_topic, l_rack = np.nonzero(loose)
    if not len(l_topic):
        return
    number = np.full(loose.shape, -1, dtype=np.int64)
    number[l_topic, l_rack] = np.arange(len(l_topic))
    owner = number[e_topic, e_rack]
    mine = owner >= 0
    program.loose.extend(
        np.asarray(topics, dtype=np.int64)[l_topic], l_rack, hi[l_topic, l_rack], owner[mine], e_col[mine]
    )


def _bounds(
    program: ProgramState,
    at: tuple[np.ndarray, np.ndarray, int],
    limits: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    tail: TailRows | None,
) -> None:
    """Each row's bounds and kind, in row order: a topic's row, its posed rack rows, then a pinned
    run's rows. ``at``: per topic its first row, per topic and rack its rack row, and the rows in
    all; ``limits``: per topic whether it gives extras and how many, per topic and rack whether its
    row is posed and its bounds."""
    first_row, rack_row, total = at
    giving, extras, posed, lo, hi = limits
    start = len(program.lows)
    lows, highs = np.full(total, -np.inf), np.empty(total)
    kinds = np.empty(total, dtype=object)
    topic_rows, rack_rows = first_row[giving] - start, rack_row[posed] - start
    lows[topic_rows] = highs[topic_rows] = extras[giving]
    kinds[topic_rows] = TOPIC
    lows[rack_rows], highs[rack_rows] = lo[posed], hi[posed]
    kinds[rack_rows] = RACK
    if tail is not None:
        highs[tail.at - start] = tail.highs
        kinds[tail.at - start] = tail.kinds
    extend_from(program.lows, lows)
    extend_from(program.highs, highs)
    program.kinds.extend(kinds.tolist())
