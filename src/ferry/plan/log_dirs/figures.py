"""Bytes per log dir before and after a plan, for report.json and the HTML page.

Before: what the snapshot says each dir holds (its replicas' bytes). After: the same with the
plan's moves applied -- a replica leaving its broker leaves its dir, a replica named into a dir
arrives there (leaving its old dir on the same broker). A new replica whose dir the plan leaves to
the broker (``any``) is counted under no dir: the report says how many bytes that is per broker.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from ferry.model import ClusterSnapshot, Move, TopicPartition

Placed = dict[tuple[TopicPartition, int], tuple[str | None, int]]
"""Each replica (partition, broker): its dir (None: the broker's choice) and its bytes."""


def dir_figures(snapshot: ClusterSnapshot, moves: Iterable[Move]) -> list[dict[str, Any]]:
    """Per broker with log dirs, per dir: its size, bytes before and after, and the fractions."""
    listed = {b.id: b for b in snapshot.brokers if b.log_dirs}
    where: Placed = {}
    for p in snapshot.partitions:
        for holder, path in p.replica_dirs:
            if holder in listed:
                where[(p.tp, holder)] = (path, p.bytes_on(holder))
    before = _totals(where)
    for move in moves:
        _apply(move, where, listed)
    after = _totals(where)
    rows: list[dict[str, Any]] = []
    for broker_id, broker in sorted(listed.items()):
        for d in broker.log_dirs:
            held, now = before.get((broker_id, d.path), 0), after.get((broker_id, d.path), 0)
            rows.append(
                {
                    "broker": broker_id,
                    "path": d.path,
                    "total_bytes": d.total_bytes,
                    "bytes_before": held,
                    "bytes_after": now,
                    "fraction_before": _fraction(held, d.total_bytes),
                    "fraction_after": _fraction(now, d.total_bytes),
                    "offline": d.offline,
                    "cordoned": d.cordoned,
                }
            )
        unplaced = after.get((broker_id, None), 0)
        if unplaced:
            rows.append({"broker": broker_id, "path": None, "bytes_before": 0, "bytes_after": unplaced})
    return rows


def _apply(move: Move, where: Placed, listed: Collection[int]) -> None:
    named = move.named_dirs
    for broker in move.removing:
        where.pop((move.tp, broker), None)
    for broker in (b for b in move.target if b in listed):
        size = where.get((move.tp, broker), (None, move.size_bytes))[1]
        if broker in named:
            where[(move.tp, broker)] = (named[broker], size)
        elif broker in move.adding:
            where[(move.tp, broker)] = (None, size)


def _totals(
    where: dict[tuple[TopicPartition, int], tuple[str | None, int]],
) -> dict[tuple[int, str | None], int]:
    totals: dict[tuple[int, str | None], int] = {}
    for (_, broker), (path, size) in where.items():
        totals[(broker, path)] = totals.get((broker, path), 0) + size
    return totals


def _fraction(held: int, total: int | None) -> float | None:
    return round(held / total, 6) if total else None
