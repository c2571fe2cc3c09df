"""HiGHS part by part (ferry.plan.balance.solvers.parts): a program that falls apart, once its implied rows
are left out, has the optimum of the whole; and which rows are implied
(ferry.plan.balance.program.pinned_rows)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ferry.plan.balance.program.columns import Columns
from ferry.plan.balance.program.pinned_rows import _never_binds
from ferry.plan.balance.solvers import parts as solve
from ferry.plan.balance.solvers.network_program import as_network
from ferry.plan.balance.solvers.rowless import WithRowless
from ferry.plan.balance.solvers.transport import BROKER, TOPIC
from ferry.plan.prepare.demand import Pinned
from ferry.plan.racks import RackLayout

pytestmark = pytest.mark.unit

# A block: its columns' gains, at most ``cap`` of them picked, exactly ``need`` of its first two.
Block = tuple[list[int], int, int]
blocks = st.lists(
    st.tuples(st.lists(st.integers(0, 3), min_size=2, max_size=5), st.integers(1, 5), st.integers(0, 2)),
    min_size=1,
    max_size=4,
)


def _program(spec: list[Block], *, implied: bool) -> tuple[Columns, int]:
    """Independent blocks, a column in no row, and a row over every block's columns that binds
    nowhere (an implied row where ``implied``); returns the program and the lone column."""
    program = Columns()
    every = []
    for gains, cap, need in spec:
        cols = [program.column(1, g) for g in gains]
        every += cols
        program.ones(cols, -np.inf, cap)
        program.ones(cols[:2], need, need)
    alone = program.column(3, 1)
    if implied:
        program.implied.append(len(program.lows))
    program.ones(every, -np.inf, len(every))
    return program, alone


def _solve(program: Columns, *, parts: bool) -> np.ndarray | None:
    previous = solve.PARTS_FROM
    solve.PARTS_FROM = 0 if parts else 10**12
    try:
        return program.optimum(0.0, relax_first=False)
    finally:
        solve.PARTS_FROM = previous


@settings(max_examples=60, deadline=None, derandomize=True)
@given(blocks)
def test_parts_keep_the_optimum_of_the_whole(spec: list[Block]) -> None:
    whole, _ = _program(spec, implied=False)
    parts, alone = _program(spec, implied=True)
    gains = np.frombuffer(whole.gain, dtype=np.int64)
    a, b = _solve(whole, parts=False), _solve(parts, parts=True)
    assert (a is None) == (b is None)
    if a is not None and b is not None:
        assert float(gains @ a) == float(gains @ b)
        assert b[alone] == 3  # in no row: the bound that pays


@settings(max_examples=40, deadline=None, derandomize=True)
@given(blocks)
def test_a_cutoff_ends_a_program_short_of_the_count_and_leaves_one_that_keeps_it(spec: list[Block]) -> None:
    program, _ = _program(spec, implied=False)
    gains = np.frombuffer(program.gain, dtype=np.int64)
    best = _solve(program, parts=False)
    if best is None:
        return
    kept = round(float(gains @ best))

    def with_cutoff(need: int) -> np.ndarray | None:
        again, _ = _program(spec, implied=False)
        return again.optimum(0.0, relax_first=False, cutoff=0.5 - need)

    reached = with_cutoff(kept)
    assert reached is not None and float(gains @ reached) == kept
    assert with_cutoff(kept + 1) is None


def test_a_row_without_terms_that_asks_for_something_has_no_solution() -> None:
    program = Columns()
    program.ones([program.column(1, 1)], -np.inf, 1)
    program.ones([program.column(1, 1)], -np.inf, 1)
    program.ones([], 1, np.inf)
    assert _solve(program, parts=True) is None


def test_a_pinned_partitions_replica_row_is_implied_only_where_its_rack_rows_bound_it() -> None:
    layout = RackLayout.of({b: f"r{b // 2}" for b in range(6)}, list(range(6)))  # 3 racks of 2
    one_each = ((1, 1), (1, 1), (1, 1))
    # Two replicas in rack 0, one in rack 1, none in rack 2: at most 1 + 1 + 1 (owed) = rf.
    assert _never_binds(Pinned(0, (0, 1, 2), 3, one_each), layout)
    # Going down to two replicas, one per rack at most: keeping one in each rack would be three.
    assert not _never_binds(Pinned(0, (0, 2, 4), 2, ((0, 1), (0, 1), (0, 1))), layout)
    assert not _never_binds(Pinned(0, (0, 1), 2, None), layout)


def _two_parts(gains: list[int]) -> Columns:
    """Two independent blocks of ``gains`` (at most two picked in each), the second with a fined
    column."""
    program = Columns()
    for _ in range(2):
        cols = [program.column(1, g) for g in gains]
        program.ones(cols, -np.inf, 2)
    program.penalty.append(len(program.upper) - 1)
    return program


def test_parts_solved_again_are_remembered_within_bounds_and_answer_as_the_solver() -> None:
    solve._SOLVED.clear()
    fresh = _solve(_two_parts([1, 1, 2]), parts=True)
    assert len(solve._SOLVED) == 2  # one per part
    again = _solve(_two_parts([1, 1, 2]), parts=True)
    assert fresh is not None and again is not None and again.tolist() == fresh.tolist()
    assert len(solve._SOLVED) == 2
    for n in range(solve.REMEMBERED + 3):
        _solve(_two_parts([1, 1, 2, n + 3]), parts=True)
    assert len(solve._SOLVED) == solve.REMEMBERED


def test_each_parts_fines_stay_below_a_quarter_of_a_kept_replica() -> None:
    costs = solve._Costs(np.array([-1.0, 0.0, 0.0, 0.0]), np.array([0, 1, 1, 0]))
    upper = np.array([1.0, 5.0, 7.0, 1.0])
    objective = costs.objective(upper)
    assert float((objective - costs.plain) @ upper) < 0.25
    part = np.array([1, 3])
    assert float((costs.objective(upper[part], part) - costs.plain[part]) @ upper[part]) < 0.25


def test_more_parts_than_remembered_are_all_solved() -> None:
    program = Columns()
    for n in range(solve.REMEMBERED + 4):
        cols = [program.column(1, g) for g in (1, 2, n + 3)]
        program.ones(cols, -np.inf, 2)
    found = _solve(program, parts=True)
    assert found is not None
    assert found.tolist() == [0, 1, 1] * (solve.REMEMBERED + 4)


def _with_rowless(*, implied: bool) -> tuple[Columns, int]:
    """A topic handing out two extras over three brokers (one per broker, the last worth a kept
    replica), and a kept replica's column that is otherwise only in a pinned partition's row of at
    most ``rf`` replicas with an extra column (implied where ``implied``); returns it and that column."""
    program = Columns()
    extras = [program.column(1, gain) for gain in (0, 0, 1)]
    program.ones(extras, 2, 2, TOPIC)
    for c in extras:
        program.ones([c], 0, 1, BROKER)
    alone = program.column(1, 1, 5)
    if implied:
        program.implied.append(len(program.lows))
    program.ones([alone, extras[0]], -np.inf, 2)
    return program, alone


def test_a_column_in_no_row_of_a_network_keeps_its_replica_and_the_rest_is_solved_as_a_flow() -> None:
    program, alone = _with_rowless(implied=True)
    matrix = program.posed_matrix()
    bounds = (np.array(program.lows), np.array(program.highs), np.array(program.upper, dtype=np.float64))
    network = as_network(matrix, list(program.kinds), bounds, program.implied, None)
    assert isinstance(network, WithRowless)  # a flow, not HiGHS, solves it
    flowed = program.optimum(1e-9, relax_first=False)
    reference, _ = _with_rowless(implied=False)  # the row stays: HiGHS solves the same program
    solved = reference.optimum(1e-9, relax_first=False)
    assert flowed is not None and solved is not None
    assert flowed[alone] == solved[alone] == 1
    gains = np.array(program.gain)
    assert gains @ flowed == gains @ solved == 2
