"""The broker that takes a replica sent aside: the least loaded one allowed, the lowest id on a tie."""

from __future__ import annotations

from collections import Counter

from ferry.plan.place.takers import least_loaded
from ferry.plan.racks import RackLayout


def test_the_least_loaded_allowed_broker_takes_it() -> None:
    layout = RackLayout.of({1: "a", 2: "a", 3: "b", 4: "b"}, [1, 2, 3, 4])
    load = Counter({1: 5, 2: 3, 3: 3, 4: 9})
    assert least_loaded(layout, load, lambda b: True) == 2  # 2 and 3 tie: the lower id
    assert least_loaded(layout, load, lambda b: b != 2) == 3
    assert least_loaded(layout, Counter({1: 1}), lambda b: b in (1, 4)) == 4  # none counted: 0
    assert least_loaded(layout, load, lambda b: False) is None
