"""The balance program as a min-cost flow, when it is one (:mod:`ferry.plan.balance.program.integer_program`).

In a plain rebalance every column of the program is an extra ``x[t, b]``, and every row bounds a
sum of extras: a topic's (exactly its extras), a rack's share of one topic's, a broker's. That is
a transportation problem with a nested (topic, rack) side, and it is a network:

    topic t --[rack's bounds]--> (t, rack) --[x[t, b]: capacity 1]--> broker b --[band]--> sink

with each topic supplying its extras, and OR-Tools' min-cost-flow solver (cost scaling) solves it:
the balance stage of `benchmarks/pipeline_scale.py` on 100k partitions (1,000 topics x 200 brokers),
which HiGHS's LP dominated, fell from 10 s to about 1 s, and the 10,000-topic case, where HiGHS did
not come back, takes 10 s. The optimum is integral, as every network's is.

Costs must be integers: a kept replica is worth ``M``, more than all size terms together, and a
column's size term is its bytes on a scale of ``QUANTA`` per biggest replica, so among equally many
kept replicas the bigger ones stay (sizes closer than one quantum tie).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ferry.plan.balance.solvers.flow_parts import COST_RANGE, INFEASIBLE, min_cost_flow, with_lows
from ferry.plan.balance.solvers.incidence import row_of
from ferry.plan.balance.solvers.slots import KEPT, PAIR, Slots, wire
from ferry.plan.consecutive import all_distinct

if TYPE_CHECKING:
    # Only the driver solves; the Spark workers import this module but must not pay for scipy.
    from scipy.sparse import csr_array

TOPIC, RACK, BROKER, POOL, OTHER = "topic", "rack", "broker", "pool", "other"
"""Kinds of the program's rows: a topic's extras, the part of them in one rack, a broker's extras,
a rack's pool (extras pooled over brokers idle for their topic, ``+1``, passed on to the
rack's brokers, ``-1``: what comes in goes out), anything else; and :data:`KEPT` and :data:`PAIR`,
what a holder keeps and what a pinned partition keeps in one rack
(:mod:`ferry.plan.balance.solvers.slots`)."""
NETWORK = (TOPIC, RACK, BROKER, POOL, KEPT, PAIR)

QUANTA = 1 << 20
"""Size resolution of the tie-break: steps per biggest replica."""
_COST_LIMIT = 1 << 58
"""What the largest cost times the node count stays under. The solver scales costs by the node
count in 64 bits, and then its node potentials fall from zero by multiples of the largest scaled
cost, which must stay inside them too: a 1M-partition skewed start's flow, its largest cost times
its nodes just under 2^62, was refused (after the max-flow check that comes first, over a second
each time) and solved at a sixteenth of that. The headroom costs only size resolution (the byte
tie-break's steps per biggest replica), never a kept replica."""


class Unsolved:
    """The flow solver could not answer (cost range); the caller solves the program otherwise."""


class _CostRange:
    """The flow solver found the costs' range too wide for its 64 bits."""


UNSOLVED = Unsolved()


@dataclass(frozen=True, slots=True)
class Arcs:
    """Arcs with lower bounds, before the bounds are folded into the node supplies."""

    tails: np.ndarray
    heads: np.ndarray
    lows: np.ndarray
    highs: np.ndarray


@dataclass(slots=True)
class Transport:
    """A program whose rows are all topic, rack and broker rows over extras (:meth:`of`)."""

    columns: int
    column_tail: np.ndarray
    """Per column: its topic's node, or its (topic, rack) node."""
    column_head: np.ndarray
    """Per column: its broker's node, or the sink."""
    column_cap: np.ndarray
    supply: np.ndarray
    """Per node; the sink, last, takes what the others supply."""
    inner: Arcs
    """Topic to (topic, rack), broker to sink, and the slots' arcs that are no column."""
    feasible: bool = True
    circling: int = 0
    """Most flow on arcs circling back to where it came from (:mod:`ferry.plan.balance.solvers.slots`)."""
    slotted: bool = False
    """Whether the network has holder nodes (:mod:`ferry.plan.balance.solvers.slots`)."""

    @classmethod
    def of(
        cls,
        given: csr_array | list[csr_array],
        kinds: list[str],
        lows: np.ndarray,
        highs: np.ndarray,
        upper: np.ndarray,
        groups: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> Transport | None:
        """The network of the program (``given``: its matrix, or a list of it alone, taken out and let
        go once read), or ``None`` if it is not one. ``groups``: the (topic, rack) group of each holder
        and pair row (:class:`~ferry.plan.balance.solvers.slots.Slots`)."""
        matrix = given.pop() if isinstance(given, list) else given
        if matrix.shape[1] == 0 or any(k not in NETWORK for k in kinds):
            return None
        if not np.all(upper == np.rint(upper)):
            return None
        kind = np.array(kinds)
        none = np.zeros(0, dtype=np.int64)
        slots = Slots.of(matrix, kind, (lows, highs), groups or (none, none))
        if slots is None:
            return None
        found = _shape(matrix, kind, lows, highs, upper, slots.kept)
        if found is None:
            return None
        topics, brokers = np.flatnonzero(kind == TOPIC), np.flatnonzero(kind == BROKER)
        pools = np.flatnonzero(kind == POOL)
        shape = matrix.shape
        del matrix  # handed over in a list: the network's arrays are made without it
        return cls._build(shape, (topics, brokers, pools), *found, slots, (lows, highs, upper))

    @classmethod
    def _build(
        cls,
        shape: tuple[int, int],
        rows: tuple[np.ndarray, np.ndarray, np.ndarray],
        racks: _Racks,
        ends: _Ends,
        slots: Slots,
        bounds: tuple[np.ndarray, np.ndarray, np.ndarray],
    ) -> Transport | None:
        topic_rows, broker_rows, pool_rows = rows
        lows, highs, upper = bounds
        n_rows = shape[0]
        up = np.full(n_rows, -1, dtype=np.int64)
        up[racks.rows] = racks.topics
        wired = wire(slots, (ends.tail, ends.head), upper, up)
        if wired is None:
            return None
        # Node ids: every row keeps its own index (topic, broker and merged rack rows), then the
        # slots' nodes of their own, the sink last.
        sink = n_rows + wired.fresh
        tail = wired.tail
        head = np.where(wired.head >= 0, wired.head, sink)
        cap = upper.astype(np.int64)
        supply = np.zeros(sink + 1, dtype=np.int64)
        supply[topic_rows] = np.rint(highs[topic_rows]).astype(np.int64)
        # What comes in less what goes out is the pool row's bound: 0, or what columns held outside
        # the program pass on (:mod:`ferry.plan.balance.program.held`), which enters at the pool.
        supply[pool_rows] = -np.rint(lows[pool_rows]).astype(np.int64)
        supply[:sink] += wired.supply
        room = np.bincount(head, weights=cap, minlength=sink + 1)
        b_lo = np.maximum(np.ceil(lows[broker_rows]), 0)
        b_hi = np.minimum(np.floor(highs[broker_rows]), room[broker_rows])
        shift = wired.shift[racks.rows]
        extra_tails, extra_heads, extra_caps = wired.arcs
        arcs = Arcs(
            np.concatenate([racks.topics, broker_rows, extra_tails]),
            np.concatenate([racks.rows, np.full(len(broker_rows), sink), extra_heads]),
            np.concatenate([racks.lows + shift, b_lo, np.zeros(len(extra_tails))]).astype(np.int64),
            np.concatenate([racks.highs + shift, b_hi, extra_caps]).astype(np.int64),
        )
        feasible = racks.feasible and bool(np.all(arcs.lows <= arcs.highs))
        slotted = bool(len(slots.rows) or len(slots.pairs))
        return cls(shape[1], tail, head, cap, supply, arcs, feasible, wired.circling, slotted)

    def solve(
        self, gain: np.ndarray, size: np.ndarray, fines: np.ndarray | None = None
    ) -> np.ndarray | Unsolved | None:
        """Per column its value at an optimum; ``None`` if no flow meets the bounds. ``fines``: per
        column, penalty units per unit of flow (at most two, each half a biggest replica's size term).
        Where the solver finds the costs' range too wide (it checks more strictly than :func:`_costs`
        bounds them: a 500k-partition skewed start's program), sizes are made coarser until it
        does not."""
        if not self.feasible:
            return None
        fined = np.zeros(self.columns, dtype=np.int64) if fines is None else fines
        # A unit of flow crosses at most two columns with a size term or a fine (a kept replica and
        # its holder's extra), one where there are no holder nodes.
        crossed = (2 if self.slotted else 1) * int(self.supply[self.supply > 0].sum()) + self.circling
        limit = _COST_LIMIT
        while True:
            costs = _costs(gain, size, fined, crossed, len(self.supply), limit)
            if costs is None:
                return UNSOLVED
            found = self._solved(costs)
            if not isinstance(found, _CostRange):
                return found
            # The solver's own check of the cost range is stricter than ours: coarser sizes.
            limit //= 16

    def _solved(self, costs: np.ndarray) -> np.ndarray | Unsolved | _CostRange | None:
        """The flows at ``costs`` (per column), as :meth:`solve` gives them, or that the solver found
        the costs' range too wide."""
        # The arcs go to with_lows alone: their lower bounds and capacities are let go once folded.
        network = with_lows(
            (
                np.concatenate([self.column_tail, self.inner.tails]),
                np.concatenate([self.column_head, self.inner.heads]),
                np.concatenate([np.zeros(self.columns, dtype=np.int64), self.inner.lows]),
                np.concatenate([self.column_cap, self.inner.highs]),
                np.concatenate([costs, np.zeros(len(self.inner.tails), dtype=np.int64)]),
            ),
            self.supply,
        )
        status, flows = min_cost_flow(network)
        if status == INFEASIBLE:
            return None
        if status == COST_RANGE:
            return _CostRange()
        if flows is None:
            return UNSOLVED
        values: np.ndarray = flows[: self.columns].astype(np.float64)
        return values


@dataclass(frozen=True, slots=True)
class _Racks:
    """Rack rows merged by column set: per column its rack node (-1: none), per rack node its row,
    topic node and bounds."""

    rack_of: np.ndarray
    rows: np.ndarray
    topics: np.ndarray
    lows: np.ndarray
    highs: np.ndarray
    feasible: bool


def _shape(
    matrix: csr_array,
    kind: np.ndarray,
    lows: np.ndarray,
    highs: np.ndarray,
    upper: np.ndarray,
    kept: np.ndarray,
) -> tuple[_Racks, _Ends] | None:
    """The merged rack rows and every column's arc ends but those of the slots (``kept``: the
    columns of kept replicas), or ``None`` if the rows are no network."""
    pools = _Pools.of(matrix, np.flatnonzero(kind == POOL), lows, highs)
    signed = np.repeat((kind == POOL) | (kind == KEPT), np.diff(matrix.indptr))
    if pools is None or not np.all((matrix.data == 1.0) | signed):
        return None
    topic_of = _owner(matrix, kind == TOPIC, required=~pools.outflow & ~kept)
    broker_of = _owner(matrix, kind == BROKER, required=pools.outflow)
    topic_rows = np.flatnonzero(kind == TOPIC)
    if (
        topic_of is None
        or broker_of is None
        or np.any(broker_of[pools.into >= 0] >= 0)
        or np.any(topic_of[pools.outflow] >= 0)
        or np.any(kept & ((topic_of >= 0) | (broker_of >= 0) | (pools.into >= 0) | pools.outflow))
        or not np.all(lows[topic_rows] == highs[topic_rows])
    ):
        return None
    racks = _racks(matrix, np.flatnonzero(kind == RACK), (lows, highs, upper), topic_of)
    if racks is None or np.any(kept & (racks.rack_of >= 0)):
        return None
    tail = np.where(pools.outflow, pools.out_of, np.where(racks.rack_of >= 0, racks.rack_of, topic_of))
    return racks, _Ends(tail, np.where(pools.into >= 0, pools.into, broker_of))


@dataclass(frozen=True, slots=True)
class _Ends:
    """Per column, the node its arc leaves (a topic, a (topic, rack) or a pool row) and the node it
    enters (a broker or pool row; -1: the sink)."""

    tail: np.ndarray
    head: np.ndarray


@dataclass(frozen=True, slots=True)
class _Pools:
    """Per column: the pool row it enters (``+1`` there; -1: none), whether it leaves one (``-1``
    there) and which."""

    into: np.ndarray
    outflow: np.ndarray
    out_of: np.ndarray

    @classmethod
    def of(cls, matrix: csr_array, rows: np.ndarray, lows: np.ndarray, highs: np.ndarray) -> _Pools | None:
        """``None`` unless every pool row is an equation over whole units (0 where nothing is held
        outside the program) and a column is in at most one."""
        n = matrix.shape[1]
        into, out_of = np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
        if len(rows) == 0:
            return cls(into, np.zeros(n, dtype=bool), out_of)
        part = matrix[rows].tocsc()
        counts = np.diff(part.indptr)
        if np.any(counts > 1) or not _whole_equations(lows[rows], highs[rows]):
            return None
        present = np.flatnonzero(counts == 1)
        signs, owners = part.data, rows[part.indices]
        if not np.all(np.abs(signs) == 1.0):
            return None
        into[present[signs > 0]] = owners[signs > 0]
        out_of[present[signs < 0]] = owners[signs < 0]
        return cls(into, out_of >= 0, out_of)


def _whole_equations(lows: np.ndarray, highs: np.ndarray) -> bool:
    """Whether every row is an equation (``lows == highs``) on a whole number."""
    return bool(np.all(lows == highs) and np.all(np.isfinite(lows)) and np.all(lows == np.rint(lows)))


def _owner(matrix: csr_array, chosen: np.ndarray, *, required: np.ndarray) -> np.ndarray | None:
    """Per column, the one chosen row it appears in (-1: none); ``None`` if one appears in two, or
    in none where ``required``."""
    owner = row_of(matrix, np.flatnonzero(chosen))
    if owner is None or np.any(required & (owner < 0)):
        return None
    return owner


def _racks(
    matrix: csr_array,
    rows: np.ndarray,
    limits: tuple[np.ndarray, np.ndarray, np.ndarray],
    topic_of: np.ndarray,
) -> _Racks | None:
    """Merge rack rows over the same columns (bounds intersect); ``None`` if two overlap otherwise
    or one spans topics. ``limits``: the rows' lows and highs, the columns' upper bounds.

    In bulk, not row by row: a program has a rack row per topic and rack, a million of them with
    100,000 topics. Rows with the same smallest column form a group, whose first row is its node;
    they overlap unless every row of a group has its node's columns and no column is in two groups.
    """
    lows, highs, upper = limits
    lengths = matrix.indptr[rows + 1] - matrix.indptr[rows]
    empty = rows[lengths == 0]
    feasible = bool(np.all((lows[empty] <= 0) & (highs[empty] >= 0)))
    rows, lengths = rows[lengths > 0], lengths[lengths > 0]
    rack_of = np.full(matrix.shape[1], -1, dtype=np.int64)
    offsets = np.r_[0, np.cumsum(lengths)]
    owner = np.repeat(np.arange(len(rows)), lengths)
    within = np.arange(len(owner)) - offsets[owner]
    cols = matrix.indices[matrix.indptr[rows][owner] + within].astype(np.int64)
    cols = cols[np.lexsort((cols, owner))]  # each row's columns, sorted
    smallest = cols[offsets[:-1]]
    by_key = np.lexsort((np.arange(len(rows)), smallest))
    starts = np.r_[True, smallest[by_key][1:] != smallest[by_key][:-1]][: len(rows)]
    node_of = np.empty(len(rows), dtype=np.int64)
    node_of[by_key] = by_key[starts][np.cumsum(starts) - 1]
    if np.any(lengths != lengths[node_of]) or np.any(cols != cols[offsets[node_of][owner] + within]):
        return None
    nodes = np.flatnonzero(node_of == np.arange(len(rows)))
    taken = cols[(node_of == np.arange(len(rows)))[owner]]
    if not all_distinct(taken) or np.any(topic_of[cols] != topic_of[smallest][owner]):
        return None
    node_rows = rows[nodes]
    rack_of[taken] = np.repeat(node_rows, lengths[nodes])
    room = np.bincount(owner, weights=upper[cols], minlength=len(rows))[nodes]
    lo_all, hi_all = np.full(len(rows), -np.inf), np.full(len(rows), np.inf)
    np.maximum.at(lo_all, node_of, lows[rows])
    np.minimum.at(hi_all, node_of, highs[rows])
    lo = np.ceil(np.maximum(0.0, lo_all[nodes]))
    hi = np.floor(np.minimum(room, hi_all[nodes]))
    first = matrix.indices[matrix.indptr[node_rows]].astype(np.int64)
    return _Racks(rack_of, node_rows.astype(np.int64), topic_of[first], lo, hi, feasible)


def _costs(
    gain: np.ndarray, size: np.ndarray, fines: np.ndarray, crossed: int, nodes: int, limit: int = _COST_LIMIT
) -> np.ndarray | None:
    """Integer costs (negative: the solver minimises) ranking kept replicas first, then bytes and
    fines (at most two per unit, half a quantum each). ``crossed`` bounds the flow over columns with a
    size term or a fine, so together they stay below ``quanta * crossed``, less than one kept
    replica. The quantum is :data:`QUANTA` steps per biggest replica, fewer where the solver's
    64 bits need it, by ``limit`` (sizes then tie more often; the count of kept replicas never
    changes)."""
    top = int(gain.max(initial=0))
    quantum = QUANTA
    while quantum > 1 and top * quantum * (crossed + 1) * (nodes + 1) >= limit:
        quantum //= 2
    worth = quantum * (crossed + 1)
    if top * worth * (nodes + 1) >= limit:
        return None
    quanta = size_steps(size, quantum)
    costs: np.ndarray = -(gain * worth + quanta) + fines * (quantum // 2)
    return costs


def size_steps(size: np.ndarray, quantum: int = QUANTA) -> np.ndarray:
    """Each column's bytes in steps of the biggest replica's ``1 / quantum``: the size term of the
    tie-break (:func:`_costs`)."""
    biggest = int(size.max(initial=0)) or 1
    steps: np.ndarray = np.rint(size / biggest * quantum).astype(np.int64)
    return steps
