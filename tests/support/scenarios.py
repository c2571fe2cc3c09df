"""Named (snapshot, goal) cases for checking that every engine plans exactly what ``plan()`` plans.

The clusters of the planner's named scenarios (tests/unit/plan/test_scenarios.py) plus random ones
of several shapes: racks dividing the brokers or not, no racks, skew, RF changes, scopes, both rack
modes, a replace goal.
"""

from __future__ import annotations

from support.clusters import balanced, generated, unequal_racks, with_new_brokers

from ferry.model import ClusterSnapshot, Goal, RackMode

Case = tuple[str, ClusterSnapshot, Goal]


def named() -> list[Case]:
    return [
        ("add-two-to-six", with_new_brokers(balanced(6, 2, 4, 12, 2), 2, racks=2), Goal()),
        ("decommission", balanced(10, 2, 5, 20, 3), Goal(brokers=frozenset(range(8)))),
        (
            "skewed",
            generated(brokers=9, racks=3, topics=6, partitions=30, rf=3, seed=3, skew=2.0),
            Goal(),
        ),
        ("rf-up", balanced(6, 3, 2, 12, 2), Goal(replication_factors={"topic-000": 3})),
        ("rf-down", balanced(6, 3, 2, 12, 3), Goal(replication_factors={"topic-001": 2})),
        ("no-racks", with_new_brokers(balanced(5, 0, 3, 10, 3), 1, racks=0), Goal()),
        (
            "scoped",
            with_new_brokers(balanced(4, 2, 3, 8, 2), 2, racks=2),
            Goal(topics=frozenset({"topic-001"})),
        ),
        ("replace", with_new_brokers(balanced(6, 3, 3, 10, 3), 1, racks=3), Goal(replace=((3, 6),))),
        # Racks of 5, 4 and 1: RF 3 overloads the lone broker, RF 1 and 2 topics make up for it.
        (
            "unequal-racks",
            unequal_racks((5, 4, 1), [(7, 3), (12, 3), (5, 1), (9, 2), (13, 2)], seed=5),
            Goal(),
        ),
    ]


def random_cases(count: int, seed: int = 11) -> list[Case]:
    """``count`` generated clusters; the shape rotates with the index, the placement with the seed."""
    out = []
    for i in range(count):
        brokers = 6 + (i * 5) % 11
        racks = (0, 2, 3, 4)[i % 4]
        snapshot = generated(
            brokers=brokers,
            racks=racks,
            topics=2 + i % 5,
            partitions=5 + (i * 7) % 23,
            rf=min(3, brokers - 1),
            seed=seed + i,
            occupied=brokers - 2 if i % 3 == 0 else None,
            skew=(0.0, 0.5, 2.0)[i % 3],
        )
        mode = RackMode.EVEN if i % 5 == 4 else RackMode.STRICT
        goal = Goal(rack_mode=mode, exclude_topics=frozenset({"topic-001"}) if i % 6 == 5 else frozenset())
        out.append((f"random-{i:02d}", snapshot, goal))
    return out
