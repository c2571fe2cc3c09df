"""How much faster two cores of this machine do the planning kernel's work than one.

The ceiling for local[2] against local[1]: the kernel's per-topic work (``prepare_topic`` and
``place_topic`` on generated topics, pure Python, no Spark, no I/O) is run in one process alone,
then in two processes at once, each doing the same amount. Speed-up = 2 x (time alone) / (wall time
of the pair). Two independent processes share nothing but the machine, so this is as parallel as
any engine can make the work; a Spark job adds its JVM, its shuffles and its serial driver on top.
Alone and paired rounds alternate, so a slow spell of the host shows up in both.

``--spark`` asks the same of Spark itself: a job of 16 tasks, each doing that work on generated
topics (no input, no shuffle, a few bytes of output), run under local[1] and under local[2] in
turns (one fresh process per master and round, ferry's session settings). Only the jobs are timed,
not the session start: this is the best any Spark job of that shape gets from a second task slot
here, with no driver phase to wait for. Usage:

    .venv/bin/python benchmarks/machine_parallelism.py                # 5 rounds
    .venv/bin/python benchmarks/machine_parallelism.py --rounds 10 --topics 400
    .venv/bin/python benchmarks/machine_parallelism.py --spark --rounds 3 --topics 300
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa

from ferry.model import Goal, PartitionState, TopicPartition
from ferry.plan.balance.assign_extras import assign_extras
from ferry.plan.gc_pause import paused
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


TASKS = 16
"""As many tasks per job as the pipeline's buckets on local[1] and local[2]."""


def spark_child(master: str, jobs: int, count: int) -> None:
    """One process: ferry's session on ``master``, a warm-up job, then ``jobs`` timed jobs (JSON lines)."""
    from ferry.pipeline.session import SessionSettings, spark_session

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for _ in range(batch.num_rows):
                begin, end = work(count)
                yield pa.RecordBatch.from_pydict({"seconds": [end - begin]})

    with spark_session(SessionSettings(master=master, class_archive=True)) as spark:
        frame = spark.range(TASKS, numPartitions=TASKS)
        for job in range(jobs + 1):
            start = time.perf_counter()
            rows = frame.mapInArrow(run, "seconds double").collect()
            wall = time.perf_counter() - start
            if job:
                print(json.dumps({"wall": wall, "tasks": sum(r["seconds"] for r in rows)}), flush=True)


def spark_rounds(rounds: int, count: int, jobs: int) -> None:
    """local[1] and local[2] in turns, each round a fresh process per master."""
    print(
        "| round | master | job wall s | task work s (sum) | task work s per wall s |\n|---|---|---|---|---|"
    )
    walls: dict[str, list[float]] = {"local[1]": [], "local[2]": []}
    for i in range(rounds):
        for master in walls:
            command = [
                sys.executable,
                __file__,
                "--spark-child",
                master,
                "--topics",
                str(count),
                "--jobs",
                str(jobs),
            ]
            out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            for line in out.splitlines():
                job = json.loads(line)
                walls[master].append(job["wall"])
                share = job["tasks"] / job["wall"]
                print(
                    f"| {i + 1} | {master} | {job['wall']:.2f} | {job['tasks']:.2f} | {share:.2f} |",
                    flush=True,
                )
    one, two = (statistics.median(w) for w in walls.values())
    print(f"\nmedian job wall: local[1] {one:.2f} s, local[2] {two:.2f} s, speed-up {one / two:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--topics", type=int, default=300, help="topics of 100 partitions per process or task"
    )
    parser.add_argument("--spark", action="store_true", help="Spark local[1] against local[2] instead")
    parser.add_argument("--spark-child", metavar="MASTER", help=argparse.SUPPRESS)
    parser.add_argument("--jobs", type=int, default=2, help="timed Spark jobs per process (with --spark)")
    args = parser.parse_args()
    if args.spark_child:
        spark_child(args.spark_child, args.jobs, args.topics)
        return
    if args.spark:
        spark_rounds(args.rounds, args.topics, args.jobs)
        return
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
