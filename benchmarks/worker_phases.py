"""Where the Spark engine's prepare stage spends its CPU, outside Spark, against planning in process.

The Spark engine's first stage runs :func:`ferry.pipeline.kernel.prepare_bucket` on each bucket of
topics: the bucket's Arrow rows become ``PartitionState`` objects, the topics are prepared, and
their demands go back to the driver pickled together, where they are unpickled. Planning in process
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

import pyarrow as pa

import shapes
from ferry.model import PlanJob
from ferry.pipeline.buckets import from_blob, partitions_table, split, to_blob
from ferry.pipeline.driver import balance, context_of
from ferry.pipeline.kernel import ClusterContext, load_demands, place_bucket, topics_of
from ferry.plan.gc_pause import paused
from ferry.plan.planner import TopicDemand, TopicQuota, prepare_topics


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
    parser.add_argument(
        "--place",
        action="store_true",
        help="also the place stage: the balance program solved first (not timed), then every bucket "
        "placed (place_bucket, its Arrow rows to PartitionState objects again included)",
    )
    args = parser.parse_args()
    shape = next((s for s in shapes.SHAPES if s.name == args.shape), None)
    if shape is None:
        names = ", ".join(s.name for s in shapes.SHAPES)
        parser.error(f"--shape: none named {args.shape!r} (shapes: {names})")
    scaled = shape.scaled(args.partitions / 1_000_000, "")
    snapshot, goal = shapes.snapshot_and_goal(shapes.generate(scaled, args.seed))
    job = PlanJob("cluster", "generated", snapshot, goal)  # type: ignore[arg-type]
    contexts = {job.name: context_of(job)}
    spent: dict[str, float] = {}
    with paused():
        buckets = [from_blob(to_blob(b)) for b in split(partitions_table(job), args.buckets)]
        demands = _prepare(buckets, contexts, spent)
        if args.place:
            decisions = balance(job, contexts[job.name], demands).decisions
            for bucket in buckets:
                with _clock(spent, "place_bucket (the place stage, its Arrow rows to objects again)"):
                    place_bucket(bucket, contexts, decisions)
    partitions = sum(b.num_rows for b in buckets)
    print(f"{args.shape}, seed {args.seed}: {partitions:,} partitions, {len(demands):,} topics", end=", ")
    print(f"{args.buckets} buckets")
    print()
    print("| part | CPU s | share |")
    print("|---|---|---|")
    total = sum(spent.values())
    for part, seconds in spent.items():
        print(f"| {part} | {seconds:.2f} | {seconds / total:.0%} |")
    print(f"| all | {total:.2f} | 100% |")
    return 0


def _prepare(
    buckets: list[pa.Table], contexts: dict[str, ClusterContext], spent: dict[str, float]
) -> dict[str, TopicDemand]:
    """The prepare stage's parts over every bucket; the demands by topic, as the driver holds them."""
    (context,) = contexts.values()
    shared: dict[TopicQuota, TopicQuota] = {}
    demands: dict[str, TopicDemand] = {}
    for bucket in buckets:
        with _clock(spent, "Arrow rows to PartitionState objects"):
            parts = [p for _, p in topics_of(bucket, contexts)]
        with _clock(spent, "prepare_topics (planning in process: this part only)"):
            prepared = prepare_topics(parts, context.goal, context.layout)
        with _clock(spent, "pickle the bucket's demands together"):
            blob = pickle.dumps([d for _, d in prepared], protocol=pickle.HIGHEST_PROTOCOL)
        with _clock(spent, "unpickle them (the driver)"):
            topics = [topic[0].tp.topic for topic in parts]
            demands.update(zip(topics, load_demands(blob, shared), strict=True))
    return demands


if __name__ == "__main__":
    raise SystemExit(main())
