"""How the balance program is posed (ferry.plan.balance.setting): what topics held outside take of each
broker, and the weight of the size terms."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from support.clusters import generated

from ferry.model import Goal
from ferry.plan.balance.bands import broker_band
from ferry.plan.balance.program.integer_program import build
from ferry.plan.balance.program.state import ProgramState
from ferry.plan.balance.rack_totals import retarget
from ferry.plan.balance.setting import Outside, Setting, size_scale
from ferry.plan.planner import in_scope, prepare_topic, target_brokers
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout

Case = tuple[RackLayout, list[TopicDemand]]


def posed(brokers: int, racks: int, rf: int, seed: int, goal: Goal) -> Case:
    snapshot = generated(brokers=brokers, racks=racks, topics=4, partitions=5, rf=rf, seed=seed, skew=1.0)
    layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, goal))
    return layout, retarget(layout, [prepare_topic(p, goal, layout)[1] for p in in_scope(snapshot, goal)])


cases = st.builds(
    posed,
    st.integers(3, 7),
    st.integers(0, 3),
    st.integers(1, 3),
    st.integers(0, 999),
    st.sampled_from([Goal(), Goal(brokers=frozenset({0, 1, 2})), Goal(replication_factors={"topic-000": 1})]),
)
SETTINGS = settings(max_examples=50, deadline=None, derandomize=True)


@SETTINGS
@given(cases, st.data())
def test_outside_counts_every_quota_and_shifted_by_a_topic_and_back_is_where_it_started(
    case: Case, data: st.DataObject
) -> None:
    layout, demands = case
    n, quotas = len(layout.brokers), [d.quota.base for d in demands]
    everyone = Outside.of(n, demands, quotas)
    assert everyone.load == tuple(map(sum, zip(*quotas, strict=True)))
    singles = [q for q, d in zip(quotas, demands, strict=True) if d.single_replica]
    assert everyone.single == tuple(sum(q[i] for q in singles) for i in range(n))
    t = data.draw(st.integers(0, len(demands) - 1))
    rest = everyone.shifted(quotas[t], single=demands[t].single_replica, sign=-1)
    others = [j for j in range(len(demands)) if j != t]
    assert rest == Outside.of(n, [demands[j] for j in others], [quotas[j] for j in others])
    assert rest.shifted(quotas[t], single=demands[t].single_replica, sign=1) == everyone


def test_outside_of_nothing_is_none_and_a_topic_of_many_replicas_shifts_the_load_alone() -> None:
    assert Outside.of(3, [], []) == Outside.none(3) == Outside((0, 0, 0), (0, 0, 0))
    outside = Outside((3, 4), (1, 2))
    assert outside.shifted((1, 2), single=False, sign=1) == Outside((4, 6), (1, 2))
    assert outside.shifted((1, 2), single=True, sign=-1) == Outside((2, 2), (0, 0))


@SETTINGS
@given(cases, st.sampled_from([0, None]), st.booleans())
def test_size_terms_never_outweigh_one_kept_replica(case: Case, slack: int | None, voluntary: bool) -> None:
    layout, demands = case
    scale = size_scale(layout, demands)
    biggest = max((max((*d.shed, *d.sizes), default=0) for d in demands), default=0)
    columns = sum(len(layout.brokers) for d in demands if d.quota.extras > 0)
    columns += sum(len(pin.replicas) for d in demands for pin in d.pinned)
    assert 0 < scale * max(biggest, 1) * columns < 0.5 or columns == 0
    # Every size term of the program built, at its column's most, adds up to less than half a replica.
    state = ProgramState(layout, demands, voluntary=voluntary)
    build(state, Setting(broker_band(layout, demands), slack, None, voluntary))
    weight = np.dot(np.array(state.size, dtype=np.float64), np.array(state.upper, dtype=np.float64))
    assert state.scale == scale and scale * weight < 0.5
    assert size_scale(layout, []) == 0.5
