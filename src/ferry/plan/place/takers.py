"""Which broker takes a replica that cannot go where the plan sent it (a cordoned broker, a broker
being replaced away): the target broker holding the fewest replicas among those allowed, the lowest
id on a tie, so replicas sent aside even out the load instead of piling onto one broker."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ferry.plan.racks import RackLayout


def least_loaded(layout: RackLayout, load: Mapping[int, int], allowed: Callable[[int], bool]) -> int | None:
    """The target broker of ``layout`` that ``allowed`` admits holding the fewest replicas by
    ``load`` (none counted: 0); ``None`` when it admits none."""
    options = [b for b in layout.brokers if allowed(b)]
    return min(options, key=lambda b: (load.get(b, 0), b)) if options else None
