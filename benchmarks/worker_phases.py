"""Where the Spark engine's CPU goes around the placing stage, outside Spark, part by part.

The driver works out the topics' demands from the snapshot it loaded (as planning in process does)
and solves the balance program; the placing stage then runs :func:`ferry.pipeline.kernel.place_bucket`
on each bucket of topics, whose Arrow rows first become ``PartitionState`` objects. This times
those parts over every bucket of a generated shape of ``benchmarks/shapes.py``, in one process,
with the garbage collector paused as the engine runs them (CPU seconds; the balance program is
solved between, untimed); Spark's own costs (its Python workers, the JVM's transfers) are not in
it. Usage:

    .venv/bin/python benchmarks/worker_phases.py                       # 1M, "grown 180->200"
    .venv/bin/python benchmarks/worker_phases.py --partitions 100000 --shape "remove 20 of 200"
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from contextlib import contextmanager

import shapes
from ferry.model import PlanJob
from ferry.pipeline.buckets import from_blob, partitions_table, split, to_blob
from ferry.pipeline.driver import context_of, demands
from ferry.pipeline.kernel import place_bucket, solve, topics_of
from ferry.plan.gc_pause import paused


@contextmanager
def _clock(spent: dict[str, float], part: str) -> Iterator[None]:
    start = time.process_time()
    yield
    spent[part] = spent.get(part, 0.0) + time.process_time() - start


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--partitions", type=int, default=1_000_000)
    parser.add_argument("--shape", default="grown 180->200", help="a name of shapes.SHAPES")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--buckets", type=int, default=16, help="the engine's count on local[2]: 16")
    args = parser.parse_args()
    shape = next((s for s in shapes.SHAPES if s.name == args.shape), None)
    if shape is None:
        names = ", ".join(s.name for s in shapes.SHAPES)
        parser.error(f"--shape: none named {args.shape!r} (shapes: {names})")
    scaled = shape.scaled(args.partitions / 1_000_000, "")
    snapshot, goal = shapes.snapshot_and_goal(shapes.generate(scaled, args.seed))
    job = PlanJob("cluster", "generated", snapshot, goal)  # type: ignore[arg-type]
    context = context_of(job)
    contexts = {job.name: context}
    spent: dict[str, float] = {}
    with paused():
        buckets = [from_blob(to_blob(b)) for b in split(partitions_table(job), args.buckets)]
        with _clock(spent, "the demands (the driver: planning in process does the same)"):
            topics, found = demands(job, context)
        decisions = solve(job.name, context.layout, topics, found).decisions
        for bucket in buckets:
            with _clock(spent, "Arrow rows to PartitionState objects (inside place_bucket)"):
                list(topics_of(bucket, contexts))
            with _clock(spent, "place_bucket (the placing stage, those objects included)"):
                place_bucket(bucket, contexts, decisions)
    partitions = sum(b.num_rows for b in buckets)
    print(f"{args.shape}, seed {args.seed}: {partitions:,} partitions, {len(topics):,} topics", end=", ")
    print(f"{args.buckets} buckets")
    print()
    print("| part | CPU s |")
    print("|---|---|")
    for part, seconds in spent.items():
        print(f"| {part} | {seconds:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
