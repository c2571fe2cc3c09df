"""Items in consecutive groups (ferry.plan.consecutive): starts, ranks, spans, runs of equal keys and
distinct values."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ferry.plan.consecutive import all_distinct, distinct, rank, runs, spans, starts


def test_groups_of_counts_start_rank_and_span() -> None:
    counts = np.array([2, 0, 3])
    assert starts(counts).tolist() == [0, 2, 2]
    assert rank(np.array([0, 0, 2, 2, 2]), counts).tolist() == [0, 1, 0, 1, 2]
    assert spans(np.array([10, 20, 30]), counts).tolist() == [10, 11, 30, 31, 32]


@given(st.lists(st.integers(0, 5), max_size=30))
def test_runs_cover_the_keys_one_run_per_value(values: list[int]) -> None:
    keys = np.array(sorted(values), dtype=np.int64)
    found = runs(keys)
    assert [keys[a:b].tolist() for a, b in found] == [[v] * values.count(v) for v in sorted(set(values))]


@given(st.lists(st.integers(-(2**62), 2**62), max_size=40) | st.lists(st.integers(0, 4), max_size=40))
def test_distinct_values_are_numpys_unique_ones(values: list[int]) -> None:
    array = np.array(values, dtype=np.int64)
    assert distinct(array).tolist() == sorted(set(values))
    assert all_distinct(array) == (len(set(values)) == len(values))
