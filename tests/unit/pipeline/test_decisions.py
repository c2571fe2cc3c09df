"""The balance program's decisions through their Arrow table, as each bucket carries its own."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ferry.pipeline.buckets import Buckets, cut, from_blobs, to_blob
from ferry.pipeline.decisions import Decision, decision_table, decisions_of, empty_decisions

brokers = st.frozensets(st.integers(0, 1_000), max_size=4)
decision: st.SearchStrategy[Decision] = st.tuples(
    st.lists(st.integers(0, 50), max_size=12).map(tuple),
    st.dictionaries(st.integers(0, 2_000), brokers, max_size=8),
)
keys = st.tuples(st.sampled_from(["east", "west", ""]), st.text(min_size=1, max_size=8))


@given(st.dictionaries(keys, decision, max_size=30))
def test_decisions_come_back_as_they_went(decisions: dict[tuple[str, str], Decision]) -> None:
    table = from_blobs([to_blob(decision_table(decisions))])
    assert decisions_of(table) == decisions


@given(st.dictionaries(keys, decision, min_size=1, max_size=30), st.integers(1, 5))
def test_each_bucket_carries_the_decisions_of_its_own_topics(
    decisions: dict[tuple[str, str], Decision], count: int
) -> None:
    table = decision_table(decisions)
    chosen = Buckets.of(table, count)
    found: dict[tuple[str, str], Decision] = {}
    for part in cut(table, chosen):
        mine = decisions_of(part)
        assert not set(mine) & set(found), "a topic's decision in two buckets"
        found.update(mine)
    assert found == decisions


def test_no_topics_no_decisions() -> None:
    assert decisions_of(empty_decisions()) == {}
    assert decision_table({}).num_rows == 0
