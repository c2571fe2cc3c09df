"""Work spread over forked processes: the answers of one process doing it all, in order."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.clusters import generated, with_new_brokers
from support.scenarios import named, random_cases

from ferry.formats import dump_reassignment
from ferry.model import Goal
from ferry.plan import forked
from ferry.plan.balance.assign_extras import assign_extras
from ferry.plan.balance.rack_totals import retarget
from ferry.plan.balance.repair import kept_flow
from ferry.plan.planner import in_scope, plan, prepare_topic, target_brokers
from ferry.plan.racks import RackLayout

pytestmark = pytest.mark.skipif(not forked._can_fork(), reason="forked_map runs in order where fork is not")


@pytest.fixture
def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spread everything over two processes, on any machine (a fork needs no second core)."""
    monkeypatch.setattr(forked, "cores", lambda: 2)
    monkeypatch.setattr(forked, "SPREAD_FROM", 0)


@pytest.mark.usefixtures("two_cores")
def test_the_answers_come_back_in_order_from_two_processes() -> None:
    parent = os.getpid()
    found = forked.forked_map(lambda i: (i * i, os.getpid()), [1] * 50)
    assert [value for value, _ in found] == [i * i for i in range(50)]
    pids = [pid for _, pid in found]
    assert pids[:25] == [parent] * 25
    assert len(set(pids[25:])) == 1 and pids[25] != parent


@pytest.mark.usefixtures("two_cores")
def test_a_child_that_dies_costs_time_not_the_answer() -> None:
    def work(i: int) -> int:
        if forked._CHILD and i == 40:
            os._exit(3)  # as the out-of-memory killer would end it
        return i + 1

    assert forked.forked_map(work, [1] * 50) == list(range(1, 51))


@pytest.mark.usefixtures("two_cores")
def test_an_error_in_a_childs_share_is_raised_here() -> None:
    def work(i: int) -> int:
        if i == 45:
            raise ValueError("item 45")
        return i

    with pytest.raises(ValueError, match="item 45"):
        forked.forked_map(work, [1] * 50)


@pytest.mark.usefixtures("two_cores")
def test_each_item_but_the_last_gets_a_process_of_its_own_and_the_answers_come_back_in_order() -> None:
    """Four items on two cores run at once, each in its own process but the last, done here."""
    parent = os.getpid()
    found = forked.forked_each(lambda i: (i * i, os.getpid()), 4)
    assert [value for value, _ in found] == [0, 1, 4, 9]
    pids = [pid for _, pid in found]
    assert pids[-1] == parent and len(set(pids)) == 4


@pytest.mark.usefixtures("two_cores")
def test_an_item_whose_child_dies_is_done_here() -> None:
    def work(i: int) -> int:
        if forked._CHILD and i == 1:
            os._exit(3)
        return i + 1

    assert forked.forked_each(work, 3) == [1, 2, 3]


def test_each_item_runs_here_on_one_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forked, "cores", lambda: 1)
    parent = os.getpid()
    assert {pid for pid in forked.forked_each(lambda _: os.getpid(), 3)} == {parent}


def test_small_work_stays_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forked, "cores", lambda: 2)
    parent = os.getpid()
    assert {pid for pid in forked.forked_map(lambda _: os.getpid(), [1] * 50)} == {parent}


@pytest.mark.usefixtures("two_cores")
def test_work_set_aside_is_answered_by_a_child() -> None:
    parent = os.getpid()
    answer = forked.aside(lambda: (sum(range(1000)), os.getpid()), 1)
    value, pid = answer()
    assert value == 499500
    assert pid != parent


@pytest.mark.usefixtures("two_cores")
def test_work_set_aside_whose_child_dies_is_done_here() -> None:
    def work() -> int:
        if forked._CHILD:
            os._exit(3)
        return os.getpid()

    assert forked.aside(work, 1)() == os.getpid()


@pytest.mark.usefixtures("two_cores")
def test_an_error_in_work_set_aside_is_raised_here() -> None:
    def work() -> int:
        raise ValueError("set aside")

    answer = forked.aside(work, 1)
    with pytest.raises(ValueError, match="set aside"):
        answer()


def test_small_work_set_aside_stays_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forked, "cores", lambda: 2)
    assert forked.aside(os.getpid, forked.SPREAD_FROM - 1)() == os.getpid()


@given(st.lists(st.integers(0, 1000), max_size=60), st.integers(1, 8))
def test_runs_cover_the_items_in_order_with_about_equal_weight(weights: list[int], parts: int) -> None:
    runs = forked._runs(weights, parts)
    assert [i for run in runs for i in run] == list(range(len(weights)))
    assert 1 <= len(runs) <= max(1, parts)
    assert all(len(run) for run in runs) or not weights
    # Every run but the last ends at the first item that reaches its share: no run but the last
    # is heavier than a share plus its last item.
    share = sum(weights) / parts
    for run in runs[:-1]:
        assert sum(weights[i] for i in run) <= share + weights[run[-1]] + 1e-9


@pytest.mark.usefixtures("two_cores")
def test_plans_placed_in_two_processes_are_the_plans_of_one() -> None:
    # 1,000 topics over 120 brokers: a program large enough to pool idle brokers, and so to split
    # its pools rack by rack.
    pooled = with_new_brokers(
        generated(brokers=110, racks=5, topics=1000, partitions=4, rf=3, seed=3), 10, racks=5
    )
    cases = [*named(), *random_cases(12), ("pooled", pooled, Goal())]
    spread = [plan(snapshot, goal) for _, snapshot, goal in cases]
    forked.SPREAD_FROM = 1 << 62  # undone by the fixture's monkeypatch
    alone = [plan(snapshot, goal) for _, snapshot, goal in cases]
    assert [(dump_reassignment(p), p.report) for p in spread] == [
        (dump_reassignment(p), p.report) for p in alone
    ]
    assert any(p.moves for p in spread)


@pytest.mark.usefixtures("two_cores")
@pytest.mark.parametrize("fix_settled", [True, False])
def test_the_exact_flows_in_runs_over_two_processes_keep_what_one_process_keeps(fix_settled: bool) -> None:
    start = generated(brokers=20, racks=4, topics=40, partitions=6, rf=3, seed=5)
    snapshot = with_new_brokers(start, 4, racks=4)
    layout = RackLayout.of(snapshot.racks, target_brokers(snapshot, Goal()))
    demands = retarget(layout, [prepare_topic(p, Goal(), layout)[1] for p in in_scope(snapshot, Goal())])
    quotas = assign_extras(layout, demands).quotas
    solve_run = kept_flow._kept_run
    here: list[int] = []

    def counted(*args: Any) -> list[int]:
        here.append(len(args[1]))  # a child's appends stay in the child
        return solve_run(*args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kept_flow, "_kept_run", counted)
        spread = kept_flow.kept_per_topic(layout, demands, quotas, fix_settled=fix_settled)
    forked.SPREAD_FROM = 1 << 62  # undone by the fixture's monkeypatch
    alone = kept_flow.kept_per_topic(layout, demands, quotas, fix_settled=fix_settled)
    assert spread == alone
    assert len(alone) == len(demands) and all(k >= 0 for k in alone)
    # Several runs, and this process solved only its share of the topics: the child the rest.
    assert len(here) >= 2 and 0 < sum(here) < len(demands)
