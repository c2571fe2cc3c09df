"""Per broker, the (min, max) total load the balance program holds it to: the band that rack-aware
water-filling allows (:func:`broker_band`), and for unequal racks the band of rack totals that add up
(:func:`ferry.plan.balance.rack_totals.exact_band`), tried first where it allows a smaller spread."""

from __future__ import annotations

from collections.abc import Sequence

from ferry.plan.balance.rack_totals import exact_band, rack_loads
from ferry.plan.prepare.demand import TopicDemand
from ferry.plan.racks import RackLayout


def broker_band(layout: RackLayout, demands: Sequence[TopicDemand]) -> list[tuple[int, int]]:
    """Per broker, the (min, max) total load that rack-aware water-filling allows
    (:func:`ferry.plan.balance.rack_totals.rack_loads`)."""
    by_rack = rack_loads(layout, demands)
    return [by_rack[layout.rack_of[b]][:2] for b in layout.brokers]


def bands(
    layout: RackLayout, demands: Sequence[TopicDemand], band: list[tuple[int, int]]
) -> list[list[tuple[int, int]]]:
    """The bands to try at slack 0: ``band`` and, for unequal racks, :func:`exact_band`, the one
    allowing the smaller spread first (the water-filled one when they tie: it is less rigid)."""
    exact = exact_band(layout, demands)
    if exact is None or exact == band:
        return [band]
    return [exact, band] if _reach(exact) < _reach(band) else [band, exact]


def _reach(band: Sequence[tuple[int, int]]) -> int:
    return max(hi for _, hi in band) - min(lo for lo, _ in band)
