"""The global balance pass's answer (:class:`Balance`): per topic, every broker's final quota and the
replicas kept."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Balance:
    """Per topic: every broker's final quota (layout order), the replicas kept, and per pinned
    partition the replicas it keeps."""

    quotas: list[tuple[int, ...]]
    kept: list[int]
    keeps: list[dict[int, frozenset[int]]] = field(default_factory=list)
