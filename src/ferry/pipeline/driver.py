"""The driver's share of planning: the global phases between and after the per-topic passes.

Pure (no Spark): :mod:`ferry.pipeline.job` feeds it what the workers returned. Run in this order the
phases give exactly what ``ferry.plan.planner.plan`` gives (the planner's contract for its phases).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from ferry.model import Plan, PlanJob, TopicPartition
from ferry.pipeline.kernel import ClusterContext
from ferry.plan.planner import (
    TopicDemand,
    assemble,
    demands_of,
    in_scope,
    per_topic_phases,
    plan,
    report_before,
    target_brokers,
)


def context_of(job: PlanJob) -> ClusterContext:
    """What the workers need of the cluster to run its per-topic phases."""
    return ClusterContext(
        job.name, job.goal, job.snapshot.racks, tuple(target_brokers(job.snapshot, job.goal))
    )


def is_distributed(job: PlanJob) -> bool:
    """Whether the job's per-topic passes run on Spark; a goal without them
    (:func:`~ferry.plan.planner.per_topic_phases`) is planned on the driver."""
    return per_topic_phases(job.goal)


def whole_by_size(sizes: Mapping[str, int], always: Collection[str], slots: int) -> list[str]:
    """The clusters of a fleet (``sizes``: their partition counts) to plan whole, one task each,
    biggest first.

    A cluster at most ``1 / (2 * slots)`` of the fleet's partitions is one task among enough others
    to keep every slot busy, and a task that plans it whole skips the placing pass's shuffle and
    the driver's demands, balance program and finish. A bigger one would keep its slot busy after
    the others finished: the driver prepares and balances it, and its topics are placed spread over
    the slots. A single cluster always is, unless it is one of ``always``: those without per-topic passes
    (:func:`~ferry.plan.planner.per_topic_phases`), which are planned whole.
    """
    cap = sum(sizes.values()) / (2 * max(slots, 1)) if len(sizes) > 1 else -1
    chosen = [name for name, size in sizes.items() if size <= cap or name in always]
    return sorted(chosen, key=lambda name: (-sizes[name], name))


def demands(job: PlanJob, context: ClusterContext) -> tuple[list[str], list[TopicDemand]]:
    """The cluster's in-scope topics in the planner's order, and what each asks of the balance
    program, worked out here, in bulk, as ``--engine local`` does.

    Not on the workers: the driver holds the cluster (it read and checked it) and solves the program
    over every topic's demand, so shipping the partitions out and a million demands back, pickled,
    cost more than it spread over two cores (docs/benchmarks.md, "Shapes at scale"), and here
    it runs while the Spark session starts. Without the topics' scratch state
    (:func:`~ferry.plan.planner.demands_of`): the workers build their own to place them."""
    topics = list(in_scope(job.snapshot, job.goal))
    return [parts[0].tp.topic for parts in topics], demands_of(topics, job.goal, context.layout)


def finish(
    job: PlanJob,
    context: ClusterContext,
    bound: int,
    placed: Mapping[TopicPartition, tuple[int, ...]],
    fallbacks: int,
    before: Mapping[str, int] | None = None,
) -> Plan:
    """Preferred leaders, moves and report over the planned replicas the workers sent back (the
    partitions they leave out keep their replicas); ``before``: :func:`balance_before`'s figures."""
    planned = []
    for parts in in_scope(job.snapshot, job.goal):
        if parts[0].tp not in placed:
            raise RuntimeError(f"{job.name}: no placement came back for topic {parts[0].tp.topic}")
        for state in parts:
            planned.append((state, placed.get(state.tp, state.replicas)))
    return assemble(job.snapshot, job.goal, list(context.targets), planned, bound, fallbacks, before)


def balance_before(job: PlanJob, context: ClusterContext) -> dict[str, int]:
    """The report's balance figures before the plan, which read the snapshot alone: counted while
    the workers place the topics, the driver having nothing else to do then."""
    return report_before(job.snapshot, job.goal, context.targets)


def plan_on_driver(job: PlanJob) -> Plan:
    """The whole plan in this process (a job that is not :func:`is_distributed`)."""
    return plan(job.snapshot, job.goal)


def placed_rows(
    rows: Iterable[tuple[str, str, int, list[int], int, float]],
) -> tuple[dict[str, dict[TopicPartition, tuple[int, ...]]], dict[str, int], dict[str, float]]:
    """The placing pass's rows -> per cluster: planned replicas by partition, fallbacks, worker seconds."""
    placed: dict[str, dict[TopicPartition, tuple[int, ...]]] = {}
    fallbacks: dict[str, int] = {}
    seconds: dict[str, float] = {}
    for cluster, topic, number, replicas, fallback, spent in rows:
        placed.setdefault(cluster, {})[TopicPartition(topic, number)] = tuple(replicas)
        fallbacks[cluster] = fallbacks.get(cluster, 0) + fallback
        seconds[cluster] = seconds.get(cluster, 0.0) + spent
    return placed, fallbacks, seconds
