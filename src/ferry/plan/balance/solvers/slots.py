"""Kept replicas in the balance program's network (:mod:`ferry.plan.balance.solvers.transport`).

Two more kinds of rows are node rows of a network:

* a holder's row (:data:`KEPT`): ``f[t, b] + sum_p k[p, b] - x[t, b] <= base[t, b]``, what stays
  on broker ``b`` needs a slot there, its base quota or an extra;
* a pinned partition's rack row (:data:`PAIR`): ``sum_{b in rack} k[p, b] <= hi``.

Each holder row becomes a node ``K`` that takes ``base`` slots for itself and passes ``x`` on to
the broker; its slots are filled by kept replicas or by new ones, all sent by the node its extras
leave from (the topic's (topic, rack) node, or the topic's), the *parent*::

    parent --[f, new replicas]--> K --[x]--> broker
    parent --[hi]--> P --[k]--> K

The parent then passes on ``base`` more than the extras: its bounds and its topic's supply grow by
the bases of its holders. A ``k`` on a broker without a holder row (one holding no more than its
base: what stays there needs no extra) is an arc from ``P`` back to the parent, a kept replica
circling. The rows of one (topic, rack) share a parent; each names its (topic, rack) *group*
(``topic * racks + rack``), so holders whose extras go nowhere (none in their rack) find theirs, a
node of the group's own.

A skewed start makes most topics' programs such rows (partitions with two replicas in one rack);
HiGHS took over a minute on their 100,000 partitions, the flow seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ferry.plan.balance.solvers.incidence import row_of
from ferry.plan.consecutive import all_distinct, distinct

if TYPE_CHECKING:
    from scipy.sparse import csr_array

KEPT, PAIR = "kept", "pair"


@dataclass(frozen=True, slots=True)
class Slots:
    """Which columns the holder and pair rows hold (:meth:`of`)."""

    holder: np.ndarray
    """Per column: the holder row it fills with ``+1`` (-1: none)."""
    extra_of: np.ndarray
    """Per holder row (in ``rows``' order): its ``x`` column (-1: none)."""
    rows: np.ndarray
    """The holder rows."""
    pair: np.ndarray
    """Per column: its pair row (-1: none)."""
    pairs: np.ndarray
    """The pair rows."""
    group: np.ndarray
    """Per row of the program: its group (-1: none)."""
    base: np.ndarray
    """Per holder row: its bound, the holder's base quota."""
    pair_highs: np.ndarray
    """Per pair row: its bound."""

    @property
    def kept(self) -> np.ndarray:
        """Per column: a kept replica's (in a holder or a pair row), in no other row of a network."""
        out: np.ndarray = (self.holder >= 0) | (self.pair >= 0)
        return out

    @classmethod
    def of(
        cls,
        matrix: csr_array,
        kind: np.ndarray,
        bounds: tuple[np.ndarray, np.ndarray],
        groups: tuple[np.ndarray, np.ndarray],
    ) -> Slots | None:
        """The rows' slots, or ``None`` where they are not as above. ``bounds``: the rows' lows and
        highs; ``groups``: rows and their groups (those of every holder and pair row at least)."""
        lows, highs = bounds
        group = np.full(matrix.shape[0], -1, dtype=np.int64)
        group[groups[0]] = groups[1]
        rows, pairs = np.flatnonzero(kind == KEPT), np.flatnonzero(kind == PAIR)
        marked = np.concatenate([rows, pairs])
        if np.any(group[marked] < 0) or np.any(np.isfinite(lows[marked])) or np.any(highs[marked] < 0):
            return None
        if not np.all(highs[rows] == np.rint(highs[rows])):
            return None
        held = _holders(matrix, rows)
        pair = _pairs(matrix, pairs)
        if held is None or pair is None:
            return None
        holder, extra_of = held
        extras = extra_of[extra_of >= 0]
        mixed = (pair >= 0) & (holder >= 0)
        if np.any(holder[extras] >= 0) or np.any(pair[extras] >= 0):
            return None
        if np.any(group[pair[mixed]] != group[holder[mixed]]):
            return None
        return cls(holder, extra_of, rows, pair, pairs, group, highs[rows], highs[pairs])


def _holders(matrix: csr_array, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Per column the holder row it fills (-1: none), and per holder row its ``x`` column (-1:
    none); ``None`` unless each column fills at most one, and each row has at most one ``x``."""
    n = matrix.shape[1]
    holder, extra_of = np.full(n, -1, dtype=np.int64), np.full(len(rows), -1, dtype=np.int64)
    part = matrix[rows].tocsc()
    owners = part.indices
    cols = np.repeat(np.arange(n), np.diff(part.indptr))
    minus, plus = part.data == -1.0, part.data == 1.0
    once = all_distinct(cols[plus]) and all_distinct(cols[minus])
    if not np.all(minus | plus) or not once or not all_distinct(owners[minus]):
        return None
    holder[cols[plus]] = rows[owners[plus]]
    extra_of[owners[minus]] = cols[minus]
    return holder, extra_of


def _pairs(matrix: csr_array, pairs: np.ndarray) -> np.ndarray | None:
    """Per column its pair row (-1: none); ``None`` unless each is in at most one, with ``+1``."""
    if not np.all(matrix[pairs].data == 1.0):
        return None
    return row_of(matrix, pairs)


@dataclass(frozen=True, slots=True)
class Wired:
    """The slots as arcs: every column's ends, the arcs that are no column, and what the holders
    add to the supplies and bounds (:func:`wire`)."""

    tail: np.ndarray
    head: np.ndarray
    """Per column (-1: the sink)."""
    arcs: tuple[np.ndarray, np.ndarray, np.ndarray]
    """Tails, heads and capacities of the arcs that are no column: parents to holders (new
    replicas) and to pairs."""
    fresh: int
    """Nodes of groups without a parent, numbered after the program's rows."""
    supply: np.ndarray
    """Per node (rows, then the fresh ones): added to its supply."""
    shift: np.ndarray
    """Per node: added to both bounds of the arc into it (a (topic, rack) node's, from its topic)."""
    circling: int
    """Most flow circling back to parents (for the cost scale)."""


def wire(
    slots: Slots, ends: tuple[np.ndarray, np.ndarray], upper: np.ndarray, up: np.ndarray
) -> Wired | None:
    """Arcs for ``slots`` (module docstring), given the columns' ``ends`` without them: tails (the
    topic, (topic, rack) or pool node each leaves) and heads (-1: the sink). ``up``: per row, the
    topic node above it where it is a (topic, rack) node (-1: none). ``None`` where holders of one
    group leave different parents."""
    tail, head = ends[0].copy(), ends[1].copy()
    n_rows = len(up)
    rows, extra_of = slots.rows, slots.extra_of
    found = distinct(slots.group[np.concatenate([rows, slots.pairs])])
    at = np.searchsorted(found, slots.group)  # per row: its group's index (rows with one)
    with_x = extra_of >= 0
    lo = np.full(len(found), n_rows, dtype=np.int64)
    hi = np.full(len(found), -1, dtype=np.int64)
    np.minimum.at(lo, at[rows[with_x]], tail[extra_of[with_x]])
    np.maximum.at(hi, at[rows[with_x]], tail[extra_of[with_x]])
    if np.any((hi >= 0) & (lo != hi)):
        return None
    lacking = hi < 0
    hi[lacking] = n_rows + np.arange(int(lacking.sum()))
    parent = hi
    tail[extra_of[with_x]] = rows[with_x]
    kept = np.flatnonzero(slots.holder >= 0)
    paired = slots.pair[kept] >= 0
    tail[kept] = np.where(paired, slots.pair[kept], parent[at[slots.holder[kept]]])
    head[kept] = slots.holder[kept]
    back = np.flatnonzero((slots.pair >= 0) & (slots.holder < 0))
    tail[back] = slots.pair[back]
    head[back] = parent[at[slots.pair[back]]]
    base = np.rint(slots.base).astype(np.int64)
    slack = base + np.where(with_x, upper[np.maximum(extra_of, 0)], 0).astype(np.int64)
    arcs = (
        np.concatenate([parent[at[rows]], parent[at[slots.pairs]]]),
        np.concatenate([rows, slots.pairs]),
        np.concatenate([slack, np.floor(slots.pair_highs).astype(np.int64)]),
    )
    nodes = n_rows + int(lacking.sum())
    supply, shift = np.zeros(nodes, dtype=np.int64), np.zeros(nodes, dtype=np.int64)
    np.subtract.at(supply, rows, base)
    into = parent[at[rows]]
    under = np.r_[up, np.full(int(lacking.sum()), -1, dtype=np.int64)][into]
    np.add.at(shift, into[under >= 0], base[under >= 0])
    np.add.at(supply, np.where(under >= 0, under, into), base)
    return Wired(tail, head, arcs, int(lacking.sum()), supply, shift, int(upper[back].sum()))
