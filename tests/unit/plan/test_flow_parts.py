"""A min-cost flow whose network falls apart but for its sink is solved part by part, each part with
a sink of its own (ferry.plan.balance.solvers.flow_parts), at the cost of the whole."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ferry.plan.balance.solvers import flow_parts
from ferry.plan.balance.solvers.flow_parts import INFEASIBLE, OPTIMAL, Network, _parts, _solved, min_cost_flow


@st.composite
def racks(draw: st.DrawFn, linked: bool = False) -> Network:
    """Topics feeding brokers rack by rack, every broker into the sink within a band; with ``linked``,
    one topic also feeds a broker of the next rack."""
    tails: list[int] = []
    heads: list[int] = []
    caps: list[int] = []
    costs: list[int] = []
    supply: list[int] = []
    bands: list[tuple[int, int]] = []
    for _ in range(draw(st.integers(2, 4))):
        topics = [len(supply) + i for i in range(draw(st.integers(1, 4)))]
        supply += [draw(st.integers(0, 4)) for _ in topics]
        brokers = [len(supply) + i for i in range(draw(st.integers(1, 4)))]
        supply += [0] * len(brokers)
        for t in topics:
            for b in brokers:
                tails.append(t)
                heads.append(b)
                caps.append(1)
                costs.append(draw(st.integers(-3, 3)))
        bands += [(b, draw(st.integers(1, 4))) for b in brokers]
    if linked:
        tails.append(0)
        heads.append(len(supply) - 1)
        caps.append(1)
        costs.append(-5)
    sink = len(supply)
    for b, cap in bands:
        tails.append(b)
        heads.append(sink)
        caps.append(cap)
        costs.append(0)
    supply.append(-sum(supply))
    return Network(*(np.array(values, dtype=np.int64) for values in (tails, heads, caps, costs, supply)))


@contextmanager
def _every_part_apart() -> Iterator[None]:
    """Parts of any size solved apart (the drawn networks are small)."""
    previous = flow_parts.PART_FROM
    flow_parts.PART_FROM = 1
    try:
        yield
    finally:
        flow_parts.PART_FROM = previous


def _cost(network: Network, flows: np.ndarray) -> int:
    return int(flows @ network.costs)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(racks())
def test_parts_solved_apart_cost_what_the_whole_costs(network: Network) -> None:
    whole, whole_flows = _solved(network)
    with _every_part_apart():
        assert _parts(network) is not None
        status, flows = min_cost_flow(network)
    assert (status == INFEASIBLE) == (whole == INFEASIBLE)
    if status != OPTIMAL:
        return
    assert flows is not None and whole_flows is not None
    assert _cost(network, flows) == _cost(network, whole_flows)
    assert np.all((flows >= 0) & (flows <= network.caps))
    # Every node but the sink passes on what it takes in, plus its supply.
    net = np.bincount(network.tails, flows, len(network.supply)) - np.bincount(
        network.heads, flows, len(network.supply)
    )
    assert np.array_equal(net[:-1], network.supply[:-1])


@settings(max_examples=50, deadline=None, derandomize=True)
@given(racks(linked=True))
def test_a_network_linked_across_its_racks_keeps_the_linked_racks_together(network: Network) -> None:
    with _every_part_apart():
        labels = _parts(network)
    # The first topic's link joins the first rack to the last: what is left apart is one part less.
    if labels is not None:
        assert labels[0] == labels[len(network.supply) - 2]
