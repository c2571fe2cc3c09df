"""What a plan made from a snapshot that knows disks and tiers adds, for one cluster or for each
of a fleet alike: the dir of every new replica (:func:`ferry.plan.log_dirs.choose.choose_dirs`),
and report.json's bytes per dir before and after, tiered topics and the bytes new replicas copy."""

from __future__ import annotations

from typing import Any

from ferry.model import ClusterSnapshot, Plan
from ferry.plan.log_dirs.choose import choose_dirs
from ferry.plan.log_dirs.figures import dir_figures
from ferry.plan.measure.copies import bytes_to_copy


def on_disks(plan: Plan, snapshot: ClusterSnapshot) -> tuple[Plan, dict[str, Any]]:
    """``plan`` with the dir of each new replica named where its broker has several, and the
    report.json entries the snapshot's disks and tiers call for (none where it knows neither)."""
    placed = choose_dirs(plan, snapshot)
    report: dict[str, Any] = {}
    if any(b.log_dirs for b in snapshot.brokers):
        report["log_dirs"] = dir_figures(snapshot, placed.moves)
    if snapshot.tiered_topics:
        # Their sizes are local bytes: what a new replica copies (less on a KIP-1023 broker).
        report["tiered_topics"] = sorted(snapshot.tiered_topics)
        report["bytes_to_copy"] = bytes_to_copy(snapshot, placed.moves)
    return placed, report
