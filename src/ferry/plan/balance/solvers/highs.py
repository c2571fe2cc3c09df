"""HiGHS, the linear and integer program solver, called through its own binding (highspy).

scipy's ``milp`` wraps the same solver, but after each solve it loops in Python over every column
to sort out dual values ferry never reads, and it cannot start from a basis. The balance program
solves linear relaxations of 100,000 columns and, when rows are added to a solved one
(:mod:`ferry.plan.balance.program.full_pools`), solves it again: from the basis it ended on, HiGHS needs a
fraction of the iterations (:class:`Start`).

Models go in through the binding's array arguments: a ``HighsLp`` filled from Python converts
every value of its vectors one by one, and a basis read into Python lists makes an enum object per
column; a basis is only handed back to HiGHS as it came (:class:`Start`).

The raw binding (``_Highs``, in highspy's ``__all__``) is used, not ``highspy.Highs``: that class's
callbacks print the solver's banner on the process's standard output, where ``ferry plan`` may
write its plan.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from highspy import HighsBasis, HighsModelStatus, HighsStatus, HighsVarType, MatrixFormat, ObjSense
from highspy._core import _Highs


class Status(enum.Enum):
    OPTIMAL = "optimal"
    INFEASIBLE = "infeasible"
    OTHER = "other"
    """No optimum found, nor shown not to exist (a node limit, for one)."""


@dataclass(frozen=True)
class Problem:
    """Minimise ``cost @ x`` subject to ``lows <= matrix @ x <= highs`` and ``lower <= x <= upper``
    (``lower``: 0 where not given)."""

    matrix: Any
    """Sparse (scipy), any format."""
    lows: np.ndarray
    highs: np.ndarray
    upper: np.ndarray
    cost: np.ndarray
    lower: np.ndarray | None = None


@dataclass(frozen=True)
class Solved:
    status: Status
    x: np.ndarray | None
    """The optimum, where there is one."""
    basis: HighsBasis | None = None
    """Where the simplex ended: asked for with ``basis=True``, of linear programs only."""


@dataclass(frozen=True)
class Start:
    """Where to start the simplex: the ``basis`` HiGHS ended on for a program whose columns and rows
    are the first ``columns`` and ``rows`` of the one to solve.

    The leading program is passed with that basis and the rest appended to it: HiGHS then puts the
    new columns at their lower bound and makes the new rows basic, which is a basis (one basic
    variable per row); where the new rows cut off the old optimum it is not feasible, and the dual
    simplex goes on from it."""

    basis: HighsBasis
    columns: int
    rows: int


def solve(
    problem: Problem,
    *,
    integral: bool,
    options: Mapping[str, float | int | str] | None = None,
    start: Start | None = None,
    basis: bool = False,
) -> Solved:
    """``problem``'s optimum, over integers where ``integral``, from ``start`` if given."""
    solver = _Highs()
    solver.setOptionValue("output_flag", False)
    solver.setOptionValue("mip_rel_gap", 0.0)
    for name, value in (options or {}).items():
        solver.setOptionValue(name, value)
    if start is None:
        _pass(solver, problem, integral)
    else:
        _pass_from(solver, problem, start)
    solver.run()
    model_status = solver.getModelStatus()
    if model_status == HighsModelStatus.kInfeasible:
        return Solved(Status.INFEASIBLE, None)
    if model_status != HighsModelStatus.kOptimal:
        return Solved(Status.OTHER, None)
    x = np.array(solver.getSolution().col_value)
    return Solved(Status.OPTIMAL, x, solver.getBasis() if basis and not integral else None)


def _pass(solver: _Highs, problem: Problem, integral: bool) -> None:
    matrix = problem.matrix.tocsc()
    rows, columns = matrix.shape
    lower = np.zeros(columns) if problem.lower is None else problem.lower
    # One kind per column even for a linear program: the binding reads that many, whatever it is given.
    kind = HighsVarType.kInteger if integral else HighsVarType.kContinuous
    kinds = np.full(columns, int(kind), dtype=np.int32)
    solver.passModel(
        columns,
        rows,
        matrix.nnz,
        int(MatrixFormat.kColwise),
        int(ObjSense.kMinimize),
        0.0,
        _floats(problem.cost),
        _floats(lower),
        _floats(problem.upper),
        _floats(problem.lows),
        _floats(problem.highs),
        _ints(matrix.indptr),
        _ints(matrix.indices),
        _floats(matrix.data),
        kinds,
    )


def _pass_from(solver: _Highs, problem: Problem, start: Start) -> None:
    """The program's leading part with ``start``'s basis, then the rest appended (:class:`Start`)."""
    c, r = start.columns, start.rows
    matrix = problem.matrix.tocsc()
    lower = np.zeros(matrix.shape[1]) if problem.lower is None else np.asarray(problem.lower)
    cost, upper = np.asarray(problem.cost), np.asarray(problem.upper)
    lows, highs = np.asarray(problem.lows), np.asarray(problem.highs)
    lead = Problem(matrix[:r, :c], lows[:r], highs[:r], upper[:c], cost[:c], lower[:c])
    _pass(solver, lead, integral=False)
    if solver.setBasis(start.basis) != HighsStatus.kOk:
        _pass(solver, problem, integral=False)  # refused: the whole program, from HiGHS's own start
        return
    added = matrix[:r, c:]
    solver.addCols(
        added.shape[1],
        _floats(cost[c:]),
        _floats(lower[c:]),
        _floats(upper[c:]),
        added.nnz,
        _ints(added.indptr[:-1]),
        _ints(added.indices),
        _floats(added.data),
    )
    appended = problem.matrix.tocsr()[r:]
    solver.addRows(
        appended.shape[0],
        _floats(lows[r:]),
        _floats(highs[r:]),
        appended.nnz,
        _ints(appended.indptr[:-1]),
        _ints(appended.indices),
        _floats(appended.data),
    )


def _floats(values: Any) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float64)


def _ints(values: Any) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.int32)
