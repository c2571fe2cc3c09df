"""Solve a chunk of topics again, exactly, each broker's total over the chunk held (see
:mod:`ferry.plan.balance.repair.per_partition`).

Columns, per topic ``t`` of the chunk:

* ``x[t, b]`` in {0, 1}: broker ``b`` takes one of the topic's extras (as in
  :mod:`ferry.plan.balance.program.integer_program`);
* ``k[p, b]`` in {0, 1}: partition ``p`` keeps its replica on ``b``;
* ``u[p, r]``: new replicas of partition ``p`` in rack ``r``; for a topic whose partitions a rack
  may hold two of, ``u[p, b]`` in {0, 1} per broker ``b`` the partition is not on instead, as a
  rack's count would let two new replicas share a broker, or a new one sit beside a kept one
  (:mod:`ferry.plan.balance.repair.broker_arcs`).

Rows: the topic hands out exactly its extras, each rack within its (min, max); every partition ends
with its replication factor, each rack within its bounds; a broker keeps at most its quota
(``base + x``), or of a topic placed broker by broker ends with exactly it; a rack receives exactly
what its brokers' quotas leave after the kept replicas; and per broker ``sum_t x[t, b]`` is what
the chunk gave it before, so the broker rows of the whole program, and every topic outside the
chunk, stay as they were. The objective is the one of the
program: replicas kept, then their bytes. A row that says no more than its columns' bounds (a
partition's row for a rack where it keeps nothing and owes nothing, a row with no columns that any
value meets) is left out: HiGHS solves the relaxation without its presolve
(:attr:`ferry.plan.balance.solvers.parts.Approach.presolve`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ferry.plan.balance.outcome import Balance
from ferry.plan.balance.program.columns import Columns
from ferry.plan.balance.repair.broker_arcs import crowds
from ferry.plan.balance.repair.flat_layouts import FlatLayouts
from ferry.plan.balance.solvers.transport import OTHER
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout


@dataclass(frozen=True)
class _Chunk:
    """The chunk's topics flat, built in bulk (a chunk of 40 topics has some 13,000 columns and
    4,000 rows: a Python call per row and term took a tenth of each chunk's time): their partitions
    and kept replicas (:class:`~ferry.plan.balance.repair.flat_layouts.FlatLayouts`), each partition's
    size, per extra column its topic and broker position, and the layout's rack per position."""

    parts: FlatLayouts
    size: np.ndarray
    x_topic: np.ndarray
    x_pos: np.ndarray
    rack_at: np.ndarray
    crowded: np.ndarray
    """Per topic, whether a rack may hold two replicas of one of its partitions: its new replicas
    are then placed broker by broker (module docstring)."""
    base: np.ndarray
    """Per topic and broker position, the topic's base quota."""

    @classmethod
    def of(cls, layout: RackLayout, demands: Sequence[TopicDemand]) -> _Chunk:
        extra = [d.quota.extra_positions(layout) for d in demands]
        return cls(
            parts=FlatLayouts.of(layout, [d.layouts for d in demands]),
            size=np.array([s for d in demands for s in d.layouts.size], dtype=np.int64),
            x_topic=np.repeat(np.arange(len(demands)), [len(e) for e in extra]),
            x_pos=np.array([i for e in extra for i in e], dtype=np.int64),
            rack_at=np.asarray(layout.rack_at, dtype=np.int64),
            crowded=np.array([crowds(layout, d.layouts) for d in demands], dtype=bool),
            base=np.array([d.quota.base for d in demands], dtype=np.int64).reshape(len(demands), -1),
        )

    @property
    def lo(self) -> np.ndarray:
        """Per partition and rack, the fewest replicas it may have there."""
        lo: np.ndarray = self.parts.lo[self.parts.rf]
        return lo

    @property
    def hi(self) -> np.ndarray:
        """Per partition and rack, the most replicas it may have there."""
        hi: np.ndarray = self.parts.hi[self.parts.rf]
        return hi


@dataclass(frozen=True)
class _Columns:
    """The chunk's columns: extras (one per entry of ``x_topic``), kept replicas (one per replica),
    then new replicas per (partition, rack) where the rack may take one (``u_part``, ``u_rack``),
    or for a crowded topic's partition per broker that may take it (``u_pos``; -1 for the others)."""

    x: np.ndarray
    k: np.ndarray
    u: np.ndarray
    u_part: np.ndarray
    u_rack: np.ndarray
    u_pos: np.ndarray


def rejoin(
    layout: RackLayout, demands: Sequence[TopicDemand], quotas: Sequence[Sequence[int]]
) -> Balance | None:
    """The chunk ``demands`` (with their current ``quotas``) solved again; ``None`` if the solver
    finds nothing. ``kept`` of the answer counts the replicas its keeps keep."""
    program = Columns()
    chunk = _Chunk.of(layout, demands)
    cols = _columns(program, chunk)
    total = np.sum(np.array(quotas, dtype=np.int64), axis=0)
    base = chunk.base
    _extras_rows(program, layout, demands, chunk, cols, total - base.sum(axis=0))
    _partition_rows(program, layout, chunk, cols)
    _topic_rows(program, layout, chunk, cols, base)
    # Every kept replica's bytes at once stay under half a kept replica, so the bytes only break
    # ties; bounded by the biggest partition times every column, the terms sat near the solver's
    # tolerances and its dual simplex took twice as long (docs/benchmarks.md).
    scale = 0.5 / (float(chunk.size[chunk.parts.rep_part].sum()) + 1.0)
    # Mostly integral already: HiGHS's branching only where it is not. Presolve would take out
    # little here and cost a third of the relaxation's time (docs/benchmarks.md).
    solution = program.optimum(scale, relax_first=True, presolve=False)
    if solution is None:
        return None
    return _read(layout, demands, chunk, cols, base, solution)


def _columns(program: Columns, chunk: _Chunk) -> _Columns:
    n_x, n_k = len(chunk.x_topic), len(chunk.parts.rep_part)
    u_part, u_rack, u_pos = _new_places(chunk)
    upper = np.where(u_pos >= 0, 1, chunk.hi[u_part, u_rack])
    x = program.add_columns(np.ones(n_x), np.zeros(n_x, dtype=np.int64), np.zeros(n_x, dtype=np.int64))
    k = program.add_columns(np.ones(n_k), np.ones(n_k, dtype=np.int64), chunk.size[chunk.parts.rep_part])
    n_u = len(u_part)
    u = program.add_columns(
        upper.astype(np.float64), np.zeros(n_u, dtype=np.int64), np.zeros(n_u, dtype=np.int64)
    )
    return _Columns(x + np.arange(n_x), k + np.arange(n_k), u + np.arange(n_u), u_part, u_rack, u_pos)


def _new_places(chunk: _Chunk) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where each partition may take new replicas: (partition, rack, -1) per rack that may hold
    one, or for a crowded topic's partition (partition, rack, broker) per broker of such a rack
    that the topic's base or extras may give some of it and that the partition is not on."""
    flat = chunk.parts
    loose = ~chunk.crowded[flat.topic]
    rows, racks = np.nonzero((chunk.hi > 0) & loose[:, None])
    brokers = chunk.base.shape[1]
    may = chunk.base > 0
    may[chunk.x_topic, chunk.x_pos] = True
    on = np.zeros((len(flat.rf), brokers), dtype=bool)
    on[flat.rep_part, flat.rep_pos] = True
    open_rack = chunk.hi[:, chunk.rack_at] > 0
    b_part, b_pos = np.nonzero(~loose[:, None] & may[flat.topic] & ~on & open_rack)
    part = np.concatenate([rows, b_part])
    order = np.argsort(part, kind="stable")
    return (
        part[order],
        np.concatenate([racks, chunk.rack_at[b_pos]])[order],
        np.concatenate([np.full(len(rows), -1), b_pos])[order],
    )


def _extras_rows(
    program: Columns,
    layout: RackLayout,
    demands: Sequence[TopicDemand],
    chunk: _Chunk,
    cols: _Columns,
    given: np.ndarray,
) -> None:
    """Each topic hands out its extras, each rack within its (min, max), and each broker takes the
    ``given`` extras of the chunk as before."""
    racks, n = len(layout.members), len(demands)
    extras = np.array([d.quota.extras for d in demands], dtype=np.float64)
    _family(program, chunk.x_topic, cols.x, 1.0, (extras, extras), np.ones(n, dtype=bool))
    rack_bounds = np.array([d.quota.rack_extras for d in demands], dtype=np.float64).reshape(n * racks, 2)
    keys = chunk.x_topic * racks + chunk.rack_at[chunk.x_pos]
    counts = np.bincount(keys, minlength=n * racks)
    # A row with no lower bound whose upper bound its columns cannot exceed says only what their
    # bounds say.
    posed = (rack_bounds[:, 0] > 0) | ((counts > 0) & (rack_bounds[:, 1] < counts))
    _family(program, keys, cols.x, 1.0, (rack_bounds[:, 0], rack_bounds[:, 1]), posed)
    terms = np.bincount(chunk.x_pos, minlength=len(given))
    bound = given.astype(np.float64)
    _family(program, chunk.x_pos, cols.x, 1.0, (bound, bound), (terms > 0) | (given != 0))


def _partition_rows(program: Columns, layout: RackLayout, chunk: _Chunk, cols: _Columns) -> None:
    """Every partition ends with its replication factor, each rack within its bounds."""
    flat = chunk.parts
    racks, parts = len(layout.members), len(flat.rf)
    both = np.concatenate([cols.k, cols.u])
    keys = np.concatenate(
        [flat.rep_part * racks + chunk.rack_at[flat.rep_pos], cols.u_part * racks + cols.u_rack]
    )
    kept_here = np.bincount(keys[: len(cols.k)], minlength=parts * racks)
    terms = np.bincount(keys, minlength=parts * racks)
    lo, hi = chunk.lo.reshape(-1).astype(np.float64), chunk.hi.reshape(-1).astype(np.float64)
    # Where the partition keeps nothing in the rack and owes it nothing, the row would say u <= hi,
    # the column's own bound (or, over a crowded topic's columns per broker, no more than their
    # bounds of one each allow).
    _family(program, keys, both, 1.0, (lo, hi), (kept_here > 0) | (lo > 0) | (terms > hi))
    rf = flat.rf.astype(np.float64)
    owner = np.concatenate([flat.rep_part, cols.u_part])
    _family(program, owner, both, 1.0, (rf, rf), np.ones(parts, dtype=bool))


def _topic_rows(
    program: Columns, layout: RackLayout, chunk: _Chunk, cols: _Columns, base: np.ndarray
) -> None:
    """A broker keeps at most its quota (``base + x``) of the topic, or for a crowded topic ends
    with exactly it; a rack receives exactly what its brokers' quotas leave after the kept
    replicas (implied by the brokers' rows for a crowded topic)."""
    flat, rack_at = chunk.parts, chunk.rack_at
    topics, brokers = base.shape
    racks = len(layout.members)
    k_topic = flat.topic[flat.rep_part]
    kept_keys = k_topic * brokers + flat.rep_pos
    placed = cols.u_pos >= 0
    new_keys = flat.topic[cols.u_part[placed]] * brokers + cols.u_pos[placed]
    keys = np.concatenate([kept_keys, new_keys, chunk.x_topic * brokers + chunk.x_pos])
    crowded = np.repeat(chunk.crowded, brokers)
    terms = np.bincount(keys, minlength=topics * brokers)
    _family(
        program,
        keys,
        np.concatenate([cols.k, cols.u[placed], cols.x]),
        np.concatenate([np.ones(len(cols.k) + len(new_keys)), -np.ones(len(cols.x))]),
        (np.where(crowded, base.reshape(-1), -np.inf), base.reshape(-1).astype(np.float64)),
        (np.bincount(kept_keys, minlength=topics * brokers) > 0)
        | (crowded & ((terms > 0) | (base.reshape(-1) != 0))),
    )
    # In integers: a product of floats would go through BLAS (ferry.plan.balance.solvers.parts says why not).
    rack_base = base @ np.eye(racks, dtype=np.int64)[rack_at]
    keys = np.concatenate(
        [
            flat.topic[cols.u_part[~placed]] * racks + cols.u_rack[~placed],
            k_topic * racks + rack_at[flat.rep_pos],
            chunk.x_topic * racks + rack_at[chunk.x_pos],
        ]
    )
    vals = np.concatenate([np.ones(int((~placed).sum()) + len(cols.k)), -np.ones(len(cols.x))])
    terms = np.bincount(keys, minlength=topics * racks)
    expected = rack_base.reshape(-1)
    posed = ((terms > 0) | (expected != 0)) & ~np.repeat(chunk.crowded, racks)
    _family(
        program, keys, np.concatenate([cols.u[~placed], cols.k, cols.x]), vals, (expected, expected), posed
    )


def _family(
    program: Columns,
    keys: np.ndarray,
    cols: np.ndarray,
    vals: float | np.ndarray,
    bounds: tuple[np.ndarray, np.ndarray],
    posed: np.ndarray,
) -> None:
    """Rows numbered by ``keys`` (0 to ``len(posed)``), those ``posed`` added in key order, each
    adding up the ``cols`` whose key it is, times ``vals``; the entries of rows not posed are left out."""
    row_of = np.cumsum(posed) - 1
    mine = posed[keys]
    rows = row_of[keys[mine]]
    order = np.argsort(rows, kind="stable")
    values = np.broadcast_to(np.asarray(vals, dtype=np.float64), keys.shape)[mine][order]
    entries = (rows[order], cols[mine][order], values)
    program.add_rows(entries, (bounds[0][posed], bounds[1][posed]), [OTHER] * int(posed.sum()))


def _read(
    layout: RackLayout,
    demands: Sequence[TopicDemand],
    chunk: _Chunk,
    cols: _Columns,
    base: np.ndarray,
    solution: np.ndarray,
) -> Balance:
    flat = chunk.parts
    quotas = base.copy()
    np.add.at(quotas, (chunk.x_topic, chunk.x_pos), np.rint(solution[cols.x]).astype(np.int64))
    chosen = solution[cols.k] > 0.5
    kept = np.bincount(flat.topic[flat.rep_part[chosen]], minlength=len(demands))
    staying: list[list[int]] = [[] for _ in flat.rf]
    for p, i in zip(flat.rep_part[chosen].tolist(), flat.rep_pos[chosen].tolist(), strict=True):
        staying[p].append(layout.brokers[i])
    keeps: list[dict[int, frozenset[int]]] = [{} for _ in demands]
    first = np.cumsum([0, *(len(d.layouts) for d in demands)]).tolist()
    for p, t in enumerate(flat.topic.tolist()):
        keeps[t][p - first[t]] = frozenset(staying[p])
    return Balance([tuple(q) for q in quotas.tolist()], kept.tolist(), keeps)
