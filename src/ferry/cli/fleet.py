"""``ferry plan --fleet DIR``: every snapshot of a folder planned in one job, one folder of plan files each.

Every snapshot is read and checked against the options before any planning starts, so a bad one
fails the run with all problems listed and nothing written. Each cluster's three files are written
atomically; the summary (``fleet-summary.json`` / ``.csv``) is written last.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from ferry.cli import render
from ferry.cli.disk_report import on_disks
from ferry.cli.engines import plan_clusters
from ferry.errors import InputError
from ferry.formats import write_plan
from ferry.formats.goal_json import goal_json
from ferry.formats.parquet import is_parquet_snapshot
from ferry.formats.report_json import report_json
from ferry.formats.sources import fleet_members, load_any
from ferry.model import ClusterSnapshot, Goal, PlanJob
from ferry.pipeline.load import summary_row, write_summary

GoalBuilder = Callable[[argparse.Namespace, ClusterSnapshot, str], Goal]


def run_fleet(args: argparse.Namespace, build_goal: GoalBuilder) -> int:
    """Plan the fleet, write OUT/<cluster>/ and the summary, print the summary table."""
    clusters = load_fleet(args, build_goal)
    planned, stages = plan_clusters(clusters, engine=args.engine, master=args.spark_master, debug=args.debug)
    out: Path = args.output_dir
    rows = []
    for item in planned:
        cluster = item.cluster
        # As for one cluster: new replicas into their brokers' emptiest dirs, where dirs are known.
        result, on_disk = on_disks(item.plan, cluster.snapshot)
        report = report_json(result.figures, snapshot=cluster.source, goal=goal_json(cluster.goal)) | on_disk
        write_plan(out / cluster.name, result, report)
        rows.append(summary_row(cluster.name, cluster.source, result.figures, item.seconds))
    files = write_summary(out, rows, stages)
    print(render.fleet_summary(rows, files=files))
    return 0


def load_fleet(args: argparse.Namespace, build_goal: GoalBuilder) -> list[PlanJob]:
    """Every snapshot of ``--fleet`` with its goal; raises one InputError listing all problems."""
    clusters: list[PlanJob] = []
    problems: list[str] = []
    for name, path in fleet_members(args.fleet):
        try:
            snapshot = load_any(path)
            goal = build_goal(args, snapshot, str(path))
        except InputError as exc:
            problems.extend(exc.problems)
            continue
        parquet = path if is_parquet_snapshot(path) else None
        clusters.append(PlanJob(name, str(path), snapshot, goal, parquet))
    if problems:
        raise InputError.of(problems)
    return clusters
