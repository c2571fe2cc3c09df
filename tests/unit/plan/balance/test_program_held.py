"""The balance program solved again for the topics that broke a loose row, every other topic held
(ferry.plan.balance.program.held)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from support.clusters import generated
from support.program_rows import meets_rows

from ferry.model import Goal
from ferry.plan.balance.bands import broker_band
from ferry.plan.balance.program.held import PARTNERS, column_owners, evenly, held_optimum, partners
from ferry.plan.balance.program.integer_program import build
from ferry.plan.balance.program.state import ProgramState
from ferry.plan.balance.rack_totals import retarget
from ferry.plan.balance.setting import Setting
from ferry.plan.planner import in_scope, prepare_topic, target_brokers
from ferry.plan.racks import RackLayout


def _broken() -> Iterator[tuple[ProgramState, np.ndarray, set[tuple[int, int]], set[int]]]:
    """Pooled programs whose first optimum breaks loose rows (30 topics of two partitions on half or
    three quarters of 24 brokers in 5 racks), with those topics' loose rows posed; the broken (topic, rack)
    rows, and the topics :func:`partners` frees beside them."""
    for seed, occupied in itertools.product(range(6), (12, 18)):
        snapshot = generated(brokers=24, racks=5, topics=30, partitions=2, rf=3, seed=seed, occupied=occupied)
        layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, Goal()))
        demands = [prepare_topic(parts, Goal(), layout)[1] for parts in in_scope(snapshot, Goal())]
        demands = retarget(layout, demands)
        state = ProgramState(layout, demands, room_rows=set(), pool=True, loaded=frozenset())
        build(state, Setting(broker_band(layout, demands), 0, None, False))
        first = state.optimum(state.scale, relax_first=True, keep=True)
        if first is None or not (broken := state.loose.broken(first)):
            continue
        topics = {t for t, _ in broken}
        freed = partners(state.loose, first, broken)
        state.loose.pose(state, topics)
        yield state, first, broken, freed


def test_the_topics_that_broke_a_row_keep_as_many_and_every_other_topic_stays_as_it_was() -> None:
    solved = 0
    for state, first, broken, _ in _broken():
        topics = {t for t, _ in broken}
        found = held_optimum(state, first, topics, relax_first=True)
        if found is None:
            continue
        solved += 1
        gain = np.frombuffer(state.gain, dtype=np.int64)
        assert gain @ found == gain @ first
        owner = column_owners(state, len(found))
        others = (owner >= 0) & ~np.isin(owner, list(topics))
        assert np.array_equal(found[others], first[others])
        assert np.array_equal(found, np.rint(found))
        assert meets_rows(state.posed_matrix(), found, state.lows, state.highs)
        assert not state.loose.broken(found)
        # The whole program with the posed rows keeps no more: the held solution is an optimum.
        whole = state.optimum(state.scale, relax_first=True, keep=True)
        assert whole is not None and gain @ whole == gain @ found
    assert solved, "no broken topic was solved again with the others held: the test exercises nothing"


def test_a_solution_the_held_program_cannot_keep_as_many_as_gives_none() -> None:
    # The broken topics' kept replicas claimed at every column's bound: more than any solution of
    # their rows keeps, so the whole program must be solved again.
    tried = 0
    for state, first, broken, _ in _broken():
        topics = {t for t, _ in broken}
        gain = np.frombuffer(state.gain, dtype=np.int64)
        mine = np.isin(column_owners(state, len(first)), list(topics)) & (gain > 0)
        claimed = first.copy()
        claimed[mine] = np.frombuffer(state.upper, dtype=np.float64)[mine]
        if gain @ claimed <= gain @ first:
            continue
        tried += 1
        assert held_optimum(state, claimed, topics, relax_first=True) is None
    assert tried, "no broken topic keeps replicas through its own columns: the test exercises nothing"


def test_partners_let_the_held_program_keep_as_many_where_the_broken_topics_alone_cannot() -> None:
    # The broken topics must give extras up in the racks they crowd, and every broker's band holds:
    # alone, every other topic held, nobody takes them in.
    cases = rescued = 0
    for state, first, broken, freed in _broken():
        topics = {t for t, _ in broken}
        cases += 1
        alone = held_optimum(state, first, topics, relax_first=True)
        found = held_optimum(state, first, topics | freed, relax_first=True)
        assert found is not None, f"no solution with partners for {sorted(topics)}"
        rescued += alone is None
        gain = np.frombuffer(state.gain, dtype=np.int64)
        assert gain @ found == gain @ first
        owner = column_owners(state, len(found))
        held = (owner >= 0) & ~np.isin(owner, list(topics | freed))
        assert np.array_equal(found[held], first[held])
        assert meets_rows(state.posed_matrix(), found, state.lows, state.highs)
        whole = state.optimum(state.scale, relax_first=True, keep=True)
        assert whole is not None and gain @ whole == gain @ found
    assert cases and rescued, "no case the broken topics alone could not solve: the test exercises nothing"


def test_partners_have_room_in_a_crowded_rack_and_none_broke_a_row() -> None:
    seen = 0
    for state, first, broken, freed in _broken():
        topics = {t for t, _ in broken}
        crowded = {k for _, k in broken}
        assert not freed & topics
        assert len(freed) <= PARTNERS * len(topics)
        topic, rack, spare = state.loose.spare(first)
        for t in freed:
            seen += 1
            mine = (topic == t) & np.isin(rack, list(crowded))
            assert np.any(spare[mine] >= 1), f"partner {t} has no room in racks {sorted(crowded)}"
    assert seen, "no partner was chosen: the test exercises nothing"


@given(st.lists(st.integers(0, 10**6), unique=True, max_size=60).map(sorted), st.integers(0, 80))
def test_evenly_picks_that_many_in_order_from_first_to_last(items: list[int], count: int) -> None:
    picked = evenly(np.array(items, dtype=np.int64), count).tolist()
    assert len(picked) == min(count, len(items))
    assert picked == sorted(set(picked)) and set(picked) <= set(items)
    if len(picked) >= 2:
        assert (picked[0], picked[-1]) == (items[0], items[-1])  # spread over all, not a run
