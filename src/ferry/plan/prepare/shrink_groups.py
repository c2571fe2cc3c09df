"""Partitions that only have too many replicas, grouped by replica set.

For a partition that may keep any ``rf`` of its replicas (:func:`ferry.plan.prepare.pinned.is_plain_shrink`),
only how many of a group of identical partitions keep each broker matters: with ``m`` partitions on
the same replica set, per-broker counts ``k_b <= m`` with ``sum k_b <= rf * m`` are always realisable
(the largest partition takes the ``rf`` brokers with the most count left, and so on). So the balance
pass decides counts per group instead of one variable per replica, and stays exact.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Group:
    """Shrinking partitions of one topic with the same replicas and replication factor."""

    replicas: tuple[int, ...]
    """Sorted broker ids."""
    rf: int
    members: tuple[tuple[int, int], ...]
    """(index in the topic, size), largest first so the big partitions keep all they may."""


def groups(partitions: Sequence[tuple[int, tuple[int, ...], int, int]]) -> list[Group]:
    """Group (index, replicas, rf, size) tuples; deterministic order."""
    by_key: dict[tuple[tuple[int, ...], int], list[tuple[int, int]]] = {}
    for index, replicas, rf, size in partitions:
        by_key.setdefault((tuple(sorted(replicas)), rf), []).append((index, size))
    return [
        Group(reps, rf, tuple(sorted(members, key=lambda m: (-m[1], m[0]))))
        for (reps, rf), members in sorted(by_key.items())
    ]


def realise(group: Group, counts: Mapping[int, int]) -> dict[int, frozenset[int]]:
    """Per partition index, the brokers it keeps, meeting ``counts`` per broker."""
    left = dict(counts)
    keeps = {}
    for index, _ in group.members:
        ranked = sorted((b for b in group.replicas if left.get(b, 0) > 0), key=lambda b: (-left[b], b))
        chosen = ranked[: group.rf]
        for b in chosen:
            left[b] -= 1
        keeps[index] = frozenset(chosen)
    return keeps
