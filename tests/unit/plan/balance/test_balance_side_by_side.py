"""Independent work side by side on the cores, in the order given, never nested."""

from __future__ import annotations

import threading

import pytest

from ferry.plan.balance.solvers import side_by_side as module
from ferry.plan.balance.solvers.side_by_side import side_by_side


def test_answers_come_in_the_order_given_and_nested_work_stays_in_its_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(module, "cores", lambda: 4)
    outer_threads: set[int] = set()

    def inner(item: int) -> tuple[int, int]:
        return item * 10, threading.get_ident()

    def outer(item: int) -> tuple[int, list[int]]:
        me = threading.get_ident()
        outer_threads.add(me)
        found = side_by_side(inner, [item, item + 1, item + 2])
        assert {ident for _, ident in found} == {me}  # no pool inside a pool's worker
        return item, [value for value, _ in found]

    got = side_by_side(outer, list(range(8)))
    assert got == [(i, [10 * i, 10 * i + 10, 10 * i + 20]) for i in range(8)]
    assert threading.get_ident() not in outer_threads  # the outer work ran in workers
