"""Load: per cluster reassignment.json, rollback.json and report.json, and the fleet summary.

The plan files go through the same :mod:`ferry.formats` writers as ``--engine local``, so both
engines write byte-identical files for the same plan.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ferry.formats import dumps_json, write_files_atomic
from ferry.model import PlanReport

SUMMARY_JSON = "fleet-summary.json"
SUMMARY_CSV = "fleet-summary.csv"
SUMMARY_COLUMNS = (
    "cluster",
    "snapshot",
    "partitions",
    "partitions_changed",
    "replica_moves",
    "lower_bound",
    "bytes_moved",
    "replica_spread_before",
    "replica_spread_after",
    "topic_spread_before",
    "topic_spread_after",
    "leader_spread_before",
    "leader_spread_after",
    "rack_violations_before",
    "rack_violations_after",
    "seconds",
)


def summary_row(cluster: str, snapshot: str, report: PlanReport, seconds: float) -> dict[str, Any]:
    """One fleet-summary row from a cluster's report.

    ``seconds`` is what the cluster itself cost: its driver phases plus its topics' time in the
    workers (the clusters of a fleet share one job, so its wall time is not theirs to split).
    """
    before, after = report.before, report.after
    return {
        "cluster": cluster,
        "snapshot": snapshot,
        "partitions": report.partitions,
        "partitions_changed": report.partitions_changed,
        "replica_moves": report.replica_moves,
        "lower_bound": report.lower_bound,
        "bytes_moved": report.bytes_moved,
        "replica_spread_before": before["replica_spread"],
        "replica_spread_after": after["replica_spread"],
        "topic_spread_before": before["topic_replica_spread_max"],
        "topic_spread_after": after["topic_replica_spread_max"],
        "leader_spread_before": before["leader_spread"],
        "leader_spread_after": after["leader_spread"],
        "rack_violations_before": before["rack_violations"],
        "rack_violations_after": after["rack_violations"],
        "seconds": round(seconds, 3),
    }


def summary_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=SUMMARY_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def write_summary(
    directory: Path, rows: Sequence[Mapping[str, Any]], stages: Mapping[str, float]
) -> list[Path]:
    """The fleet summary as JSON (rows plus the job's stage times) and CSV (rows only)."""
    doc = {"clusters": list(rows), "stage_seconds": {k: round(v, 3) for k, v in stages.items()}}
    files = {directory / SUMMARY_JSON: dumps_json(doc), directory / SUMMARY_CSV: summary_csv(rows)}
    directory.mkdir(parents=True, exist_ok=True)
    write_files_atomic(files)
    return list(files)
