"""HiGHS through its own binding (ferry.plan.balance.solvers.highs) and solving a kept program again from
where it ended (ferry.plan.balance.solvers.parts.Starts): the same optimum as solving it cold, and nothing on
stdout."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csr_array

from ferry.plan.balance.program.columns import Columns
from ferry.plan.balance.solvers import highs
from ferry.plan.balance.solvers import parts as solve
from ferry.plan.balance.solvers.highs import Problem

pytestmark = pytest.mark.unit


def _problem(rows: list[list[float]], lows: list[float], tops: list[float], cost: list[float]) -> Problem:
    """Columns bounded by 5."""
    matrix = csr_array(np.array(rows))
    return Problem(matrix, np.array(lows), np.array(tops), np.full(len(cost), 5.0), np.array(cost))


def test_an_optimum_an_infeasible_program_and_nothing_printed(capfd: pytest.CaptureFixture[str]) -> None:
    # Maximise x + 2y with x + y <= 3, y <= 2 (as a minimum of the negated objective).
    problem = _problem([[1, 1], [0, 1]], [-np.inf, -np.inf], [3, 2], [-1, -2])
    solved = highs.solve(problem, integral=True)
    assert solved.status is highs.Status.OPTIMAL
    assert solved.x is not None and solved.x.tolist() == [1.0, 2.0]
    stuck = highs.solve(_problem([[1, 1]], [11], [np.inf], [1, 1]), integral=False)  # bounds cap x + y at 10
    assert stuck.status is highs.Status.INFEASIBLE and stuck.x is None
    assert capfd.readouterr().out == ""


def test_a_longer_program_starts_from_the_basis_it_extends(capfd: pytest.CaptureFixture[str]) -> None:
    first = highs.solve(_problem([[1, 1]], [-np.inf], [3], [-1, -2]), integral=False, basis=True)
    assert first.basis is not None and first.x is not None and first.x.tolist() == [0.0, 3.0]
    # A column z and a row y + z <= 1 appended: the row cuts off the first optimum.
    longer = _problem([[1, 1, 0], [0, 1, 1]], [-np.inf, -np.inf], [3, 1], [-1, -2, -3])
    warm = highs.solve(longer, integral=False, start=highs.Start(first.basis, columns=2, rows=1))
    assert warm.x is not None and warm.x.tolist() == [3.0, 0.0, 1.0]
    # A basis that does not fit the leading program is refused: the whole program is solved cold.
    misfit = highs.solve(longer, integral=False, start=highs.Start(first.basis, columns=3, rows=1))
    assert misfit.x is not None and misfit.x.tolist() == [3.0, 0.0, 1.0]
    assert capfd.readouterr().out == ""


def test_a_part_starts_from_the_earlier_part_that_leads_it() -> None:
    starts = solve.Starts()
    basis = highs.solve(_problem([[1, 1]], [-np.inf], [3], [-1, -2]), integral=False, basis=True).basis
    starts.record((np.array([0, 1]), np.array([0])), basis)
    assert starts.basis((np.array([0, 1, 7]), np.array([0, 4]))) is not None
    assert starts.basis((np.array([1, 7]), np.array([0, 4]))) is None  # column 0 went elsewhere
    assert starts.basis((np.array([0, 1]), np.array([2]))) is None
    starts.record((np.array([0, 1, 7]), np.array([0, 4])), None)  # solved again, no basis kept
    assert starts.basis((np.array([0, 1, 7]), np.array([0, 4]))) is None


# A block: its columns' gains and how many of them may be picked; later, a cap on its first
# ``cut`` columns and a new column of gain ``extra``.
Block = tuple[list[int], int, int, int, int]
blocks = st.lists(
    st.tuples(
        st.lists(st.integers(0, 3), min_size=2, max_size=6),
        st.integers(1, 5),
        st.integers(1, 6),
        st.integers(0, 3),
        st.integers(0, 3),
    ),
    min_size=1,
    max_size=4,
)


def _first(program: Columns, spec: list[Block]) -> list[list[int]]:
    columns = []
    for gains, cap, _, _, _ in spec:
        cols = [program.column(1, g) for g in gains]
        program.ones(cols, -np.inf, cap)
        columns.append(cols)
    return columns


def _then(program: Columns, spec: list[Block], columns: list[list[int]]) -> None:
    for (_, _, cut, bound, extra), cols in zip(spec, columns, strict=True):
        program.ones(cols[:cut], -np.inf, bound)
        program.ones([program.column(1, extra)], -np.inf, 1)


@settings(max_examples=80, deadline=None, derandomize=True)
@given(blocks, st.booleans())
def test_solving_again_from_the_kept_basis_finds_the_optimum_of_a_cold_solve(
    spec: list[Block], parts: bool
) -> None:
    previous = solve.PARTS_FROM
    solve.PARTS_FROM = 0 if parts else 10**12
    try:
        kept = Columns()
        columns = _first(kept, spec)
        assert kept.optimum(0.0, relax_first=True, keep=True) is not None
        assert kept.starts is not None and len(kept.starts) > 0  # the relaxations are integral
        _then(kept, spec, columns)
        warm = kept.optimum(0.0, relax_first=True, keep=True)
        cold = Columns()
        _then(cold, spec, _first(cold, spec))
        fresh = cold.optimum(0.0, relax_first=True)
    finally:
        solve.PARTS_FROM = previous
    assert warm is not None and fresh is not None
    gains = np.frombuffer(cold.gain, dtype=np.int64)
    assert gains @ warm == gains @ fresh
    assert np.all(np.frombuffer(cold.upper) >= warm) and np.all(warm >= 0)
    assert np.all(kept.posed @ warm <= np.frombuffer(kept.highs))
