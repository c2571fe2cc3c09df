"""Where the Spark engine's prepare stage spends its CPU, outside Spark, against planning in process.

The Spark engine's first stage runs :func:`ferry.pipeline.kernel.prepare_bucket` on each bucket of
topics: the bucket's Arrow rows become ``PartitionState`` objects, the topics are prepared, and
each topic's demand goes back to the driver pickled, where it is unpickled. Planning in process
prepares the same topics from the snapshot it loaded, without the other three. This times each
part over every bucket of a generated shape of ``benchmarks/shapes.py``, in one process, with the
garbage collector paused as the workers run it (CPU seconds, summed over the buckets); Spark's own
costs (its Python workers, the JVM's transfers) are not in it. Usage:

    .venv/bin/python benchmarks/worker_phases.py                       # 1M, "grown 180->200"
    .venv/bin/python benchmarks/worker_phases.py --partitions 100000 --shape "remove 20 of 200"
"""

from __future__ import annotations

import argparse
import pickle
import time
from collections.abc import Iterator
from contextlib import contextmanager

import shapes
from ferry.model import PlanJob
from ferry.pipeline.buckets import from_blob, partitions_table, split, to_blob
from ferry.pipeline.driver import context_of
from ferry.pipeline.kernel import load_demand, topics_of
from ferry.plan.gc_pause import paused
from ferry.plan.planner import TopicQuota, prepare_topics


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
        parser.error(
            f"--shape: none named {args.shape!r} (shapes: {', '.join(s.name for s in shapes.SHAPES)})"
        )
    snapshot, goal = shapes.snapshot_and_goal(
        shapes.generate(shape.scaled(args.partitions / 1_000_000, ""), args.seed)
    )
    job = PlanJob("cluster", "generated", snapshot, goal)  # type: ignore[arg-type]
    contexts = {job.name: context_of(job)}
    layout = contexts[job.name].layout
    spent: dict[str, float] = {}
    with paused():
        buckets = [from_blob(to_blob(b)) for b in split(partitions_table(job), args.buckets)]
        shared: dict[TopicQuota, TopicQuota] = {}
        topics = partitions = 0
        for bucket in buckets:
            with _clock(spent, "Arrow rows to PartitionState objects"):
                parts = [p for _, p in topics_of(bucket, contexts)]
            with _clock(spent, "prepare_topics (planning in process: this part only)"):
                prepared = prepare_topics(parts, goal, layout)
            with _clock(spent, "pickle each demand"):
                blobs = [pickle.dumps(d, protocol=pickle.HIGHEST_PROTOCOL) for _, d in prepared]
            with _clock(spent, "unpickle them (the driver)"):
                for blob in blobs:
                    load_demand(blob, shared)
            topics += len(parts)
            partitions += sum(len(p) for p in parts)
    print(f"{args.shape}, seed {args.seed}: {partitions:,} partitions, {topics:,} topics", end=", ")
    print(f"{args.buckets} buckets")
    print()
    print("| part | CPU s | share |")
    print("|---|---|---|")
    total = sum(spent.values())
    for part, seconds in spent.items():
        print(f"| {part} | {seconds:.2f} | {seconds / total:.0%} |")
    print(f"| all | {total:.2f} | 100% |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
