"""A planning :class:`~ferry.model.Goal` as the JSON ``report.json`` records under ``"goal"``.

Both ``ferry plan`` and ``ferry plan --fleet`` write it, so it lives here rather than in either.
"""

from __future__ import annotations

from typing import Any

from ferry.model import BalanceMode, Goal


def goal_json(goal: Goal) -> dict[str, Any]:
    """The goal as JSON-ready data for report.json (sets sorted, so reports diff cleanly); the
    byte balance's settings and the budget only when they are chosen."""
    out: dict[str, Any] = {
        "brokers": None if goal.brokers is None else sorted(goal.brokers),
        "replace": [{"old": old, "new": new} for old, new in goal.replace],
        "replication_factors": dict(sorted(goal.replication_factors.items())),
        "topics": None if goal.topics is None else sorted(goal.topics),
        "exclude_topics": sorted(goal.exclude_topics),
        "rack_mode": goal.rack_mode.value,
    }
    if goal.balance is BalanceMode.BYTES:
        out["balance"] = goal.balance.value
        if goal.capacity is not None:
            out["capacity"] = {str(b): n for b, n in sorted(goal.capacity.items())}
            out["max_disk_fraction"] = goal.max_disk_fraction
    if goal.drain_above is not None:
        out["drain_above"] = goal.drain_above
        if goal.capacity is not None:
            out["capacity"] = {str(b): n for b, n in sorted(goal.capacity.items())}
    if goal.max_moves is not None:
        out["max_moves"] = goal.max_moves
    if goal.max_bytes is not None:
        out["max_bytes"] = goal.max_bytes
    return out
