"""Drains above a threshold (``ferry plan --drain-above F``) on generated clusters: every broker at or
under ``F`` afterwards, no broker under ``F`` sending, and the bytes moved against the bytes that must
leave the brokers over ``F``.

Each case is a plan_quality cluster with log-normal partition sizes and a skewed start, its brokers'
disks all one size or every second one of a rack twice the others; the thresholds sit between the
fullest broker's fraction and the cluster's mean. Usage:

    .venv/bin/python benchmarks/drain.py            # small cases (~3k partitions) and 100k ones
    .venv/bin/python benchmarks/drain.py --small
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

from ferry.errors import PreconditionError
from ferry.model import ClusterSnapshot, Goal
from ferry.plan.planner import plan

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.invariants import bytes_per_broker

from plan_quality import LARGE, SMALL, UNEQUAL, Case, generate

CASES = [
    replace(SMALL[4], name="skewed, 24 brokers", sizes="lognormal"),
    replace(UNEQUAL[0], name=f"{UNEQUAL[0].name}, skewed", goal="rebalance", sizes="lognormal"),
    replace(SMALL[0], name="24 brokers + 3 new", sizes="lognormal"),
]
LARGE_CASES = [replace(LARGE[2], sizes="lognormal")]


def disks(snapshot: ClusterSnapshot, mixed: bool) -> dict[int, int]:
    """Disks the fullest broker fills to 95 %: one size, or every second broker of a rack twice it."""
    before = bytes_per_broker(snapshot)
    order = {
        b: i for i, b in enumerate(sorted(snapshot.broker_ids, key=lambda b: (snapshot.racks[b] or "", b)))
    }
    weight = {b: 2 if mixed and order[b] % 2 else 1 for b in snapshot.broker_ids}
    unit = max(before[b] / weight[b] for b in before) / 0.95
    return {b: int(unit * weight[b]) for b in snapshot.broker_ids}


def row(case: Case, mixed: bool, share: float) -> str:
    snapshot, _ = generate(case)
    capacity = disks(snapshot, mixed)
    before = bytes_per_broker(snapshot)
    fractions = {b: before[b] / capacity[b] for b in before}
    mean = sum(before.values()) / sum(capacity.values())
    threshold = round(mean + share * (max(fractions.values()) - mean), 3)
    started = time.perf_counter()
    try:
        done = plan(snapshot, Goal(capacity=capacity, drain_above=threshold))
    except PreconditionError as refused:
        return f"| {case.name} | {'mixed' if mixed else 'equal'} | {threshold} | refused: {refused} |||||"
    seconds = time.perf_counter() - started
    assert done.report is not None and done.report.drain is not None
    after = bytes_per_broker(snapshot, {m.tp: m.target for m in done.moves})
    senders = {b for b in before if before[b] > threshold * capacity[b]}
    quiet = all(set(m.removing) <= senders for m in done.moves)
    top = max(after[b] / capacity[b] for b in after)
    ratio = done.report.drain["bytes_moved_over_bound"]
    return (
        f"| {case.name} | {'mixed' if mixed else 'equal'} | {threshold} | {len(senders)} | "
        f"{max(fractions.values()):.3f} -> {top:.3f} | {'yes' if quiet else 'NO'} | {ratio} | {seconds:.2f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="small cases only")
    args = parser.parse_args()
    header = (
        "case | disks | F | senders | fullest before -> after | only senders sent | bytes / must leave | s"
    )
    print(f"| {header} |")
    print("|---|---|---|---|---|---|---|---|")
    for case in CASES + ([] if args.small else LARGE_CASES):
        for mixed in (False, True):
            for share in (0.8, 0.5, 0.2):
                print(row(case, mixed, share), flush=True)


if __name__ == "__main__":
    main()
