"""What the balance program's min-cost flow pays for its tie-breaks: its largest network solved again
with fewer of them.

The pooled balance program is one min-cost flow (:mod:`ferry.plan.balance.solvers.transport`) whose
costs rank, in one integer, kept replicas first, then the kept bytes and the pools' fines (which
spread pooled extras over many topics): a kept replica is worth more than every size term and fine
together. OR-Tools' cost scaling takes a round per fivefold of the costs' range, so that range is
part of the solve time. This plans a shape of `benchmarks/shapes.py` up to its balance program
(the exact pass left out), keeps the largest network the program solves, and solves it again:

- as planned (kept replicas, bytes and fines, :meth:`Transport.solve`);
- kept replicas alone (a cost of one per kept replica);
- kept replicas and bytes, no fines: a kept replica worth one more than every kept column's size
  term together;
- kept replicas and fines, no bytes: a kept replica worth one more than every column's fines at its
  capacity.

Each line gives the wall seconds of OR-Tools' solves (as planned, a first attempt the solver refuses
for its costs' range counts too), the costs' largest magnitude and the replicas kept, which every
variant must keep alike (they differ only below one kept replica).
Usage:

    .venv/bin/python benchmarks/flow_costs.py --shape "racks of 30" --scale 0.1
    .venv/bin/python benchmarks/flow_costs.py --shape skewed --scale 1 --seed 11
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import shapes
from ferry.model import ClusterSnapshot, Goal
from ferry.plan import planner
from ferry.plan.balance import assign_extras as balance
from ferry.plan.balance.solvers import transport
from ferry.plan.balance.solvers.transport import Transport, size_steps
from ferry.plan.gc_pause import paused
from ferry.plan.racks import RackLayout

Largest = dict[str, Any]
"""The largest network solved: the network, and its columns' gains, sizes and fines."""


def largest_network(shape: shapes.Shape, seed: int) -> Largest:
    """Plan ``shape`` up to its balance program; the largest network the program solved."""
    drawn, wanted = shapes.snapshot_and_goal(shapes.generate(shape, seed))
    snapshot, goal = cast(ClusterSnapshot, drawn), cast(Goal, wanted)
    layout = RackLayout.of(snapshot.racks, planner.target_brokers(snapshot, goal))
    kept: Largest = {}
    solve = Transport.solve

    def watched(
        network: Transport, gain: np.ndarray, size: np.ndarray, fines: np.ndarray | None = None
    ) -> Any:
        if network.columns > kept.get("columns", 0):
            kept.update(columns=network.columns, network=network, gain=gain, size=size, fines=fines)
        return solve(network, gain, size, fines)

    realise = balance.realise
    Transport.solve = watched
    balance.realise = lambda layout, demands, solved: solved  # the program's answer alone
    try:
        with paused():
            topics = list(planner.in_scope(snapshot, goal))
            demands = planner.demands_of(topics, goal, layout)
            balance.assign_extras(layout, demands)
    finally:
        Transport.solve = solve
        balance.realise = realise
    if not kept:
        raise SystemExit(f"{shape.name}: the balance program solved no network")
    return kept


def variants(found: Largest) -> dict[str, np.ndarray]:
    """Per variant (module docstring) its integer costs per column; "as planned" is left to
    :meth:`Transport.solve`."""
    network: Transport = found["network"]
    gain = np.asarray(found["gain"], dtype=np.int64)
    size = np.asarray(found["size"], dtype=np.float64)
    fines = np.zeros(network.columns, dtype=np.int64) if found["fines"] is None else found["fines"]
    carried = np.maximum(network.column_cap, 0)
    quanta = size_steps(size)
    bytes_worth = int((carried * quanta).sum()) + 1
    fines_worth = int((carried * fines).sum()) + 1
    return {
        "kept replicas alone": -gain,
        "kept replicas and bytes": -(gain * bytes_worth + quanta),
        "kept replicas and fines": -gain * fines_worth + fines,
    }


@contextmanager
def solve_clock() -> Iterator[list[float]]:
    """Wall seconds of every OR-Tools solve inside the block, appended to the list it yields."""
    from ortools.graph.python import min_cost_flow

    solve = min_cost_flow.SimpleMinCostFlow.solve
    spent: list[float] = []

    def clocked(flow: Any) -> Any:
        start = time.perf_counter()
        try:
            return solve(flow)
        finally:
            spent.append(time.perf_counter() - start)

    min_cost_flow.SimpleMinCostFlow.solve = clocked
    try:
        yield spent
    finally:
        min_cost_flow.SimpleMinCostFlow.solve = solve


def line(name: str, seconds: list[float], largest: float, flows: object, gain: np.ndarray) -> str:
    """A row of the table; a flow refused (its cost range) or not solved says so."""
    solved = f"{sum(seconds):.2f}" + (f" ({len(seconds)} solves)" if len(seconds) > 1 else "")
    if not isinstance(flows, np.ndarray):
        return f"| {name} | {solved} | {largest:.3g} | not solved: {type(flows).__name__} |"
    return f"| {name} | {solved} | {largest:.3g} | {int(np.rint(flows).astype(np.int64) @ gain):,} |"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shape", required=True, help="part of a benchmarks/shapes.py shape's name")
    parser.add_argument("--scale", type=float, default=0.1, help="times its topics (1: a million partitions)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    found_shapes = [s for s in shapes.SHAPES if args.shape in s.name]
    if not found_shapes:
        parser.error(f"--shape: no shape named like {args.shape!r}")
    shape = found_shapes[0].scaled(args.scale, "")
    found = largest_network(shape, args.seed)
    network: Transport = found["network"]
    gain = np.asarray(found["gain"], dtype=np.int64)
    print(f"{shape.name}, scale {args.scale}, seed {args.seed}: the largest network has")
    print(f"{len(network.supply):,} nodes, {network.columns + len(network.inner.tails):,} arcs\n")
    print("| costs | solve s | largest cost | replicas kept |")
    print("|---|---|---|---|")
    largest: list[float] = []
    costs_of = transport._costs

    def recorded(*args: Any, **kwargs: Any) -> Any:
        costs = costs_of(*args, **kwargs)
        largest.append(0.0 if costs is None else float(np.abs(costs).max(initial=0)))
        return costs

    transport._costs = recorded
    try:
        with solve_clock() as seconds:
            planned = network.solve(gain, found["size"], found["fines"])
    finally:
        transport._costs = costs_of
    print(line("as planned", seconds, largest[-1], planned, gain))
    for name, costs in variants(found).items():
        with solve_clock() as seconds:
            flows = network._solved(costs)
        print(line(name, seconds, float(np.abs(costs).max(initial=0)), flows, gain))


if __name__ == "__main__":
    main()
