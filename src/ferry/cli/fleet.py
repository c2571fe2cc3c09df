"""``ferry plan --fleet DIR``: every snapshot of a folder planned in one job, one folder of plan files each.

Every snapshot is read and checked against the options before anything is written, so a bad one
fails the run with all problems listed and nothing written. Each cluster's three files are written
atomically; the summary (``fleet-summary.json`` / ``.csv``) is written last. No engine holds the
whole fleet: ``--engine local`` reads, plans and drops one snapshot after the other.

On the Spark engine the driver never holds the fleet. It sizes each snapshot without reading it
(:func:`ferry.formats.sources.partitions_about`); then a task per cluster on the workers reads and
checks its snapshot and, for a cluster that is one task among many, plans it whole there and sends
back its files, which the driver writes a cluster at a time once every snapshot has passed its
check. Only a cluster too big for one task (:func:`ferry.pipeline.driver.whole_by_size`) is read
into the driver, one at a time, and planned through the per-topic passes as a single cluster is.
The driver's memory is thus bounded by the biggest such cluster, not by the fleet.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from ferry.cli import render
from ferry.cli.disk_report import on_disks
from ferry.errors import InputError
from ferry.formats import write_files_atomic
from ferry.formats.goal_json import goal_json
from ferry.formats.parquet import is_parquet_snapshot
from ferry.formats.reassignment_json import plan_files
from ferry.formats.report_json import report_json
from ferry.formats.sources import fleet_members, load_any, partitions_about
from ferry.model import BalanceMode, ClusterSnapshot, Goal, Plan, PlanJob
from ferry.pipeline.load import summary_row, write_summary

GoalBuilder = Callable[[argparse.Namespace, ClusterSnapshot, str], Goal]


@dataclass(frozen=True, slots=True)
class Member:
    """A snapshot of the fleet: its cluster's name, its path as given and as read."""

    name: str
    source: str
    path: str


@dataclass(frozen=True, slots=True)
class Rendered:
    """A cluster's plan files (path -> text) and its fleet-summary row."""

    name: str
    files: Mapping[Path, str]
    row: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a worker made of a fleet member: the problems of its snapshot, else its plan's files
    where it planned it."""

    name: str
    problems: tuple[str, ...]
    rendered: Rendered | None = None


def run_fleet(args: argparse.Namespace, build_goal: GoalBuilder) -> int:
    """Plan the fleet, write OUT/<cluster>/ and the summary, print the summary table."""
    out: Path = args.output_dir
    if args.engine == "local" or args.replace:
        # In this process: a replace goal is one cheap pass, not worth a Spark session.
        rendered, stages = _in_this_process(args, build_goal)
    else:
        rendered, stages = _on_workers(args, build_goal)
    files = write_summary(out, [r.row for r in rendered], stages)
    print(render.fleet_summary([r.row for r in rendered], files=files))
    return 0


def _in_this_process(
    args: argparse.Namespace, build_goal: GoalBuilder
) -> tuple[list[Rendered], dict[str, float]]:
    """Each snapshot read, checked, planned and rendered in turn, and dropped before the next is
    read: the process holds one snapshot and the fleet's plan files, never the fleet. Once one
    snapshot has a problem the rest are only checked; the files are written once all passed."""
    outcomes: list[Outcome] = []
    problems: list[str] = []
    for name, path in fleet_members(args.fleet):
        outcome = member_task(args, build_goal, (Member(name, str(path), str(path)), not problems))
        problems.extend(outcome.problems)
        outcomes.append(outcome)
    if problems:
        raise InputError.of(problems)
    rendered = [o.rendered for o in outcomes if o.rendered is not None]
    for item in rendered:
        _write(item)
    return rendered, {}


def _on_workers(args: argparse.Namespace, build_goal: GoalBuilder) -> tuple[list[Rendered], dict[str, float]]:
    # Imported here: only the Spark engine may pay for importing pyspark.
    from ferry.pipeline.driver import whole_by_size
    from ferry.pipeline.fleet_tasks import stored
    from ferry.pipeline.job import Stages, plan_jobs
    from ferry.pipeline.session import plan_session, spark_session
    from ferry.plan.planner import per_topic_phases

    # A worker's working folder is not this one: it gets every path absolute, and reports a
    # snapshot under the name given here.
    members = [Member(name, str(path), str(path.resolve())) for name, path in fleet_members(args.fleet)]
    by_name = {m.name: m for m in members}
    sizes = {m.name: partitions_about(Path(m.path)) for m in members}
    # Without per-topic passes (byte balance, drains) every cluster is planned whole.
    passes = per_topic_phases(Goal(balance=BalanceMode(args.balance), drain_above=args.drain_above))
    always = set() if passes else set(sizes)
    stages = Stages()
    done: dict[str, Rendered] = {}
    with spark_session(plan_session(args.spark_master, debug=args.debug)) as spark:
        mark = time.perf_counter()
        whole = set(whole_by_size(sizes, always, spark.sparkContext.defaultParallelism))
        # Biggest first; every snapshot is checked, and those planned whole are planned in the same task.
        tasks = [(m, m.name in whole) for m in sorted(members, key=lambda m: (-sizes[m.name], m.name))]
        with stored(spark, tasks, partial(member_task, _absolute(args), build_goal)) as outcomes:
            problems = [p for found in outcomes.peek(_problems) for p in found]
            if problems:
                raise InputError.of(problems)
            for outcome in outcomes:
                if outcome.rendered is not None:
                    done[outcome.name] = _write(outcome.rendered)
        stages.add("whole", mark)
        for name in sorted(set(sizes) - whole, key=lambda n: (-sizes[n], n)):
            # Read here, one at a time: the driver's memory holds one big cluster, never the fleet.
            job = _job(args, build_goal, by_name[name])
            plans = plan_jobs(lambda: spark, [job], stages)
            seconds = stages.clusters.get(name, 0.0)
            done[name] = _write(rendered_plan(args.output_dir, job, plans[name], seconds))
    return [done[m.name] for m in members], stages.seconds


def member_task(args: argparse.Namespace, build_goal: GoalBuilder, task: tuple[Member, bool]) -> Outcome:
    """One member's task, on a Spark worker or in this process: read and check its snapshot against
    the options and, if asked to, plan it whole (as ``--engine local`` plans a cluster) and render
    its files."""
    from ferry.plan.planner import plan

    member, whole = task
    try:
        job = _job(args, build_goal, member)
    except InputError as exc:
        return Outcome(member.name, tuple(exc.problems))
    if not whole:
        return Outcome(member.name, ())
    start = time.perf_counter()
    result = plan(job.snapshot, job.goal)
    return Outcome(member.name, (), rendered_plan(args.output_dir, job, result, time.perf_counter() - start))


def _problems(outcome: Outcome) -> tuple[str, ...]:
    return outcome.problems


def rendered_plan(out: Path, job: PlanJob, plan: Plan, seconds: float) -> Rendered:
    """A cluster's files in OUT/<cluster>/ and its summary row, as a single plan writes them."""
    # As for one cluster: new replicas into their brokers' emptiest dirs, where dirs are known.
    result, on_disk = on_disks(plan, job.snapshot)
    report = report_json(result.figures, snapshot=job.source, goal=goal_json(job.goal)) | on_disk
    files = plan_files(out / job.name, result, report)
    return Rendered(job.name, files, summary_row(job.name, job.source, result.figures, seconds))


def _write(item: Rendered) -> Rendered:
    next(iter(item.files)).parent.mkdir(parents=True, exist_ok=True)
    write_files_atomic(item.files)
    return item


def _job(args: argparse.Namespace, build_goal: GoalBuilder, member: Member) -> PlanJob:
    path = Path(member.path)
    try:
        snapshot = load_any(path)
    except InputError as exc:
        # Problems name the snapshot as given to ferry, not the absolute path a worker reads.
        raise InputError.of([p.replace(member.path, member.source) for p in exc.problems]) from None
    goal = build_goal(args, snapshot, member.source)
    return PlanJob(member.name, member.source, snapshot, goal, path if is_parquet_snapshot(path) else None)


def _absolute(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with every path made absolute (for a process in another working folder)."""
    return argparse.Namespace(**{k: v.resolve() if isinstance(v, Path) else v for k, v in vars(args).items()})
