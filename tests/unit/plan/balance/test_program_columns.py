"""The program under construction (ferry.plan.balance.program.columns): columns, rows and per-topic column
records as the row builders add them."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ferry.plan.balance.program.columns import Columns, TopicColumns
from ferry.plan.balance.solvers.transport import OTHER, TOPIC


def test_columns_and_rows_record_their_bounds_entries_and_kind_in_order() -> None:
    program = Columns()
    cols = [program.column(1), program.column(4, 1), program.column(2, 0, 99), program.column(1)]
    assert cols == [0, 1, 2, 3] and list(program.gain) == [0, 1, 0, 0] and list(program.size) == [0, 0, 99, 0]
    program.row([(0, 2.0), (3, -1.0)], -np.inf, 5)
    program.ones([0, 1], 1, 1, TOPIC, minus=[2])
    program.ones(np.array([2, 3]), 0, 2)  # numpy columns as a list's
    assert list(program.rows) == [0, 0, 1, 1, 1, 2, 2] and list(program.cols) == [0, 3, 0, 1, 2, 2, 3]
    assert list(program.vals) == [2.0, -1.0, 1.0, 1.0, -1.0, 1.0, 1.0]
    assert (list(program.lows), list(program.highs), program.kinds) == (
        [-np.inf, 1, 0],
        [5, 1, 2],
        [OTHER, TOPIC, OTHER],
    )


entries = st.lists(
    st.tuples(st.integers(0, 4), st.lists(st.tuples(st.integers(0, 9), st.integers(0, 99)), max_size=4)),
    max_size=12,
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(entries, entries)
def test_topic_columns_give_each_topic_its_pairs_in_the_order_added_even_after_more_come(
    first: list[tuple[int, list[tuple[int, int]]]], later: list[tuple[int, list[tuple[int, int]]]]
) -> None:
    columns, bulk = TopicColumns(), TopicColumns()
    expected: dict[int, list[tuple[int, int]]] = {t: [] for t in range(6)}
    for batch in (first, later):
        for t, pairs in batch:
            columns.add(t, [p for p, _ in pairs], [c for _, c in pairs])
            bulk.extend(
                np.full(len(pairs), t), np.array([p for p, _ in pairs]), np.array([c for _, c in pairs])
            )
            expected[t] += pairs
        columns.add_one(5, 7)
        bulk.extend(np.array([5]), np.array([-1]), np.array([7]))
        expected[5].append((-1, 7))
        assert {t: columns.of(t) for t in expected} == expected == {t: bulk.of(t) for t in expected}
        cells = sorted(t * 10 + p for t, got in expected.items() for p, _ in got)
        assert columns.pairs(10).tolist() == cells
