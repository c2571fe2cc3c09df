"""A min-cost flow solved part by part where its network falls apart.

Under the strict rack rule with as many replicas as racks, every rack's share of every topic is
fixed: the arcs from a topic to its racks carry exactly their lower bounds, and once those are folded
into the supplies nothing but the sink joins one rack's brokers, pools and kept replicas to
another's. Each part then gets a sink of its own, taking what the part supplies, and is solved on its
own, each in a forked copy of this process where there is more than one core (OR-Tools keeps the
interpreter while it solves), all at once: three racks' parts on two cores end after about one and
a half parts' work, where two cores taking whole parts would end after two. The flows are those of
the whole: a flow of the network is one of each part, and its cost their sum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ferry.plan.forked import forked_each

PART_FROM = 20_000
"""Fewest arcs of a part solved on its own; the smaller parts are solved together."""

OPTIMAL, INFEASIBLE, COST_RANGE, FAILED = "optimal", "infeasible", "cost range", "failed"
"""What a solve came to: flows at an optimum, no flow meets the bounds, the costs' range too wide
for the solver's 64 bits, anything else."""


@dataclass(frozen=True)
class Network:
    """Arcs (tail, head, capacity, cost) over nodes with a supply each; the last node is the sink,
    which arcs only enter."""

    tails: np.ndarray
    heads: np.ndarray
    caps: np.ndarray
    costs: np.ndarray
    supply: np.ndarray


def with_lows(
    arcs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray], supply: np.ndarray
) -> Network:
    """Arcs (tail, head, lower bound, capacity, cost) as a :class:`Network` over nodes with ``supply``
    (the last node the sink, taking what the others supply): a lower bound is flow that must pass,
    so it leaves the tail's supply and joins the head's, and the arc keeps the room above it."""
    tails, heads, lows, highs, costs = arcs
    supply = supply.copy()
    np.subtract.at(supply, tails, lows)
    np.add.at(supply, heads, lows)
    supply[-1] -= supply.sum()
    return Network(tails, heads, highs - lows, costs, supply)


def min_cost_flow(network: Network) -> tuple[str, np.ndarray | None]:
    """What the solve came to and, at an optimum, the flow on each arc (module docstring)."""
    part = _parts(network)
    if part is None:
        return _solved(network)
    count = int(part.max()) + 1
    live = network.caps > 0
    arc_part = np.where(live, part[network.tails], -1)
    answers = forked_each(lambda p: _solved(_part(network, part, arc_part, p)), count)
    flows = np.zeros(len(network.tails), dtype=np.int64)
    for p, (status, found) in enumerate(answers):
        if found is None:
            return status, None
        flows[arc_part == p] = found
    return OPTIMAL, flows


def _parts(network: Network) -> np.ndarray | None:
    """Per node but the sink, the part it is solved in; ``None`` where the network does not fall
    apart into two parts of :data:`PART_FROM` arcs or more."""
    sink = len(network.supply) - 1
    tails, heads = network.tails, network.heads
    # Too small for two parts: scipy's graph routines not even loaded.
    if len(tails) < 2 * PART_FROM or np.any(tails == sink):
        return None
    from scipy.sparse import coo_array
    from scipy.sparse.csgraph import connected_components

    inside = (network.caps > 0) & (heads != sink)
    # Handed a CSR matrix of float64 weights, scipy's graph routines take it as it is; a COO one (of
    # 64-bit ends) they copy and convert, which at ten million arcs costs seconds and hundreds of MiB.
    index = np.int32 if sink < np.iinfo(np.int32).max else np.int64
    ends = (tails[inside].astype(index), heads[inside].astype(index))
    links = coo_array((np.ones(len(ends[0])), ends), shape=(sink, sink)).tocsr()
    del ends
    count, labels = connected_components(links, directed=False)
    if count < 2:
        return None
    arcs = np.bincount(labels[tails[network.caps > 0]], minlength=count)
    large = arcs >= PART_FROM
    if int(large.sum()) < 2:
        return None
    # The large parts each on their own, in order; every small one together after them.
    number = np.where(large, np.cumsum(large) - 1, int(large.sum()))
    out: np.ndarray = number[labels]
    return out


def _part(network: Network, part: np.ndarray, arc_part: np.ndarray, p: int) -> Network:
    """Part ``p`` of the network: its nodes renumbered in order, its arcs with flow room (those into
    the sink into a sink of its own), and that sink taking what the part supplies."""
    nodes = np.flatnonzero(part == p)
    local = np.full(len(network.supply), -1, dtype=np.int64)
    local[nodes] = np.arange(len(nodes))
    local[-1] = len(nodes)
    mine = arc_part == p
    supply = network.supply[nodes]
    return Network(
        local[network.tails[mine]],
        local[network.heads[mine]],
        network.caps[mine],
        network.costs[mine],
        np.append(supply, -supply.sum()),
    )


def _solved(network: Network) -> tuple[str, np.ndarray | None]:
    """One solve of ``network`` by OR-Tools' min-cost flow (cost scaling)."""
    from ortools.graph.python import min_cost_flow as ortools_flow

    flow = ortools_flow.SimpleMinCostFlow()
    flow.add_arcs_with_capacity_and_unit_cost(network.tails, network.heads, network.caps, network.costs)
    flow.set_nodes_supplies(np.arange(len(network.supply)), network.supply)
    status = flow.solve()
    if status == flow.OPTIMAL:
        found: np.ndarray = flow.flows(np.arange(len(network.tails)))
        return OPTIMAL, found
    if status == flow.INFEASIBLE:
        return INFEASIBLE, None
    if status == flow.BAD_COST_RANGE:
        return COST_RANGE, None
    return FAILED, None
