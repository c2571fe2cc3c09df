"""How much faster two cores of this machine do the planning kernel's work than one.

The ceiling for local[2] against local[1]: the kernel's per-topic work (``prepare_topic`` and
``place_topic`` on generated topics, pure Python, no Spark, no I/O) is run in one process alone,
then in two processes at once, each doing the same amount. Speed-up = 2 x (time alone) / (wall time
of the pair). Two independent processes share nothing but the machine, so this is as parallel as
any engine can make the work; a Spark job adds its JVM, its shuffles and its serial driver on top.
Alone and paired rounds alternate, so a slow spell of the host shows up in both. Usage:

    .venv/bin/python benchmarks/machine_parallelism.py                # 5 rounds
    .venv/bin/python benchmarks/machine_parallelism.py --rounds 10 --topics 400
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from ferry.model import Goal, PartitionState, TopicPartition
from ferry.plan.balance import assign_extras
from ferry.plan.collector import paused
from ferry.plan.planner import place_topic, prepare_topic
from ferry.plan.racks import RackLayout

BROKERS, RACKS, NEW, RF, PER_TOPIC = 200, 10, 10, 3, 100
"""As benchmarks/pipeline_scale.py generates its clusters."""


def topics(count: int, seed: int) -> list[list[PartitionState]]:
    rng = np.random.default_rng(seed)
    old = BROKERS - NEW
    out = []
    for t in range(count):
        start = rng.integers(0, old, PER_TOPIC)
        sizes = rng.integers(10**6, 10**10, PER_TOPIC)
        parts = []
        for p in range(PER_TOPIC):
            replicas = tuple(int((start[p] + r) % old) for r in range(RF))
            parts.append(
                PartitionState(
                    TopicPartition(f"topic-{t:06d}", p), replicas, replicas[0], replicas, int(sizes[p])
                )
            )
        out.append(parts)
    return out


def work(count: int, barrier: Any = None) -> tuple[float, float]:
    """Start and end (CLOCK_MONOTONIC, the same in every process) of preparing, balancing and
    placing ``count`` topics; the data is built first, and a pair waits at ``barrier`` to start."""
    layout = RackLayout.of({b: f"r{b % RACKS}" for b in range(BROKERS)}, range(BROKERS))
    goal = Goal()
    data = topics(count, seed=count)
    with paused():
        if barrier is not None:
            barrier.wait()
        start = time.perf_counter()
        prepared = [prepare_topic(parts, goal, layout) for parts in data]
        outcome = assign_extras(layout, [d for _, d in prepared])
        for (topic, _), quota, keeps in zip(prepared, outcome.quotas, outcome.keeps, strict=True):
            place_topic(topic, layout, quota, keeps, goal.rack_mode)
        return start, time.perf_counter()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--topics", type=int, default=300, help="topics of 100 partitions per process")
    args = parser.parse_args()
    print("| round | alone s | paired: each s | paired wall s | speed-up |\n|---|---|---|---|---|")
    ups = []
    with ProcessPoolExecutor(max_workers=2) as pool, multiprocessing.Manager() as manager:
        barrier = manager.Barrier(2)
        list(pool.map(work, [10, 10], [barrier, barrier]))  # both workers started and warm
        for i in range(args.rounds):
            begin, end = pool.submit(work, args.topics).result()
            alone = end - begin
            both = list(pool.map(work, [args.topics, args.topics], [barrier, barrier]))
            wall = max(e for _, e in both) - min(s for s, _ in both)
            ups.append(2 * alone / wall)
            each = " / ".join(f"{e - s:.2f}" for s, e in both)
            print(f"| {i + 1} | {alone:.2f} | {each} | {wall:.2f} | {ups[-1]:.2f} |", flush=True)
    print(f"\nspeed-up median {statistics.median(ups):.2f}, min {min(ups):.2f}, max {max(ups):.2f}")


if __name__ == "__main__":
    main()
