"""Plan quality and cost of the planning kernel on generated clusters, one goal per case.

Each case runs in a fresh child process (so peak memory is its own), pinned to one core where the
platform allows. Prints a Markdown table: moves / lower bound, spreads, rack violations, wall and CPU
seconds of ``plan()`` (CPU seconds are the fairer figure on a shared machine), peak RSS. Usage:

    .venv/bin/python benchmarks/plan_quality.py            # small (~3k) and large (100k) cases
    .venv/bin/python benchmarks/plan_quality.py --small    # small cases only
    .venv/bin/python benchmarks/plan_quality.py --stress   # the worst case found (100k, RF 3->2)
    .venv/bin/python benchmarks/plan_quality.py --only large --limit 900 --json out.json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import resource
import time
from dataclasses import dataclass
from queue import Empty
from typing import Any

from ferry.model import Broker, ClusterSnapshot, Goal, PartitionState, TopicPartition
from ferry.plan.planner import plan


@dataclass(frozen=True)
class Case:
    name: str
    brokers: int
    racks: int
    topics: int
    partitions: int
    rf: int
    goal: str
    delta: int = 0
    """Brokers added (add, replace) or removed (remove)."""


def interleaved(brokers: list[Broker]) -> list[int]:
    """Brokers ordered rack by rack in turn, so consecutive entries sit in different racks."""
    by_rack: dict[str | None, list[int]] = {}
    for b in brokers:
        by_rack.setdefault(b.rack, []).append(b.id)
    columns = list(by_rack.values())
    order = []
    for i in range(max(len(c) for c in columns)):
        order.extend(c[i] for c in columns if i < len(c))
    return order


def generate(case: Case, seed: int = 7) -> tuple[ClusterSnapshot, Goal]:
    """A cluster and a goal for ``case``; placements start balanced and rack-clean unless skewed."""
    rnd = random.Random(seed)
    extra = case.delta if case.goal in ("add", "replace") else 0
    nodes = [Broker(i, f"r{i % case.racks}" if case.racks else None) for i in range(case.brokers + extra)]
    live = nodes[: case.brokers]
    order = interleaved(live)
    states = []
    for t in range(case.topics):
        for p in range(case.partitions):
            if case.goal in ("rebalance", "rf-down-skewed"):
                weights = [1.0 / (1 + 0.05 * i) for i in range(len(order))]
                replicas = _weighted(rnd, order, weights, case.rf)
            else:
                start = rnd.randrange(len(order))
                replicas = [order[(start + i) % len(order)] for i in range(case.rf)]
            tp = TopicPartition(f"topic-{t:04d}", p)
            size = rnd.randint(10**6, 10**10)
            states.append(PartitionState(tp, tuple(replicas), replicas[0], tuple(replicas), size))
    snapshot = ClusterSnapshot.of(nodes, states)
    down = Goal(replication_factors={f"topic-{t:04d}": case.rf - 1 for t in range(case.topics)})
    goal = {
        "add": Goal(),
        "rebalance": Goal(),
        "remove": Goal(brokers=frozenset(range(case.brokers - case.delta))),
        "replace": Goal(replace=((0, case.brokers),)),
        "rf-up": Goal(replication_factors={f"topic-{t:04d}": case.rf + 1 for t in range(case.topics)}),
        "rf-down": down,
        "rf-down-skewed": down,
    }[case.goal]
    return snapshot, goal


def _weighted(rnd: random.Random, pool: list[int], weights: list[float], k: int) -> list[int]:
    pool, weights, chosen = list(pool), list(weights), []
    for _ in range(k):
        i = rnd.choices(range(len(pool)), weights=weights)[0]
        chosen.append(pool.pop(i))
        weights.pop(i)
    return chosen


def run_case(case: Case, queue: Any) -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    snapshot, goal = generate(case)
    start, cpu = time.perf_counter(), time.process_time()
    result = plan(snapshot, goal)
    seconds = time.perf_counter() - start
    cpu_seconds = time.process_time() - cpu
    report = dict(result.report)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    queue.put(
        {
            "case": case.__dict__,
            "seconds": seconds,
            "cpu_seconds": cpu_seconds,
            "peak_mib": peak_mib,
            "report": report,
        }
    )


def measure(case: Case, limit: float) -> dict[str, Any] | None:
    """One case in a fresh process; ``None`` if it did not finish within ``limit`` seconds."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=run_case, args=(case, queue))
    proc.start()
    try:
        out: dict[str, Any] = queue.get(timeout=limit)
    except Empty:
        proc.kill()
        return None
    finally:
        proc.join()
    return out


SMALL = [
    Case("add 3 to 24", 24, 3, 30, 100, 3, "add", 3),
    Case("add 2 to 24 (unequal racks)", 24, 3, 30, 100, 3, "add", 2),
    Case("remove 3 of 27", 27, 3, 30, 100, 3, "remove", 3),
    Case("replace 1", 24, 3, 30, 100, 3, "replace", 1),
    Case("skewed rebalance", 24, 4, 30, 100, 3, "rebalance"),
    Case("RF 2->3", 24, 4, 30, 100, 2, "rf-up"),
    Case("RF 3->2", 24, 4, 30, 100, 3, "rf-down"),
    Case("no racks, add 2", 20, 0, 30, 100, 3, "add", 2),
]
LARGE = [
    Case("large: add 6 to 54", 54, 6, 500, 200, 3, "add", 6),
    Case("large: remove 6 of 60", 60, 6, 500, 200, 3, "remove", 6),
    Case("large: skewed rebalance", 60, 6, 500, 200, 3, "rebalance"),
    Case("large: RF 3->2", 60, 6, 500, 200, 3, "rf-down"),
]
STRESS = [
    # Every partition on its own replica set (placed as in the skewed rebalance), so no two
    # partitions of a topic shrink alike: the balance program's worst case (--stress).
    Case("stress: RF 3->2, all replica sets distinct", 60, 6, 500, 200, 3, "rf-down-skewed"),
]


def row(result: dict[str, Any]) -> str:
    r, case = result["report"], result["case"]
    after = r["balance"]["after"]
    ratio = r["moves_over_bound"] if r["lower_bound"] else (1.0 if r["replica_moves"] == 0 else "inf")
    parts = case["topics"] * case["partitions"]
    return (
        f"| {case['name']} | {parts:,} | {case['brokers']}/{case['racks']} | {r['replica_moves']:,} | "
        f"{r['lower_bound']:,} | {ratio} | {after['replica_spread']} | {after['topic_replica_spread_max']} | "
        f"{after['leader_spread']} | {after['rack_violations']} | {r.get('placement_fallbacks', 0)} | "
        f"{result['seconds']:.2f} | {result['cpu_seconds']:.2f} | {result['peak_mib']:.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--small", action="store_true", help="only the ~3k-partition cases")
    parser.add_argument("--stress", action="store_true", help="only the stress case (not in the default run)")
    parser.add_argument("--json", help="also write raw results to this file")
    parser.add_argument("--only", help="run only the cases whose name contains this text")
    parser.add_argument("--limit", type=float, default=600, help="seconds per case before giving up")
    args = parser.parse_args()
    cases = SMALL if args.small else SMALL + LARGE
    if args.stress:
        cases = STRESS
    if args.only:
        cases = [c for c in cases if args.only in c.name]
    print(
        "| case | partitions | brokers/racks | moves | lower bound | moves/bound | replica spread | "
        "topic spread | leader spread | rack violations | fallbacks | seconds | CPU s | peak MiB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    results = []
    for case in cases:
        result = measure(case, args.limit)
        if result is None:
            print(f"| {case.name} | did not finish within {args.limit:.0f} s |", flush=True)
            continue
        results.append(result)
        print(row(result), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)


if __name__ == "__main__":
    main()
