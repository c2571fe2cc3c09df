"""report.json: a plan's :class:`~ferry.model.PlanReport` as JSON, and what the command adds.

Keys keep the report's field order (operators and scripts diff report files), with
``moves_over_bound`` after ``lower_bound``; ``disk``, ``placement_fallbacks``, ``budget`` and ``drain`` only
where the plan has them; then the command's own keys (``snapshot``, ``goal``, ``forced``) in the order given.
"""

from __future__ import annotations

from typing import Any

from ferry.model import PlanReport


def report_json(report: PlanReport, **extra: Any) -> dict[str, Any]:
    """The JSON document of ``report``, followed by ``extra`` keys."""
    out: dict[str, Any] = {
        "partitions": report.partitions,
        "partitions_changed": report.partitions_changed,
        "replica_moves": report.replica_moves,
        "lower_bound": report.lower_bound,
        "moves_over_bound": report.moves_over_bound,
        "bytes_moved": report.bytes_moved,
        "leader_changes": report.leader_changes,
        "target_brokers": list(report.target_brokers),
        "rack_mode": report.rack_mode,
        "balance_by": report.balance_by,
        "forced_replica_spread": report.forced_replica_spread,
        "balance": {side: dict(figures) for side, figures in report.balance.items()},
    }
    if report.disk is not None:
        out["disk"] = dict(report.disk)
    if report.placement_fallbacks is not None:
        out["placement_fallbacks"] = report.placement_fallbacks
    if report.budget is not None:
        out["budget"] = dict(report.budget)
    if report.drain is not None:
        out["drain"] = dict(report.drain)
    out.update(extra)
    return out
