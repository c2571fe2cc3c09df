"""What the planner says about a plan: moves against their bound, bytes, balance before and after.

Typed here, between the layers; report.json is its JSON form (:mod:`ferry.formats.report_json`),
with the same names in the same order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class PlanReport:
    """Figures of one plan.

    Attributes:
        partitions: in-scope partitions.
        partitions_changed: partitions whose replicas or preferred leader change.
        replica_moves: replicas added (each copies the partition's data).
        lower_bound: the fewest replica moves any plan meeting the balance rules makes.
        bytes_moved: bytes the added replicas copy.
        leader_changes: partitions whose preferred leader changes.
        target_brokers: the brokers the plan places replicas on.
        rack_mode: ``strict`` or ``even``.
        balance_by: ``replicas`` or ``bytes``.
        forced_replica_spread: the smallest broker spread the rack rule allows for these racks.
        balance: ``before`` and ``after``, each the balance figures of
            :func:`ferry.plan.measure.stats.balance`.
        disk: with ``balance_by`` bytes, the byte balance's figures
            (:mod:`ferry.plan.disk.byte_balance`).
        placement_fallbacks: replicas placed above a quota (0 when the plan meets its bound;
            ``None`` for a replace, which places nothing by quota).
        budget: with ``--max-moves`` or ``--max-bytes``, the step's figures: the budget, what it
            used, the imbalance before and after the step and after the full plan, the full plan's
            moves, bytes and balance, and the steps left at this budget
            (:mod:`ferry.plan.budget.step`).
        drain: with ``--drain-above``, the threshold, each broker's capacity and fraction in use
            before and after, the senders, and the bytes that must leave them
            (:mod:`ferry.plan.disk.drain`).
    """

    partitions: int
    partitions_changed: int
    replica_moves: int
    lower_bound: int
    bytes_moved: int
    leader_changes: int
    target_brokers: tuple[int, ...]
    rack_mode: str
    balance_by: str
    forced_replica_spread: int
    balance: Mapping[str, Mapping[str, int]]
    disk: Mapping[str, Any] | None = None
    placement_fallbacks: int | None = None
    budget: Mapping[str, Any] | None = None
    drain: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "target_brokers", tuple(self.target_brokers))

    @property
    def moves_over_bound(self) -> float | None:
        """Replica moves per move of the bound, to four places (``None`` when the bound is 0)."""
        return round(self.replica_moves / self.lower_bound, 4) if self.lower_bound else None

    @property
    def after(self) -> Mapping[str, int]:
        return self.balance["after"]

    @property
    def before(self) -> Mapping[str, int]:
        return self.balance["before"]
