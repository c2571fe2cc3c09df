"""Solve a chunk of topics again, exactly, each broker's total over the chunk held (see
:mod:`ferry.plan.balance.repair.per_partition`).

Columns, per topic ``t`` of the chunk:

* ``x[t, b]`` in {0, 1}: broker ``b`` takes one of the topic's extras (as in
  :mod:`ferry.plan.balance.program.integer_program`);
* ``k[p, b]`` in {0, 1}: partition ``p`` keeps its replica on ``b``;
* ``u[p, r]``: new replicas of partition ``p`` in rack ``r``.

Rows: the topic hands out exactly its extras, each rack within its (min, max); every partition ends
with its replication factor, each rack within its bounds; a broker keeps at most its quota
(``base + x``); a rack receives exactly what its brokers' quotas leave after the kept replicas; and
per broker ``sum_t x[t, b]`` is what the chunk gave it before, so the broker rows of the whole
program, and every topic outside the chunk, stay as they were. The objective is the one of the
program: replicas kept, then their bytes. A row that says no more than its columns' bounds (a
partition's row for a rack where it keeps nothing and owes nothing, a row with no columns that any
value meets) is left out: HiGHS solves the relaxation without its presolve
(:attr:`ferry.plan.balance.solvers.parts.Approach.presolve`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from ferry.plan.balance.outcome import Balance
from ferry.plan.balance.program.columns import Columns
from ferry.plan.balance.solvers.transport import OTHER
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout

CHUNK = 20
"""Short topics solved together (with as many partners): enough to trade extras among them, few
enough for HiGHS to branch fast. `benchmarks/exact_pass.py --case "2,000 topics" --chunks 10,20,50`:
all three reach the bound (180 topics short), in 1.0, 1.3 and 1.9 CPU s (2026-11-25); on 20,000
such topics chunks of 20 left fewer replicas short than chunks of 10."""


@dataclass(frozen=True)
class _Flat:
    """The chunk's topics flat, built in bulk (a chunk of 40 topics has some 13,000 columns and
    4,000 rows: a Python call per row and term took a tenth of each chunk's time): per extra column
    its topic and broker position; per partition its topic, replication factor and size; per kept
    replica its partition and position; per partition and rack the bounds of its replicas there."""

    x_topic: np.ndarray
    x_pos: np.ndarray
    p_topic: np.ndarray
    p_rf: np.ndarray
    p_size: np.ndarray
    k_part: np.ndarray
    k_pos: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    @classmethod
    def of(cls, layout: RackLayout, demands: Sequence[TopicDemand]) -> _Flat:
        extra = [d.quota.extra_positions(layout) for d in demands]
        rf = np.array([r for d in demands for r in d.layouts.rf], dtype=np.int64)
        counts = [len(d.layouts) for d in demands]
        held = np.array([b - a for d in demands for a, b in pairwise(d.layouts.starts)], dtype=np.int64)
        bounds = {r: np.array(layout.bounds(r), dtype=np.int64) for r in set(rf.tolist())}
        racks = len(layout.members)
        lo_hi = np.array([bounds[r] for r in rf.tolist()], dtype=np.int64).reshape(len(rf), racks, 2)
        return cls(
            x_topic=np.repeat(np.arange(len(demands)), [len(e) for e in extra]),
            x_pos=np.array([i for e in extra for i in e], dtype=np.int64),
            p_topic=np.repeat(np.arange(len(demands)), counts),
            p_rf=rf,
            p_size=np.array([s for d in demands for s in d.layouts.size], dtype=np.int64),
            k_part=np.repeat(np.arange(len(rf)), held),
            k_pos=np.array([i for d in demands for i in d.layouts.replicas], dtype=np.int64),
            lo=lo_hi[:, :, 0],
            hi=lo_hi[:, :, 1],
        )


@dataclass(frozen=True)
class _Columns:
    """Where the chunk's columns start: extras, then kept replicas, then new replicas per
    (partition, rack) where the rack may take one (``u_part``, ``u_rack``)."""

    x: int
    k: int
    u: int
    u_part: np.ndarray
    u_rack: np.ndarray


def rejoin(
    layout: RackLayout, demands: Sequence[TopicDemand], quotas: Sequence[Sequence[int]]
) -> Balance | None:
    """The chunk ``demands`` (with their current ``quotas``) solved again; ``None`` if the solver
    finds nothing. ``kept`` of the answer counts the replicas its keeps keep."""
    program = Columns()
    flat = _Flat.of(layout, demands)
    cols = _columns(program, flat)
    total = np.sum(np.array(quotas, dtype=np.int64), axis=0)
    base = np.array([d.quota.base for d in demands], dtype=np.int64).reshape(len(demands), -1)
    _extras_rows(program, layout, demands, flat, cols, total - base.sum(axis=0))
    _partition_rows(program, layout, flat, cols)
    _topic_rows(program, layout, flat, cols, base)
    biggest = max((max(d.layouts.size, default=0) for d in demands), default=0) or 1
    # Mostly integral already: HiGHS's branching only where it is not. Presolve would take out
    # little here and cost a third of the relaxation's time (docs/benchmarks.md).
    scale = 0.5 / (biggest * (len(program.upper) + 1))
    solution = program.optimum(scale, relax_first=True, presolve=False)
    if solution is None:
        return None
    return _read(layout, demands, flat, cols, solution)


def _columns(program: Columns, flat: _Flat) -> _Columns:
    n_x, n_k = len(flat.x_topic), len(flat.k_part)
    u_part, u_rack = np.nonzero(flat.hi > 0)
    x = program.add_columns(np.ones(n_x), np.zeros(n_x, dtype=np.int64), np.zeros(n_x, dtype=np.int64))
    k = program.add_columns(np.ones(n_k), np.ones(n_k, dtype=np.int64), flat.p_size[flat.k_part])
    u = program.add_columns(
        flat.hi[u_part, u_rack].astype(np.float64),
        np.zeros(len(u_part), dtype=np.int64),
        np.zeros(len(u_part), dtype=np.int64),
    )
    return _Columns(x, k, u, u_part, u_rack)


def _extras_rows(
    program: Columns,
    layout: RackLayout,
    demands: Sequence[TopicDemand],
    flat: _Flat,
    cols: _Columns,
    given: np.ndarray,
) -> None:
    """Each topic hands out its extras, each rack within its (min, max), and each broker takes the
    ``given`` extras of the chunk as before."""
    racks, n = len(layout.members), len(demands)
    rack_at = np.asarray(layout.rack_at, dtype=np.int64)
    x_cols = cols.x + np.arange(len(flat.x_topic))
    extras = np.array([d.quota.extras for d in demands], dtype=np.float64)
    _family(program, flat.x_topic, x_cols, 1.0, (extras, extras), np.ones(n, dtype=bool))
    rack_bounds = np.array([d.quota.rack_extras for d in demands], dtype=np.float64).reshape(n * racks, 2)
    keys = flat.x_topic * racks + rack_at[flat.x_pos]
    counts = np.bincount(keys, minlength=n * racks)
    # A row that at most its columns' count bounds from above only says what their bounds say.
    posed = (rack_bounds[:, 0] > 0) | ((counts > 0) & (rack_bounds[:, 1] < counts))
    _family(program, keys, x_cols, 1.0, (rack_bounds[:, 0], rack_bounds[:, 1]), posed)
    terms = np.bincount(flat.x_pos, minlength=len(given))
    bound = given.astype(np.float64)
    _family(program, flat.x_pos, x_cols, 1.0, (bound, bound), (terms > 0) | (given != 0))


def _partition_rows(program: Columns, layout: RackLayout, flat: _Flat, cols: _Columns) -> None:
    """Every partition ends with its replication factor, each rack within its bounds."""
    racks, parts = len(layout.members), len(flat.p_rf)
    rack_at = np.asarray(layout.rack_at, dtype=np.int64)
    k_cols = cols.k + np.arange(len(flat.k_part))
    u_cols = cols.u + np.arange(len(cols.u_part))
    keys = np.concatenate([flat.k_part * racks + rack_at[flat.k_pos], cols.u_part * racks + cols.u_rack])
    kept_here = np.bincount(keys[: len(k_cols)], minlength=parts * racks)
    lo, hi = flat.lo.reshape(-1).astype(np.float64), flat.hi.reshape(-1).astype(np.float64)
    # Where the partition keeps nothing in the rack and owes it nothing, the row would say u <= hi,
    # the column's own bound.
    _family(program, keys, np.concatenate([k_cols, u_cols]), 1.0, (lo, hi), (kept_here > 0) | (lo > 0))
    rf = flat.p_rf.astype(np.float64)
    owner = np.concatenate([flat.k_part, cols.u_part])
    _family(program, owner, np.concatenate([k_cols, u_cols]), 1.0, (rf, rf), np.ones(parts, dtype=bool))


def _topic_rows(program: Columns, layout: RackLayout, flat: _Flat, cols: _Columns, base: np.ndarray) -> None:
    """A broker keeps at most its quota (``base + x``) of the topic; a rack receives exactly what its
    brokers' quotas leave after the kept replicas."""
    topics, brokers = base.shape
    racks = len(layout.members)
    rack_at = np.asarray(layout.rack_at, dtype=np.int64)
    k_cols = cols.k + np.arange(len(flat.k_part))
    x_cols = cols.x + np.arange(len(flat.x_topic))
    u_cols = cols.u + np.arange(len(cols.u_part))
    k_topic = flat.p_topic[flat.k_part]
    kept_keys = k_topic * brokers + flat.k_pos
    holds = np.bincount(kept_keys, minlength=topics * brokers) > 0
    flat_base = base.reshape(-1).astype(np.float64)
    _family(
        program,
        np.concatenate([kept_keys, flat.x_topic * brokers + flat.x_pos]),
        np.concatenate([k_cols, x_cols]),
        np.concatenate([np.ones(len(k_cols)), -np.ones(len(x_cols))]),
        (np.full(topics * brokers, -np.inf), flat_base),
        holds,
    )
    rack_base = base @ np.eye(racks)[rack_at]
    keys = np.concatenate(
        [
            flat.p_topic[cols.u_part] * racks + cols.u_rack,
            k_topic * racks + rack_at[flat.k_pos],
            flat.x_topic * racks + rack_at[flat.x_pos],
        ]
    )
    vals = np.concatenate([np.ones(len(u_cols) + len(k_cols)), -np.ones(len(x_cols))])
    terms = np.bincount(keys, minlength=topics * racks)
    expected = rack_base.reshape(-1)
    posed = (terms > 0) | (expected != 0)
    _family(program, keys, np.concatenate([u_cols, k_cols, x_cols]), vals, (expected, expected), posed)


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
    layout: RackLayout, demands: Sequence[TopicDemand], flat: _Flat, cols: _Columns, solution: np.ndarray
) -> Balance:
    x = np.rint(solution[cols.x : cols.x + len(flat.x_topic)]).astype(np.int64)
    chosen = solution[cols.k : cols.k + len(flat.k_part)] > 0.5
    brokers = len(layout.brokers)
    quotas = np.array([d.quota.base for d in demands], dtype=np.int64).reshape(len(demands), brokers)
    np.add.at(quotas, (flat.x_topic, flat.x_pos), x)
    kept = np.bincount(flat.p_topic[flat.k_part[chosen]], minlength=len(demands))
    staying: list[list[int]] = [[] for _ in flat.p_rf]
    for p, i in zip(flat.k_part[chosen].tolist(), flat.k_pos[chosen].tolist(), strict=True):
        staying[p].append(layout.brokers[i])
    keeps: list[dict[int, frozenset[int]]] = [{} for _ in demands]
    first = np.cumsum([0, *(len(d.layouts) for d in demands)]).tolist()
    for p, t in enumerate(flat.p_topic.tolist()):
        keeps[t][p - first[t]] = frozenset(staying[p])
    return Balance([tuple(q) for q in quotas.tolist()], kept.tolist(), keeps)
