"""Solving the balance program (:mod:`ferry.plan.balance.program.integer_program`): min-cost flow when it is a
network, else HiGHS (:mod:`ferry.plan.balance.solvers.highs`), its linear relaxation first where that is
mostly integral."""

from __future__ import annotations

import hashlib
import threading
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from highspy import HighsBasis

from ferry.plan.balance.solvers import highs as solver
from ferry.plan.balance.solvers.network_program import fines_of, flow_optimum
from ferry.plan.balance.solvers.side_by_side import side_by_side
from ferry.plan.balance.solvers.transport import Unsolved

_ALL = slice(None)
_NO_PRESOLVE = {"presolve": "off"}
_INTEGRAL = 1e-9
"""How close to an integer every value of a relaxed optimum must be to count as integer. Rounding
then shifts the objective by under ``1e-9`` per column, far less than the one kept replica that
separates two counts, so the rounded vertex keeps the optimal count (HiGHS's vertices here are
exact: measured deviation 0.0)."""


@dataclass(frozen=True)
class Approach:
    """How HiGHS goes at a program (:func:`optimum`)."""

    relax_first: bool
    """Its linear relaxation first: where that vertex is integral, it is the optimum."""
    presolve: bool = True
    """Whether HiGHS presolves the relaxation. It pays on the balance program's large relaxations
    (with it off for every relaxation, "large: unequal 20/20/17" of `benchmarks/plan_quality.py`
    took 12.56 s against 7.88 s: docs/benchmarks.md); on the exact pass's chunks, built without a
    row that restates a bound (:mod:`ferry.plan.balance.repair.chunk_program`), it costs more than
    it takes out."""
    cutoff: float | None = None
    """An objective no wanted solution reaches (``None``: any optimum is wanted). HiGHS then prunes
    every branch whose bound is not under it and ends without a solution where that is all of them:
    a caller that needs a count of kept replicas learns at the root of the search that it cannot
    have it. It bounds the whole objective, so a program solved in parts goes without it."""


def sparse_rows(
    entries: tuple[array[int], array[int], array[float]], rows: int, columns: int, before: Any = None
) -> Any:
    """The rows' entries (row, column and value arrays, emptied here) as a sparse matrix of ``rows``
    rows and ``columns`` columns; ``before``: the first rows, already a matrix (of fewer columns,
    maybe), the entries' rows numbered after them."""
    # scipy loads in about a second; only the driver solves, so the Spark workers running the
    # per-topic passes (which import the program's module for its types) never pay for it, and the
    # solver part only loads when min-cost flow cannot answer (most rebalances never need it).
    from scipy.sparse import coo_array, vstack

    first = 0 if before is None else before.shape[0]
    at, cols = (np.frombuffer(part, dtype=np.int64) for part in entries[:2])
    vals = np.frombuffer(entries[2], dtype=np.float64)
    matrix = coo_array((vals, (at - first, cols)), shape=(rows - first, columns)).tocsr()
    del at, cols, vals  # views of ``entries``: released, so those can be emptied
    for part in entries:
        del part[:]
    if before is None:
        return matrix
    before.resize((first, columns))
    return vstack([before, matrix], format="csr")


def optimum(
    *,
    matrix: Any,
    lows: Sequence[float],
    highs: Sequence[float],
    kinds: Sequence[str],
    upper: Sequence[float],
    gain: Sequence[int],
    size: Sequence[int],
    scale: float,
    relax_first: bool,
    presolve: bool = True,
    penalty: Sequence[int] = (),
    implied: Sequence[int] = (),
    starts: Starts | None = None,
    groups: tuple[np.ndarray, np.ndarray] | None = None,
    cutoff: float | None = None,
) -> np.ndarray | None:
    """An optimal integer solution, or ``None`` when there is none (or none under ``cutoff``:
    :attr:`Approach.cutoff`).

    The program is given as its rows (``matrix``, sparse: :func:`sparse_rows`; each row's ``lows``
    and ``highs`` and :mod:`ferry.plan.balance.solvers.transport` kind), its columns' ``upper`` bounds, and
    the objective:
    ``gain`` kept replicas plus ``size`` bytes times ``scale``, less a penalty per unit of each
    ``penalty`` column (two where it is named twice), which breaks ties like the size term (below
    one kept replica in total).

    A program of extras alone (a plain rebalance) is a network, and so is one whose other rows are
    what holders and pinned partitions keep (``groups``: :mod:`ferry.plan.balance.solvers.slots`):
    min-cost flow solves it (:mod:`ferry.plan.balance.solvers.transport`), its ``implied`` rows that
    are no network's left out. Otherwise, without rack-room rows (``relax_first``), its
    linear relaxation mostly has an integer optimum already: that vertex is then an optimum of the
    integer program too, found in 3/4 of the time. Failing that (or with room rows, whose
    relaxations are fractional) the integer program is solved. HiGHS solves the program without
    its ``implied`` rows, part by part where it falls apart (:func:`_in_parts`); with ``starts``,
    each part from where an earlier solve of it ended (:class:`Starts`); ``presolve``:
    :attr:`Approach.presolve`.
    """
    flows = flow_optimum(matrix, lows, highs, kinds, upper, gain, size, penalty, implied, groups)
    if not isinstance(flows, Unsolved):
        return flows
    gains, sizes = np.array(gain, dtype=np.int64), np.array(size, dtype=np.int64)
    # Sizes stay below 0.5 in total (:func:`ferry.plan.balance.setting.size_scale`).
    costs = _Costs(-(gains + sizes * scale), fines_of(len(upper), penalty))
    return _without_implied(
        (matrix, np.array(lows), np.array(highs), np.array(upper), costs),
        implied,
        Approach(relax_first, presolve, cutoff),
        starts,
    )


def _without_implied(
    part: _Costed, implied: Sequence[int], approach: Approach, starts: Starts | None
) -> np.ndarray | None:
    """HiGHS's optimum of the program without its ``implied`` rows (:func:`_in_parts`)."""
    matrix, lows, highs, upper, costs = part
    if len(implied):
        kept = np.ones(len(lows), dtype=bool)
        kept[np.asarray(implied, dtype=np.int64)] = False
        matrix, lows, highs = matrix[kept], lows[kept], highs[kept]
    return _in_parts(matrix, lows, highs, upper, costs, approach=approach, starts=starts)


@dataclass(frozen=True)
class _Costs:
    """Per column: its cost without fines, and the fines each of its units costs (0, 1 or 2)."""

    plain: np.ndarray
    fines: np.ndarray

    def objective(self, upper: np.ndarray, cols: np.ndarray | slice = _ALL) -> np.ndarray:
        """The objective over ``cols`` (``upper``: their bounds): their fines share a quarter of a
        kept replica, so with the size terms (below half of one) they only break ties, and a part
        of the program solved alone does not depend on the others' fines."""
        fines = self.fines[cols]
        # Summed, not ``fines @ upper``: numpy hands a product of float arrays to OpenBLAS, whose
        # threads then spin for a while on every core, and on the exact pass's chunks (one such
        # product each, solved two at a time) that took the core of the chunk solved beside it.
        out: np.ndarray = self.plain[cols] + fines * (0.25 / (float((fines * upper).sum()) + 1.0))
        return out


PARTS_FROM = 20_000
"""Columns from which HiGHS solves a program, or a part of one, on its own (:func:`_in_parts`):
smaller ones are solved whole in well under a second, and the exact pass solves thousands of them."""


def _in_parts(
    matrix: Any,
    lows: np.ndarray,
    highs: np.ndarray,
    upper: np.ndarray,
    costs: _Costs,
    *,
    approach: Approach,
    starts: Starts | None,
) -> np.ndarray | None:
    """The optimum of each large connected part of the program (columns linked by rows) on its own,
    the small parts together.

    Under the strict rack rule with as many replicas as racks, every rack's share of every topic is
    fixed, and without its implied rows the program of a cluster whose start breaks the rack rule is
    one independent program per rack: HiGHS solves three of a third the size faster than one ("large:
    unequal 20/20/17" of `benchmarks/plan_quality.py`), and side by side where there are cores for
    it (:func:`_solve_parts`). A skewed start may fall apart into thousands
    of little parts instead, each a solver call of its own if alone: those are solved as one.
    """
    from scipy.sparse.csgraph import connected_components

    rows, columns = matrix.shape
    whole = (np.arange(columns), np.arange(rows))
    if columns < PARTS_FROM:
        return _solve_whole(whole, (matrix, lows, highs, upper, costs.objective(upper)), approach, starts)
    count, labels = connected_components(_links(matrix), directed=False)
    large = np.bincount(labels[rows:], minlength=count) >= PARTS_FROM
    group = np.where(large, np.arange(count), count)  # the small parts: one group, ``count``
    row_group, col_group = group[labels[:rows]], group[labels[rows:]]
    groups = np.union1d(row_group, col_group)
    if len(groups) == 1:
        return _solve_whole(whole, (matrix, lows, highs, upper, costs.objective(upper)), approach, starts)
    solution = np.where(costs.plain < 0, upper, 0.0)  # a column in no row: the bound that pays
    parts: list[tuple[_Where, _Part]] = []
    for g in groups.tolist():
        mine, cols = np.flatnonzero(row_group == g), np.flatnonzero(col_group == g)
        if not len(mine):
            continue
        if not len(cols):  # rows without terms
            if np.any(lows[mine] > 0) or np.any(highs[mine] < 0):
                return None
            continue
        sub = matrix[mine][:, cols]
        part = (sub, lows[mine], highs[mine], upper[cols], costs.objective(upper[cols], cols))
        parts.append(((cols, mine), part))
    each = replace(approach, cutoff=None)  # a part's objective is not the whole one
    for ((cols, _), _), found in zip(parts, _solve_parts(parts, each, starts), strict=True):
        if found is None:
            return None
        solution[cols] = found
    return solution


def _links(matrix: Any) -> Any:
    """The graph whose nodes are ``matrix``'s rows, then its columns, linked where it has an entry:
    ``matrix`` (CSR) shifted right, one way only (the parts ignore directions)."""
    from scipy.sparse import csr_array

    rows, columns = matrix.shape
    starts = np.concatenate([matrix.indptr, np.full(columns, matrix.indptr[-1], dtype=matrix.indptr.dtype)])
    ones = np.ones(len(matrix.indices), dtype=np.int8)
    return csr_array((ones, matrix.indices + rows, starts), shape=(rows + columns, rows + columns))


_Costed = tuple[Any, np.ndarray, np.ndarray, np.ndarray, "_Costs"]
"""A program for HiGHS: its matrix, row bounds, column bounds and costs."""
_Part = tuple[Any, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""A part of a program: its matrix, row bounds, column bounds and objective."""
_Where = tuple[np.ndarray, np.ndarray]
"""A part's columns and rows in its program."""
_Found = tuple[np.ndarray | None, HighsBasis | None]
"""A part's optimum (``None``: none), and the basis HiGHS ended on where it solved a relaxation."""


class Starts:
    """Where HiGHS ended on each part of a program, to solve the program again from there once
    columns and rows are appended to it (:meth:`ferry.plan.balance.program.columns.Columns.optimum` with
    ``keep``).

    A part of the longer program holds an earlier part's columns and rows first, the appended ones
    after them: the earlier basis is where it starts (:class:`ferry.plan.balance.solvers.highs.Start`). A
    start only decides how many iterations the simplex takes, never which optimum it proves."""

    def __init__(self) -> None:
        self._ends: list[tuple[_Where, HighsBasis]] = []

    def basis(self, where: _Where) -> solver.Start | None:
        """Where to start the part at ``where``, if an earlier part leads it."""
        cols, rows = where
        for (old_cols, old_rows), basis in self._ends:
            if _leads(old_cols, cols) and _leads(old_rows, rows):
                return solver.Start(basis, len(old_cols), len(old_rows))
        return None

    def __len__(self) -> int:
        """How many parts have a basis to start from."""
        return len(self._ends)

    def record(self, where: _Where, basis: HighsBasis | None) -> None:
        """The part at ``where`` ended on ``basis`` (``None``: no basis to start from)."""
        self._ends = [(w, b) for w, b in self._ends if not _leads(w[0], where[0])]
        if basis is not None:
            self._ends.append((where, basis))


def _leads(first: np.ndarray, of: np.ndarray) -> bool:
    return len(first) <= len(of) and bool(np.array_equal(of[: len(first)], first))


def _solve_whole(where: _Where, part: _Part, approach: Approach, starts: Starts | None) -> np.ndarray | None:
    found, basis = _from_start(where, part, approach, starts)
    if starts is not None:
        starts.record(where, basis)
    return found


def _from_start(where: _Where, part: _Part, approach: Approach, starts: Starts | None) -> _Found:
    if starts is None:
        return _highs(part, approach)
    return _highs(part, approach, start=starts.basis(where), basis=True)


def _solve_parts(
    parts: list[tuple[_Where, _Part]], approach: Approach, starts: Starts | None
) -> list[np.ndarray | None]:
    """Each part's optimum: those solved before from memory (:data:`_SOLVED`), the others side by
    side on the cores this process may use (HiGHS lets go of the interpreter while it solves)."""
    keys = [_digest(part, approach) for _, part in parts]
    with _MEMORY:
        out = [_recall(key) if key in _SOLVED else None for key in keys]
        todo = [j for j, key in enumerate(keys) if key not in _SOLVED]

    def one(j: int) -> _Found:
        return _from_start(*parts[j], approach, starts)

    found = side_by_side(one, todo)
    with _MEMORY:
        for j, (answer, basis) in zip(todo, found, strict=True):
            out[j] = answer
            _remember(keys[j], answer)
            if starts is not None:
                starts.record(parts[j][0], basis)
    return out


_SOLVED: OrderedDict[bytes, np.ndarray | None] = OrderedDict()
"""The last parts solved alone (:func:`_solve_parts`), by a digest of all they are: when a pooled
program is solved again because one rack's pools could not be split
(:func:`ferry.plan.balance.assign_extras._solve_pooled`), the other racks' parts are what they were."""
REMEMBERED = 8
_MEMORY = threading.Lock()
"""Held while :data:`_SOLVED` is read or written: programs of the exact pass are solved side by side."""


def _digest(part: _Part, approach: Approach) -> bytes:
    matrix = part[0]
    digest = hashlib.sha256(bytes([approach.relax_first, approach.presolve]))
    for values in (matrix.indptr, matrix.indices, matrix.data, *part[1:]):
        digest.update(np.ascontiguousarray(values).tobytes())
    return digest.digest()


def _remember(key: bytes, answer: np.ndarray | None) -> None:
    _SOLVED[key] = None if answer is None else answer.copy()
    if len(_SOLVED) > REMEMBERED:
        _SOLVED.popitem(last=False)


def _recall(key: bytes) -> np.ndarray | None:
    _SOLVED.move_to_end(key)
    found = _SOLVED[key]
    return None if found is None else found.copy()


def _highs(
    part: _Part, approach: Approach, *, start: solver.Start | None = None, basis: bool = False
) -> _Found:
    """The integer optimum by HiGHS; with ``approach.relax_first``, the relaxation's vertex when it
    is integral (solved from ``start`` if given), with the basis it ended on if asked for.

    A relaxation has many optimal vertices, and which one the simplex ends on depends on where it
    starts: from ``start`` it may end on a fractional one where HiGHS's own start (presolved, if on)
    ends on an integral one, so a fractional end from ``start`` is solved again from HiGHS's own
    start before the integer program, which takes many times longer."""
    problem = solver.Problem(*part)
    begins = ([] if start is None else [start]) + [None]
    options = None if approach.presolve else _NO_PRESOLVE
    for begin in begins if approach.relax_first else []:
        relaxed = solver.solve(problem, integral=False, start=begin, basis=basis, options=options)
        if relaxed.status is solver.Status.INFEASIBLE:
            return None, None  # so is every integer program it relaxes
        if relaxed.x is not None:
            rounded: np.ndarray = np.rint(relaxed.x)
            if np.abs(relaxed.x - rounded).max(initial=0.0) < _INTEGRAL:
                return rounded, relaxed.basis
    result = solver.solve(problem, integral=True, options=_bounded(approach.cutoff))
    return (None if result.x is None else np.rint(result.x)), None


def _bounded(cutoff: float | None) -> dict[str, float | int | str] | None:
    """HiGHS's options for an integer program whose wanted solutions are under ``cutoff``.

    HiGHS runs its feasibility-jump heuristic before the root relaxation, to find a first solution
    fast; under a cutoff the root's bound settles a program that cannot reach it, and one that can
    is mostly found near the root by the heuristics after it, so the jump only delays both (on the
    100k racks of 30 to 6 of `benchmarks/plan_quality.py --shapes`, whose joint re-solve fails, the
    repair's re-solves took about two thirds of the time: docs/benchmarks.md)."""
    if cutoff is None:
        return None
    return {"objective_bound": cutoff, "mip_heuristic_run_feasibility_jump": False}
