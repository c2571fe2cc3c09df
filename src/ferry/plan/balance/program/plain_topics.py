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

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, compress, islice
from operator import itemgetter
from typing import TypeVar

import numpy as np

from ferry.plan.balance.program.columns import extend_from
from ferry.plan.balance.program.loaded import loaded_pools
from ferry.plan.balance.program.pinned_rows import binding_floors
from ferry.plan.balance.program.pools import pool_columns, pool_width
from ferry.plan.balance.program.state import PlainRun, ProgramState
from ferry.plan.balance.solvers.transport import RACK, TOPIC
from ferry.plan.consecutive import rank, spans, starts
from ferry.plan.prepare.demand import TopicDemand, distinct_bases, extra_bounds

T = TypeVar("T")

PLAIN_CHUNK = 8192
"""Most plain topics built at once: the arrays of a run grow with it, and the program's build was
the driver's peak of memory at 100,000 topics when they were built in one go."""


def batched(items: Iterable[T], size: int) -> Iterator[tuple[T, ...]]:
    """``items`` in tuples of ``size`` (the last one shorter)."""
    it = iter(items)
    while chunk := tuple(islice(it, size)):
        yield chunk


def is_plain(program: ProgramState, t: int, d: TopicDemand) -> bool:
    """Whether topic ``t`` is built here (module docstring); the program must be pooling."""
    return not (
        d.single_replica
        or d.pinned
        or d.shrink_groups
        or binding_floors(program.layout, d)
        or t in program.unpool
        or (d.rack_room and program.room_topics(t))
    )


@dataclass(frozen=True)
class _Holders:
    """The brokers holding each topic of a run, flat: per entry its topic (index in the run),
    broker position and the topic's held, free, base and shed counts there."""

    topic: np.ndarray
    pos: np.ndarray
    held: np.ndarray
    free: np.ndarray
    base: np.ndarray
    shed: np.ndarray

    def joined(self, topic: np.ndarray, pos: np.ndarray, base: np.ndarray) -> tuple[_Holders, np.ndarray]:
        """These entries and more of brokers holding nothing (``topic``, ``pos``, ``base``), by topic
        then position; and where each entry of the join (these first) went."""
        none = np.zeros(len(topic), dtype=np.int64)
        parts = [
            (self.topic, topic),
            (self.pos, pos),
            (self.held, none),
            (self.free, none),
            (self.base, base),
            (self.shed, none),
        ]
        joined = [np.concatenate(pair) for pair in parts]
        order = np.lexsort((joined[1], joined[0]))
        return _Holders(*(values[order] for values in joined)), order

    @classmethod
    def of(cls, demands: Sequence[TopicDemand], brokers: int) -> _Holders:
        span = range(brokers)
        where = [list(compress(span, d.held)) for d in demands]
        counts = np.fromiter(map(len, where), dtype=np.int64, count=len(where))
        topic = np.repeat(np.arange(len(demands)), counts)
        pos = np.fromiter(chain.from_iterable(where), dtype=np.int64, count=len(topic))
        getters = [_getter(w) for w in where]

        def pick(values: Iterable[tuple[int, ...]]) -> np.ndarray:
            return np.fromiter(
                chain.from_iterable(g(v) for g, v in zip(getters, values, strict=True)),
                dtype=np.int64,
                count=len(pos),
            )

        held = pick(d.held for d in demands)
        # A topic without pinned partitions or shrinking groups has one tuple for both.
        free = held if all(d.free is d.held for d in demands) else pick(d.free for d in demands)
        distinct, rows = distinct_bases(demands)
        return cls(topic, pos, held, free, distinct[rows[topic], pos], pick(d.shed for d in demands))


def _getter(where: list[int]) -> Callable[[tuple[int, ...]], Sequence[int]]:
    """The values at ``where`` of a tuple, as a sequence (``itemgetter`` alone gives a bare value
    for one position)."""
    if len(where) > 1:
        return itemgetter(*where)
    return lambda values: [values[i] for i in where]


def add_plain(program: ProgramState, topics: list[int]) -> None:
    """Columns, rows and per-topic records of the plain ``topics`` (in order), as
    :func:`~ferry.plan.balance.program.topic_rows.add_topic` would add them one by one."""
    layout, demands = program.layout, [program.demands[t] for t in topics]
    racks = len(layout.members)
    h = _Holders.of(demands, len(layout.brokers))
    rack_at = np.asarray(layout.rack_at, dtype=np.int64)
    bounds, extras = extra_bounds(demands, racks)
    opened = (bounds[:, :, 1] > 0) & (extras[:, None] > 0)
    # Holders of no more than their base are idle for the topic, pooled (ferry.plan.balance.program.pools).
    is_x = opened[h.topic, rack_at[h.pos]] & (h.held > h.base)
    own = np.zeros(opened.shape, dtype=bool)
    if program.loaded:
        most = np.where(opened, np.minimum(extras[:, None], bounds[:, :, 1]), 0)
        found = loaded_pools(layout, demands, program.loaded, (h.topic, h.pos, is_x), most)
        own, take = found.own, found.take
        distinct, rows = distinct_bases(demands)
        h, order = h.joined(found.topic, found.pos, distinct[rows[found.topic], found.pos])
        is_x = np.concatenate([is_x | take, np.ones(len(found.topic), dtype=bool)])[order]
    rack = rack_at[h.pos]
    roomy = np.fromiter((bool(d.rack_room) for d in demands), dtype=bool, count=len(demands))
    # A broker that cannot exceed its quota keeps all it holds of free partitions; the others keep
    # min(free, base), and one more where they take an extra (ProgramState._imply_kept).
    fixed = (h.held <= h.base) & ~(program.voluntary & roomy[h.topic] & (h.free > 0))
    _keep(program, topics, h, fixed)
    # A rack row of most extras may be left out (loose): only the topic's row bounds a pool for sure.
    most = np.broadcast_to(extras[:, None], opened.shape)
    cols = _Layout.of(program, h, rack, is_x, opened, most)
    carries = (~fixed & (h.free > h.base))[is_x]
    x_col = np.full(len(h.pos), -1, dtype=np.int32)
    x_col[is_x] = cols.x
    # Kept until the solution is checked: in 32 bits, 3 million holders of 100,000 topics.
    topic, pos, free, base = (a.astype(np.int32) for a in (h.topic, h.pos, h.free, h.base))
    program.plain.append(PlainRun(np.asarray(topics, dtype=np.int64), topic, pos, free, base, x_col, fixed))
    _columns(program, h, is_x, carries, cols)
    _records(program, topics, h, is_x, carries, cols)
    _rows(program, topics, (bounds, extras, own), rack[is_x], cols)


def _keep(program: ProgramState, topics: list[int], h: _Holders, fixed: np.ndarray) -> None:
    """Replicas kept without a column, and the brokers whose kept replicas follow from ``x``."""
    kept = np.where(fixed, h.free, np.minimum(h.free, h.base))
    constant = np.bincount(h.topic, weights=kept, minlength=len(topics)).astype(np.int64).tolist()
    implied = _per_topic(h.pos[~fixed].tolist(), h.topic[~fixed], len(topics))
    for t, n, at in zip(topics, constant, implied, strict=True):
        program.constant[t] += n
        program.implied_at[t] = at


@dataclass(frozen=True)
class _Pooled:
    """The run's pools (topic in the run, rack), and every pooled column with its pool's topic
    and rack."""

    topic: np.ndarray
    rack: np.ndarray
    cols: np.ndarray
    col_topic: np.ndarray
    col_rack: np.ndarray

    @classmethod
    def of(cls, pool: np.ndarray, pool_count: np.ndarray) -> _Pooled:
        """From the first pooled column and the count of each (topic, rack)."""
        topic, rack = np.nonzero(pool_count)
        count = pool_count[topic, rack]
        every = spans(pool[topic, rack], count)
        return cls(topic, rack, every, np.repeat(topic, count), np.repeat(rack, count))


@dataclass(frozen=True)
class _Layout:
    """Where each topic's columns are: its extras ``x`` (per holder entry that has one), then per
    rack its pooled columns (:func:`~ferry.plan.balance.program.pools.pool_columns`)."""

    x: np.ndarray
    """Per holder entry with an extra, its column."""
    x_topic: np.ndarray
    first: np.ndarray
    """Per topic, its first column."""
    count: np.ndarray
    """Per topic, its columns."""
    pool: np.ndarray
    """Per topic and rack, the first pooled column (-1: none)."""
    pool_count: np.ndarray
    """Per topic and rack, 0 to 3 pooled columns."""
    idle: np.ndarray
    """Per topic and rack, brokers of an open rack idle for the topic
    (:mod:`ferry.plan.balance.program.pools`)."""
    x_in: np.ndarray
    """Per topic and rack, its extras on holders."""
    most: np.ndarray
    """Per topic and rack, the most extras the program lets its pool take (its topic's)."""
    pooled: _Pooled

    @classmethod
    def of(
        cls,
        program: ProgramState,
        h: _Holders,
        rack: np.ndarray,
        is_x: np.ndarray,
        opened: np.ndarray,
        most: np.ndarray,
    ) -> _Layout:
        topics, racks = opened.shape
        sizes = np.asarray(program.layout.sizes, dtype=np.int64)
        x_topic = h.topic[is_x]
        x_in = np.bincount(x_topic * racks + rack[is_x], minlength=topics * racks).reshape(topics, racks)
        idle = np.where(opened, sizes[None, :] - x_in, 0)
        pool_count = pool_width(idle, most)
        n_x = x_in.sum(axis=1)
        count = n_x + pool_count.sum(axis=1)
        first = len(program.upper) + starts(count)
        x = first[x_topic] + rank(x_topic, n_x)
        pool_at = (first + n_x)[:, None] + np.cumsum(pool_count, axis=1) - pool_count
        pool = np.where(pool_count > 0, pool_at, -1)
        return cls(x, x_topic, first, count, pool, pool_count, idle, x_in, most, _Pooled.of(pool, pool_count))


def _columns(
    program: ProgramState, h: _Holders, is_x: np.ndarray, carries: np.ndarray, cols: _Layout
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
        cols.idle[pooled.topic, pooled.rack], cols.most[pooled.topic, pooled.rack]
    )
    upper[pooled.cols - start] = pool_upper
    program.add_columns(upper, gain, size)
    extend_from(program.penalty, np.repeat(pooled.cols, fines))


def _records(
    program: ProgramState,
    topics: list[int],
    h: _Holders,
    is_x: np.ndarray,
    carries: np.ndarray,
    cols: _Layout,
) -> None:
    """Per topic: its extras (broker position, column) and the columns carrying kept replicas; the
    pools."""
    ids = np.asarray(topics, dtype=np.int64)
    program.extras.extend(ids[cols.x_topic], h.pos[is_x], cols.x)
    program.kept.extend(ids[cols.x_topic[carries]], np.full(int(carries.sum()), -1), cols.x[carries])
    pooled = cols.pooled
    program.pools.extend(
        ids[pooled.topic],
        pooled.rack,
        cols.pool[pooled.topic, pooled.rack],
        cols.pool_count[pooled.topic, pooled.rack],
    )


def _per_topic(items: list[T], topic: np.ndarray, topics: int) -> list[list[T]]:
    """``items`` (sorted by ``topic``) cut into one list per topic."""
    ends = np.cumsum(np.bincount(topic, minlength=topics)).tolist()
    return [items[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]


def _rows(
    program: ProgramState,
    topics: list[int],
    limits: tuple[np.ndarray, np.ndarray, np.ndarray],
    x_rack: np.ndarray,
    cols: _Layout,
) -> None:
    """Each topic's row (exactly its extras) and rack rows (its extras in a rack within the rack's
    bounds), posed or, where only a loose upper bound, left to
    :attr:`~ferry.plan.balance.program.state.ProgramState.loose`. ``limits``: per topic and rack
    its bounds, per topic its extras, and per topic and rack whether its loaded brokers have columns of
    their own (its row of most extras is then posed: :mod:`ferry.plan.balance.program.loaded`)."""
    bounds, extras, own = limits
    racks = cols.pool_count.shape[1]
    lo, hi = bounds[:, :, 0], bounds[:, :, 1]
    present = cols.x_in + cols.pool_count > 0
    wanted = present & ~((lo == 0) & (hi >= cols.x_in + cols.idle))
    loose = wanted & (lo == 0) & (cols.pool_count > 0) & ~own & ~_capped(program, topics, racks)
    posed = wanted & ~loose
    giving = extras > 0
    nrows = giving + posed.sum(axis=1)
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
    t_cols = np.repeat(t_rows, cols.count[t_rows])
    topic_entries = spans(cols.first[t_rows], cols.count[t_rows])
    rows = np.concatenate([first_row[t_cols], pair_row[in_rack]])
    entry_cols = np.concatenate([topic_entries, e_col[in_rack]])
    order = np.lexsort((entry_cols, rows))
    extend_from(program.rows, rows[order])
    extend_from(program.cols, entry_cols[order])
    extend_from(program.vals, np.ones(len(order)))
    _bounds(program, giving, extras, posed, lo, hi)
    decided = giving & np.all(lo == hi, axis=1) & (lo.sum(axis=1) == extras)
    extend_from(program.implied, first_row[decided])


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
    giving: np.ndarray,
    extras: np.ndarray,
    posed: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
) -> None:
    """Each row's bounds and kind, in row order: a topic's row, then its posed rack rows."""
    p_topic, p_rack = np.nonzero(posed)
    t_rows = np.flatnonzero(giving)
    # Sort key: the topic, then its topic row (-1) before its rack rows (their rack).
    key_topic = np.concatenate([t_rows, p_topic])
    key_rack = np.concatenate([np.full(len(t_rows), -1), p_rack])
    order = np.lexsort((key_rack, key_topic))
    lows = np.concatenate([extras[t_rows], lo[p_topic, p_rack]])[order]
    highs = np.concatenate([extras[t_rows], hi[p_topic, p_rack]])[order]
    kinds = np.where(key_rack[order] < 0, TOPIC, RACK)
    extend_from(program.lows, lows)
    extend_from(program.highs, highs)
    program.kinds.extend(kinds.tolist())
