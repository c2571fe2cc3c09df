"""The min-cost flow answers the balance program exactly as the integer program does."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_array, csr_array
from support.program_rows import meets_rows

from ferry.plan.balance.solvers import transport as transport_module
from ferry.plan.balance.solvers.transport import BROKER, OTHER, POOL, RACK, TOPIC, Transport


class Rows:
    """A program built row by row, as :class:`ferry.plan.balance.program.integer_program.Program` builds its
    own."""

    def __init__(self, columns: int) -> None:
        self.columns = columns
        self.entries: list[tuple[int, int]] = []
        self.lows: list[float] = []
        self.highs: list[float] = []
        self.kinds: list[str] = []

    def add(self, cols: list[int], lo: float, hi: float, kind: str) -> None:
        r = len(self.lows)
        self.entries += [(r, c) for c in cols]
        self.lows.append(lo)
        self.highs.append(hi)
        self.kinds.append(kind)

    def matrix(self) -> csr_array:
        rows = np.array([r for r, _ in self.entries], dtype=np.int64)
        cols = np.array([c for _, c in self.entries], dtype=np.int64)
        shape = (len(self.lows), self.columns)
        return coo_array((np.ones(len(self.entries)), (rows, cols)), shape=shape).tocsr()


@st.composite
def programs(draw: st.DrawFn) -> tuple[Rows, np.ndarray, np.ndarray]:
    """Topics handing out extras to brokers in racks, with rack and broker bounds."""
    brokers = draw(st.integers(1, 8))
    racks = draw(st.integers(1, 3))
    rack_of = [b % racks for b in range(brokers)]
    topics = draw(st.integers(1, 6))
    column = {(t, b): t * brokers + b for t in range(topics) for b in range(brokers)}
    rows = Rows(topics * brokers)
    for t in range(topics):
        rows.add([column[t, b] for b in range(brokers)], *[draw(st.integers(0, brokers))] * 2, TOPIC)
        for k in range(racks):
            cols = [column[t, b] for b in range(brokers) if rack_of[b] == k]
            if cols and draw(st.booleans()):
                rows.add(cols, draw(st.integers(0, 1)), draw(st.integers(1, len(cols))), RACK)
    for b in range(brokers):
        lo = draw(st.integers(-1, topics // 2))
        rows.add([column[t, b] for t in range(topics)], lo, lo + draw(st.integers(0, topics)), BROKER)
    gain = np.array(draw(st.lists(st.integers(0, 1), min_size=rows.columns, max_size=rows.columns)))
    size = np.array(draw(st.lists(st.integers(0, 10**12), min_size=rows.columns, max_size=rows.columns)))
    return rows, gain, size


def integer_optimum(rows: Rows, weight: np.ndarray) -> np.ndarray | None:
    constraints = LinearConstraint(rows.matrix(), np.array(rows.lows), np.array(rows.highs))
    bounds = Bounds(np.zeros(rows.columns), np.ones(rows.columns))
    result = milp(-weight, constraints=constraints, bounds=bounds, integrality=np.ones(rows.columns))
    return None if result.x is None else np.rint(result.x)


def transport(rows: Rows) -> Transport | None:
    lows, highs = np.array(rows.lows), np.array(rows.highs)
    return Transport.of(rows.matrix(), rows.kinds, lows, highs, np.ones(rows.columns))


@settings(max_examples=150, deadline=None)
@given(programs())
def test_flow_keeps_as_many_replicas_as_the_integer_program(
    case: tuple[Rows, np.ndarray, np.ndarray],
) -> None:
    rows, gain, size = case
    network = transport(rows)
    assert network is not None
    flows = network.solve(gain, size)
    expected = integer_optimum(rows, gain.astype(float))
    if expected is None:
        assert flows is None
        return
    assert isinstance(flows, np.ndarray)
    assert meets_rows(rows.matrix(), flows, rows.lows, rows.highs)
    assert set(np.unique(flows)) <= {0.0, 1.0}
    assert gain @ flows == gain @ expected


def test_among_equal_counts_the_bigger_replicas_stay() -> None:
    # One topic hands one extra to one of three brokers; each extra saves a replica of its size.
    rows = Rows(3)
    rows.add([0, 1, 2], 1, 1, TOPIC)
    flows = transport_of(rows).solve(np.zeros(3, dtype=np.int64), np.array([5, 900, 40]))
    assert isinstance(flows, np.ndarray)
    assert flows.tolist() == [0.0, 1.0, 0.0]


def test_a_kept_replica_outweighs_any_sizes() -> None:
    rows = Rows(2)
    rows.add([0, 1], 1, 1, TOPIC)
    flows = transport_of(rows).solve(np.array([1, 0]), np.array([0, 10**15]))
    assert isinstance(flows, np.ndarray)
    assert flows.tolist() == [1.0, 0.0]


def test_rack_rows_on_the_same_columns_intersect() -> None:
    rows = Rows(4)
    rows.add([0, 1, 2, 3], 2, 2, TOPIC)
    rows.add([0, 1], 0, 2, RACK)
    rows.add([0, 1], 2, np.inf, RACK)  # a rack's lower bound, as Program._rack_capacity poses it
    flows = transport_of(rows).solve(np.array([0, 0, 1, 1]), np.zeros(4, dtype=np.int64))
    assert isinstance(flows, np.ndarray)
    assert flows.tolist() == [1.0, 1.0, 0.0, 0.0]


def test_infeasible_bounds_give_none() -> None:
    rows = Rows(2)
    rows.add([0, 1], 2, 2, TOPIC)
    rows.add([0], 0, 0, BROKER)
    assert transport_of(rows).solve(np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.int64)) is None


def test_other_rows_or_columns_outside_a_topic_are_not_a_network() -> None:
    with_other = Rows(2)
    with_other.add([0, 1], 1, 1, TOPIC)
    with_other.add([0, 1], 0, 1, OTHER)
    assert transport(with_other) is None
    loose = Rows(3)
    loose.add([0, 1], 1, 1, TOPIC)
    assert transport(loose) is None
    spanning = Rows(4)
    spanning.add([0, 1], 1, 1, TOPIC)
    spanning.add([2, 3], 1, 1, TOPIC)
    spanning.add([1, 2], 0, 1, RACK)
    assert transport(spanning) is None


def transport_of(rows: Rows) -> Transport:
    network = transport(rows)
    assert network is not None
    return network


def test_a_pool_row_passes_pooled_extras_on_to_its_brokers() -> None:
    # One topic hands out two extras: column 0 on broker A (keeps a replica), column 1 into the
    # rack's pool; the pool passes on to A (column 2) and B (column 3). A takes at most one, B one.
    rows = Rows(4)
    rows.add([0, 1], 2, 2, TOPIC)
    rows.entries += [(1, 1), (1, 2), (1, 3)]
    rows.lows.append(0)
    rows.highs.append(0)
    rows.kinds.append(POOL)
    rows.add([0, 2], 0, 1, BROKER)
    rows.add([3], 1, 1, BROKER)
    matrix = rows.matrix().tolil()
    matrix[1, 2] = matrix[1, 3] = -1.0  # what leaves the pool
    lows, highs = np.array(rows.lows), np.array(rows.highs)
    network = Transport.of(matrix.tocsr(), rows.kinds, lows, highs, np.array([1, 2, 2, 2]))
    assert network is not None
    flows = network.solve(np.array([1, 0, 0, 0]), np.zeros(4, dtype=np.int64))
    assert isinstance(flows, np.ndarray)
    assert flows.tolist() == [1.0, 1.0, 0.0, 1.0]


def test_a_pool_row_passes_on_what_columns_held_outside_the_program_pooled() -> None:
    # The pool row of the test above with two units pooled by topics held outside the program: its
    # bound is -2 (in less out). The topic's one extra stays on A (column 0, a kept replica), which
    # takes one in all, so the held units go to B, which takes two.
    rows = Rows(4)
    rows.add([0, 1], 1, 1, TOPIC)
    rows.entries += [(1, 1), (1, 2), (1, 3)]
    rows.lows.append(-2)
    rows.highs.append(-2)
    rows.kinds.append(POOL)
    rows.add([0, 2], 0, 1, BROKER)
    rows.add([3], 0, 2, BROKER)
    matrix = rows.matrix().tolil()
    matrix[1, 2] = matrix[1, 3] = -1.0
    lows, highs = np.array(rows.lows), np.array(rows.highs)
    upper = np.array([1, 1, 3, 3])
    network = Transport.of(matrix.tocsr(), rows.kinds, lows, highs, upper)
    assert network is not None
    flows = network.solve(np.array([1, 0, 0, 0]), np.zeros(4, dtype=np.int64))
    assert isinstance(flows, np.ndarray)
    assert flows.tolist() == [1.0, 0.0, 0.0, 2.0]
    # Three held units and the topic's one: more than A and B take together.
    lows[1] = highs[1] = -3
    network = Transport.of(matrix.tocsr(), rows.kinds, lows, highs, upper)
    assert network is not None
    assert network.solve(np.array([1, 0, 0, 0]), np.zeros(4, dtype=np.int64)) is None


def test_a_pool_row_that_does_not_conserve_is_not_a_network() -> None:
    rows = Rows(2)
    rows.add([0, 1], 1, 1, TOPIC)
    rows.add([1], 0, 1, POOL)
    assert transport(rows) is None


def test_costs_the_solver_finds_too_wide_are_made_coarser_and_solved(monkeypatch: pytest.MonkeyPatch) -> None:
    # The solver checks the costs' range more strictly than the bound the costs are made under (a
    # 500k skewed start's flow failed so, and HiGHS took the program over): with that bound at the
    # top of 64 bits, the first costs are refused and coarser ones solve, the bigger replica kept.
    monkeypatch.setattr(transport_module, "_COST_LIMIT", (1 << 63) - 1)
    monkeypatch.setattr(transport_module, "QUANTA", 1 << 62)
    answers: list[object] = []
    solved = Transport._solved

    def counted(self: Transport, costs: np.ndarray) -> object:
        answers.append(solved(self, costs))
        return answers[-1]

    monkeypatch.setattr(Transport, "_solved", counted)
    rows = Rows(3)
    rows.add([0, 1, 2], 1, 1, TOPIC)
    flows = transport_of(rows).solve(np.ones(3, dtype=np.int64), np.array([5, 900, 40]))
    assert isinstance(flows, np.ndarray)
    assert flows.tolist() == [0.0, 1.0, 0.0]
    assert len(answers) > 1 and not isinstance(answers[0], np.ndarray)  # refused first
