"""A budgeted step leaves as little imbalance as any plan within the same budget can: an exact
integer program, free to move any replica anywhere the rack rule allows, finds no plan of at most
that many moves that leaves fewer replicas out of place against the full plan."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import lil_array
from support.clusters import balanced, generated, with_new_brokers
from test_budget_step import rack_clean_skewed

from ferry.model import ClusterSnapshot, Goal
from ferry.plan.planner import plan
from ferry.plan.racks import RackLayout


def least_imbalance(snapshot: ClusterSnapshot, full: dict[tuple[str, int], int], budget: int) -> int:
    """The fewest replicas out of place (per topic and broker, beyond ``full``) that any placement
    reachable with at most ``budget`` replica moves reaches under the strict rack rule."""
    layout = RackLayout.of(snapshot.racks, snapshot.broker_ids)
    parts, brokers = snapshot.partitions, layout.brokers
    topics = sorted({p.tp.topic for p in parts})
    n_y = len(parts) * len(brokers)
    n = n_y + len(topics) * len(brokers)  # y[p, b] then e[t, b]
    rows = lil_array((len(parts) * (1 + len(layout.members)) + 1 + len(topics) * len(brokers), n))
    lows, highs, r = [], [], 0
    for j, p in enumerate(parts):
        for i in range(len(brokers)):
            rows[r, j * len(brokers) + i] = 1
        lows.append(len(p.replicas))
        highs.append(len(p.replicas))
        r += 1
        for k, (lo, hi) in enumerate(layout.bounds(len(p.replicas))):
            for b in layout.members[k]:
                rows[r, j * len(brokers) + layout.position[b]] = 1
            lows.append(lo)
            highs.append(hi)
            r += 1
    for j, p in enumerate(parts):  # moves: replicas on brokers the partition is not on now
        for i, b in enumerate(brokers):
            if b not in p.replicas:
                rows[r, j * len(brokers) + i] = 1
    lows.append(0)
    highs.append(budget)
    r += 1
    for t, topic in enumerate(topics):  # e[t, b] >= held - full
        for i, b in enumerate(brokers):
            for j, p in enumerate(parts):
                if p.tp.topic == topic:
                    rows[r, j * len(brokers) + i] = 1
            rows[r, n_y + t * len(brokers) + i] = -1
            lows.append(-np.inf)
            highs.append(full.get((topic, b), 0))
            r += 1
    cost = np.r_[np.zeros(n_y), np.ones(n - n_y)]
    found = milp(
        cost,
        constraints=LinearConstraint(rows.tocsr(), lows, highs),
        integrality=np.r_[np.ones(n_y), np.zeros(n - n_y)],
        bounds=Bounds(np.zeros(n), np.r_[np.ones(n_y), np.full(n - n_y, np.inf)]),
    )
    assert found.success
    return round(found.fun)


CASES = {
    "brokers added": with_new_brokers(balanced(6, 3, 4, 6, 3), 3, 3),
    "skewed start": rack_clean_skewed(9, 3, 3, 8, seed=4),
    "unequal racks": with_new_brokers(balanced(6, 3, 5, 6, 3), 1, 3),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("share", [0.1, 0.3, 0.6])
def test_a_step_leaves_the_least_imbalance_any_plan_within_its_budget_can(name: str, share: float) -> None:
    snapshot = CASES[name]
    layout = RackLayout.of(snapshot.racks, snapshot.broker_ids)
    assert all(layout.outside(p.replicas) == 0 for p in snapshot.partitions)  # a rack-clean start
    whole = plan(snapshot, Goal())
    assert whole.report is not None and whole.report.replica_moves >= 5
    after = {m.tp: m.target for m in whole.moves}
    full = Counter((p.tp.topic, b) for p in snapshot.partitions for b in after.get(p.tp, p.replicas))
    budget = max(1, round(share * whole.report.replica_moves))
    step = plan(snapshot, replace(Goal(), max_moves=budget))
    assert step.report is not None and step.report.budget is not None
    left = step.report.budget["imbalance_after"]
    best = least_imbalance(snapshot, dict(full), budget)
    assert best <= left <= best + 0.02 * step.report.budget["imbalance_before"]


@pytest.mark.parametrize(
    ("snapshot", "goal"),
    [
        # Replicas leave two brokers, and other replicas move for each topic's spread: moves that
        # take nothing out of place by themselves, which a step leaves for later.
        (
            generated(brokers=10, racks=3, topics=6, partitions=15, rf=3, seed=3),
            Goal(brokers=frozenset(range(2, 10))),
        ),
        # Raising the replication factor: each replica added is one less missing.
        (
            generated(brokers=9, racks=3, topics=4, partitions=12, rf=2, seed=7),
            Goal(replication_factors={f"topic-{t:03d}": 3 for t in range(4)}),
        ),
    ],
)
@pytest.mark.parametrize("budget", [1, 9, 30])
def test_every_move_of_a_step_takes_one_replica_out_of_place_while_the_full_plan_has_such_moves(
    snapshot: ClusterSnapshot, goal: Goal, budget: int
) -> None:
    # One replica move takes at most one replica out of place: no plan of N moves leaves less
    # than the imbalance before minus N, and a step that reaches it is the best there is.
    step = plan(snapshot, replace(goal, max_moves=budget))
    assert step.report is not None and step.report.budget is not None
    figures = step.report.budget
    assert figures["moves"] == budget
    assert figures["imbalance_after"] == figures["imbalance_before"] - budget
