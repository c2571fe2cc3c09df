"""HiGHS, the linear and integer program solver, called through its own binding (highspy).

scipy's ``milp`` wraps the same solver, but after each solve it loops in Python over every column
to sort out dual values ferry never reads, and it cannot start from a basis. The balance program
solves linear relaxations of 100,000 columns and, when rows are added to a solved one
(:mod:`ferry.plan.saturation`), solves it again: from the basis it ended on, HiGHS needs a fraction
of the iterations (:func:`extended`).

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
from highspy import (
    HighsBasis,
    HighsBasisStatus,
    HighsLp,
    HighsModelStatus,
    HighsVarType,
    MatrixFormat,
)
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


def solve(
    problem: Problem,
    *,
    integral: bool,
    options: Mapping[str, float | int | str] | None = None,
    start: HighsBasis | None = None,
    basis: bool = False,
) -> Solved:
    """``problem``'s optimum, over integers where ``integral``, from basis ``start`` if given."""
    solver = _Highs()
    solver.setOptionValue("output_flag", False)
    solver.setOptionValue("mip_rel_gap", 0.0)
    for name, value in (options or {}).items():
        solver.setOptionValue(name, value)
    solver.passModel(_model(problem, integral))
    if start is not None:
        solver.setBasis(start)  # a basis HiGHS refuses leaves it to start cold
    solver.run()
    model_status = solver.getModelStatus()
    if model_status == HighsModelStatus.kInfeasible:
        return Solved(Status.INFEASIBLE, None)
    if model_status != HighsModelStatus.kOptimal:
        return Solved(Status.OTHER, None)
    x = np.array(solver.getSolution().col_value)
    return Solved(Status.OPTIMAL, x, solver.getBasis() if basis and not integral else None)


def extended(basis: HighsBasis, columns: int, rows: int) -> HighsBasis:
    """``basis`` of a program, for the program with columns and rows appended (``columns`` and
    ``rows`` in all): the new columns at their lower bound, the new rows basic. That is a basis
    (one basic variable per row); where the new rows cut off the old optimum it is not feasible,
    and the dual simplex goes on from it."""
    out = HighsBasis()
    out.col_status = [*basis.col_status, *[HighsBasisStatus.kLower] * (columns - len(basis.col_status))]
    out.row_status = [*basis.row_status, *[HighsBasisStatus.kBasic] * (rows - len(basis.row_status))]
    out.valid = True
    return out


def _model(problem: Problem, integral: bool) -> HighsLp:
    matrix = problem.matrix.tocsc()
    rows, columns = matrix.shape
    lp = HighsLp()
    lp.num_col_, lp.num_row_ = columns, rows
    lp.col_cost_ = np.asarray(problem.cost, dtype=np.float64)
    lower = np.zeros(columns) if problem.lower is None else problem.lower
    lp.col_lower_ = np.asarray(lower, dtype=np.float64)
    lp.col_upper_ = np.asarray(problem.upper, dtype=np.float64)
    lp.row_lower_ = np.asarray(problem.lows, dtype=np.float64)
    lp.row_upper_ = np.asarray(problem.highs, dtype=np.float64)
    lp.a_matrix_.format_ = MatrixFormat.kColwise
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = columns, rows
    lp.a_matrix_.start_ = matrix.indptr
    lp.a_matrix_.index_ = matrix.indices
    lp.a_matrix_.value_ = matrix.data
    if integral:
        lp.integrality_ = [HighsVarType.kInteger] * columns
    return lp
