"""Plan quality and cost of the planning kernel on generated clusters, one goal per case.

Each case runs in a fresh child process (so peak memory is its own), pinned to one core where the
platform allows (``--cores 2``: two, as ``ferry plan --engine local`` has on a 2-core machine).
Prints a Markdown table: moves / lower bound, spreads, rack violations, wall and CPU
seconds of ``plan()`` (CPU seconds are the fairer figure on a shared machine; they include the
processes the planner forks on two cores, :mod:`ferry.plan.forked`), peak RSS of the planning
process itself. Usage:

    .venv/bin/python benchmarks/plan_quality.py            # small (~3k) and large (100k) cases
    .venv/bin/python benchmarks/plan_quality.py --small    # small cases only
    .venv/bin/python benchmarks/plan_quality.py --stress   # the worst case found (100k, RF 3->2)
    .venv/bin/python benchmarks/plan_quality.py --unequal  # racks of unequal size only
    .venv/bin/python benchmarks/plan_quality.py --huge     # 1M partitions (with benchmarks/shapes.py)
    .venv/bin/python benchmarks/plan_quality.py --shapes   # those shapes at 100k partitions
    .venv/bin/python benchmarks/plan_quality.py --shapes --seed 11   # another draw of them
    .venv/bin/python benchmarks/plan_quality.py --shapes --partitions 10000   # smaller draws
    .venv/bin/python benchmarks/plan_quality.py --shapes --rfs 1,2,3   # every shape at RF 1 to 3
    .venv/bin/python benchmarks/plan_quality.py --bytes    # --balance bytes: disks, bytes moved
    .venv/bin/python benchmarks/plan_quality.py --only large --limit 900 --json out.json
    .venv/bin/python benchmarks/plan_quality.py --only large --cores 2
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from queue import Empty
from typing import Any

from ferry.model import BalanceMode, Broker, ClusterSnapshot, Goal, PartitionState, TopicPartition
from ferry.plan.planner import plan
from ferry.plan.racks import RackLayout

try:  # run as a script (benchmarks/ on the path) or imported as benchmarks.plan_quality
    import shapes
except ImportError:  # pragma: no cover
    from benchmarks import shapes


@dataclass(frozen=True)
class Case:
    name: str
    brokers: int
    racks: int
    topics: int
    partitions: int
    rf: int
    goal: str
    delta: int = 0
    """Brokers added (add, replace) or removed (remove)."""
    rack_sizes: tuple[int, ...] = ()
    """Unequal racks: brokers per rack before the change (``brokers``/``racks`` are then ignored)."""
    rack_delta: tuple[int, ...] = ()
    """With ``rack_sizes``: brokers added (add) or removed (remove) per rack."""
    spread: tuple[int, ...] = ()
    """Partitions per topic drawn from these (default: ``partitions`` for every topic)."""
    factors: tuple[int, ...] = ()
    """Replication factors drawn per topic (default: ``rf`` for every topic)."""
    sizes: str = "uniform"
    """Partition sizes: ``uniform`` (1 MB - 10 GB) or ``lognormal`` (median 100 MB, heavy tail)."""
    balance: BalanceMode = BalanceMode.REPLICAS
    capacity: bool = False
    """With byte balance: every second broker of a rack has twice the disk of the others."""

    @property
    def total_partitions(self) -> int:
        if not self.spread:
            return self.topics * self.partitions
        return sum(_topic_shape(self, t)[0] for t in range(self.topics))


def _topic_shape(case: Case, t: int) -> tuple[int, int]:
    """(partitions, replication factor) of topic ``t``: drawn from its own seed, so a topic's shape
    does not depend on the order the generator asks for it."""
    rnd = random.Random(f"{case.name}/{t}")
    parts = rnd.choice(case.spread) if case.spread else case.partitions
    return parts, rnd.choice(case.factors) if case.factors else case.rf


def _nodes(case: Case) -> tuple[list[Broker], list[Broker], Goal | None]:
    """Every broker, the brokers holding replicas today, and the goal of an unequal-rack case."""
    if not case.rack_sizes:
        extra = case.delta if case.goal in ("add", "replace") else 0
        nodes = [Broker(i, f"r{i % case.racks}" if case.racks else None) for i in range(case.brokers + extra)]
        return nodes, nodes[: case.brokers], None
    nodes, live, removed = [], [], set()
    delta = case.rack_delta or (0,) * len(case.rack_sizes)
    for k, (n, d) in enumerate(zip(case.rack_sizes, delta, strict=True)):
        rack = [Broker(len(nodes) + j, f"r{k}") for j in range(n + max(d, 0))]
        nodes += rack
        live += rack[:n]
        removed |= {b.id for b in rack[n + d : n]} if d < 0 else set()
    goal = Goal(brokers=frozenset(b.id for b in nodes) - removed) if removed else None
    return nodes, live, goal


def interleaved(brokers: list[Broker]) -> list[int]:
    """Brokers ordered rack by rack in turn, so consecutive entries sit in different racks."""
    by_rack: dict[str | None, list[int]] = {}
    for b in brokers:
        by_rack.setdefault(b.rack, []).append(b.id)
    columns = list(by_rack.values())
    order = []
    for i in range(max(len(c) for c in columns)):
        order.extend(c[i] for c in columns if i < len(c))
    return order


def generate(case: Case, seed: int = 7) -> tuple[ClusterSnapshot, Goal]:
    """A cluster and a goal for ``case``; placements start balanced and rack-clean unless skewed."""
    rnd = random.Random(seed)
    nodes, live, uneven_goal = _nodes(case)
    order = interleaved(live)
    weights = [1.0 / (1 + 0.05 * i) for i in range(len(order))]
    states = []
    for t in range(case.topics):
        partitions, rf = _topic_shape(case, t)
        for p in range(partitions):
            if case.goal in ("rebalance", "rf-down-skewed"):
                replicas = _weighted(rnd, order, weights, rf)
            elif case.goal == "rebalance in racks":
                replicas = _in_racks(rnd, live, rf)
            else:
                start = rnd.randrange(len(order))
                replicas = [order[(start + i) % len(order)] for i in range(rf)]
            tp = TopicPartition(f"topic-{t:06d}", p)
            states.append(PartitionState(tp, tuple(replicas), replicas[0], tuple(replicas), _size(rnd, case)))
    snapshot = ClusterSnapshot.of(nodes, states)
    goal = uneven_goal if uneven_goal is not None else _goal(case)
    if case.balance is BalanceMode.BYTES:
        goal = replace(goal, balance=BalanceMode.BYTES, capacity=_capacity(case, snapshot))
    return snapshot, goal


def _goal(case: Case) -> Goal:
    down = Goal(replication_factors={f"topic-{t:06d}": case.rf - 1 for t in range(case.topics)})
    return {
        "add": Goal(),
        "rebalance": Goal(),
        "rebalance in racks": Goal(),
        "remove": Goal(brokers=frozenset(range(case.brokers - case.delta))),
        "replace": Goal(replace=((0, case.brokers),)),
        "rf-up": Goal(replication_factors={f"topic-{t:06d}": case.rf + 1 for t in range(case.topics)}),
        "rf-down": down,
        "rf-down-skewed": down,
    }[case.goal]


def _capacity(case: Case, snapshot: ClusterSnapshot) -> dict[int, int] | None:
    """Disks of 1x and 2x, alternating inside each rack, with room for everything at 50 % full."""
    if not case.capacity:
        return None
    total = sum(p.size * p.replication_factor for p in snapshot.partitions)
    unit = 2 * total // len(snapshot.brokers)
    seen: dict[str | None, int] = {}
    out = {}
    for b in snapshot.brokers:
        seen[b.rack] = seen.get(b.rack, 0) + 1
        out[b.id] = unit * (1 + seen[b.rack] % 2)
    return out


def _size(rnd: random.Random, case: Case) -> int:
    if case.sizes == "lognormal":
        # Median 100 MB; sigma 2 puts the 99.9th percentile ~ 500x the median and the smallest
        # of 10k partitions ~ 1/1000 of it: the spread of sizes seen on real clusters.
        return max(1, int(rnd.lognormvariate(18.42, 2.0)))
    return rnd.randint(10**6, 10**10)


def _in_racks(rnd: random.Random, live: list[Broker], rf: int) -> list[int]:
    """Rack-clean (one replica per rack while racks last) but skewed inside each rack: a rack's
    first broker is three times as likely as its last to get the replica."""
    by_rack: dict[str | None, list[int]] = {}
    for b in live:
        by_rack.setdefault(b.rack, []).append(b.id)
    racks = rnd.sample(list(by_rack), min(rf, len(by_rack)))
    return [
        rnd.choices(
            by_rack[r], weights=[3 - 2 * i / max(1, len(by_rack[r]) - 1) for i in range(len(by_rack[r]))]
        )[0]
        for r in racks
    ]


def _weighted(rnd: random.Random, pool: list[int], weights: list[float], k: int) -> list[int]:
    pool, weights, chosen = list(pool), list(weights), []
    for _ in range(k):
        i = rnd.choices(range(len(pool)), weights=weights)[0]
        chosen.append(pool.pop(i))
        weights.pop(i)
    return chosen


def run_case(case: Case | shapes.Shape, cores: int, seed: int, queue: Any) -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:cores]))
    if isinstance(case, shapes.Shape):
        snapshot, goal = shapes.snapshot_and_goal(shapes.generate(case, seed))
    else:
        snapshot, goal = generate(case, seed)
    start, cpu = time.perf_counter(), _cpu()
    result = plan(snapshot, goal)
    seconds = time.perf_counter() - start
    cpu_seconds = _cpu() - cpu
    from ferry.formats.report_json import report_json  # here: plan_digest.py runs older checkouts

    report = report_json(result.figures)
    targets = RackLayout.of(snapshot.racks, report["target_brokers"])
    racked = any(snapshot.racks.get(b) for b in report["target_brokers"])
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    queue.put(
        {
            "case": case.__dict__,
            "seconds": seconds,
            "cpu_seconds": cpu_seconds,
            "peak_mib": peak_mib,
            "report": report,
            "racks": targets.sizes if racked else ("none",),
        }
    )


def _cpu() -> float:
    """CPU seconds of this process and of the children it has waited for (the planner's forks)."""
    spent = os.times()
    return spent.user + spent.system + spent.children_user + spent.children_system


def measure(case: Case | shapes.Shape, limit: float, cores: int = 1, seed: int = 7) -> dict[str, Any]:
    """One case in a fresh process on ``cores`` cores; where it did not finish within ``limit``
    seconds, only ``{"unfinished": True, "peak_mib": ...}``, its peak memory so far (Linux: the
    kernel's high-water mark of its resident memory; ``None`` elsewhere)."""
    return in_child(run_case, (case, cores, seed), limit)


def in_child(target: Callable[..., None], args: tuple[Any, ...], limit: float) -> dict[str, Any]:
    """``target(*args, queue)`` in a fresh spawned process, and the record it puts on ``queue``;
    where it puts none within ``limit`` seconds, the process is killed and the answer is
    ``{"unfinished": True, "peak_mib": ...}`` (:func:`measure`)."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=target, args=(*args, queue))
    proc.start()
    try:
        out: dict[str, Any] = queue.get(timeout=limit)
    except Empty:
        peak = _peak_mib(proc.pid)
        proc.kill()
        return {"unfinished": True, "peak_mib": peak}
    finally:
        proc.join()
    return out


def _peak_mib(pid: int | None) -> float | None:
    """A running process's peak resident memory in MiB, from ``/proc`` (``VmHWM``)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    kib = next((line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")), None)
    return None if kib is None else int(kib) / 1024


SMALL = [
    Case("add 3 to 24", 24, 3, 30, 100, 3, "add", 3),
    Case("add 2 to 24 (unequal racks)", 24, 3, 30, 100, 3, "add", 2),
    Case("remove 3 of 27", 27, 3, 30, 100, 3, "remove", 3),
    Case("replace 1", 24, 3, 30, 100, 3, "replace", 1),
    Case("skewed rebalance", 24, 4, 30, 100, 3, "rebalance"),
    Case("RF 2->3", 24, 4, 30, 100, 2, "rf-up"),
    Case("RF 3->2", 24, 4, 30, 100, 3, "rf-down"),
    Case("no racks, add 2", 20, 0, 30, 100, 3, "add", 2),
]
ODD = (1, 2, 3, 5, 8, 12, 20, 50)
"""Partitions per topic on real clusters: mostly few, some many, rarely a multiple of the brokers."""
UNEQUAL = [
    Case(
        "unequal: 2/2/2 + 1/1/0 -> 3/3/2",
        6,
        3,
        300,
        0,
        3,
        "add",
        rack_sizes=(2, 2, 2),
        rack_delta=(1, 1, 0),
        spread=ODD,
    ),
    Case(
        "unequal: 4/3/3 - 1/0/1 -> 3/3/2",
        10,
        3,
        300,
        0,
        3,
        "remove",
        rack_sizes=(4, 3, 3),
        rack_delta=(-1, 0, -1),
        spread=ODD,
    ),
    Case(
        "unequal: 4/3/1 + 1/1/0 -> 5/4/1",
        8,
        3,
        300,
        0,
        3,
        "add",
        rack_sizes=(4, 3, 1),
        rack_delta=(1, 1, 0),
        spread=ODD,
    ),
    Case(
        "unequal: 5/4/1, RF 1-3",
        10,
        3,
        300,
        0,
        3,
        "rebalance",
        rack_sizes=(5, 4, 1),
        spread=ODD,
        factors=(1, 2, 3),
    ),
    Case(
        "unequal: 5/4/3/3, RF 2-3",
        15,
        4,
        300,
        0,
        3,
        "rebalance",
        rack_sizes=(5, 4, 3, 3),
        spread=ODD,
        factors=(2, 3),
    ),
    Case(
        "unequal: 12/12/10, log-normal",
        34,
        3,
        3000,
        0,
        3,
        "add",
        rack_sizes=(10, 10, 10),
        rack_delta=(2, 2, 0),
        spread=ODD,
        sizes="lognormal",
    ),
]
LARGE = [
    Case("large: add 6 to 54", 54, 6, 500, 200, 3, "add", 6),
    Case("large: remove 6 of 60", 60, 6, 500, 200, 3, "remove", 6),
    Case("large: skewed rebalance", 60, 6, 500, 200, 3, "rebalance"),
    Case("large: RF 3->2", 60, 6, 500, 200, 3, "rf-down"),
    Case("large: 10,000 topics, add 6 to 54", 54, 6, 10_000, 10, 3, "add", 6),
    Case("large: 2,000 topics on 200 brokers, add 10 to 190", 190, 10, 2_000, 10, 3, "add", 10),
    Case(
        "large: unequal 20/20/17 + 0/0/2",
        57,
        3,
        8_000,
        0,
        3,
        "add",
        rack_sizes=(20, 20, 17),
        rack_delta=(0, 0, 3),
        spread=ODD,
    ),
]
HUGE = [
    # The scale of a big cluster: 1M partitions in 100,000 topics on 200 brokers (--huge).
    Case("huge: 100,000 topics, add 10 to 190", 190, 10, 100_000, 10, 3, "add", 10),
    # Racks of unequal size and a start that breaks the rack rule, at that scale: 80,000 topics of
    # odd partition counts (1M partitions), three brokers added to the small rack.
    Case(
        "huge: unequal 60/60/57 + 0/0/3",
        180,
        3,
        80_000,
        0,
        3,
        "add",
        rack_sizes=(60, 60, 57),
        rack_delta=(0, 0, 3),
        spread=ODD,
    ),
]


def _bytes(name: str, brokers: int, goal: str, delta: int = 0, **shape: Any) -> Case:
    """A byte-balance case: 1,000 topics of odd partition counts, RF 3, 3 racks, log-normal sizes
    unless ``shape`` says otherwise."""
    shape = {"sizes": "lognormal", "spread": ODD, **shape}
    return Case(name, brokers, 3, 1000, 0, 3, goal, delta, balance=BalanceMode.BYTES, **shape)


BYTES = [
    _bytes("bytes: 9 brokers / 3 racks, rack-clean, log-normal", 9, "rebalance in racks"),
    _bytes("bytes: 9 brokers / 3 racks, rack-clean, uniform sizes", 9, "rebalance in racks", sizes="uniform"),
    _bytes(
        "bytes: unequal 4/3/2, rack-clean, RF 1-3, log-normal",
        9,
        "rebalance in racks",
        rack_sizes=(4, 3, 2),
        factors=(1, 2, 3),
    ),
    _bytes("bytes: 9 brokers / 3 racks, rack violations, log-normal", 9, "rebalance"),
    _bytes("bytes: add 3 to 9, log-normal", 9, "add", 3),
    _bytes("bytes: remove 3 of 12, log-normal", 12, "remove", 3),
    _bytes("bytes: 9 brokers / 3 racks, rack violations, uniform", 9, "rebalance", sizes="uniform"),
    _bytes("bytes: 9 brokers, 1x/2x disks", 9, "rebalance", capacity=True),
    _bytes(
        "bytes: unequal 4/3/2, rack violations, RF 1-3",
        9,
        "rebalance",
        rack_sizes=(4, 3, 2),
        factors=(1, 2, 3),
    ),
    _bytes("bytes: RF 3->2, log-normal", 12, "rf-down"),
    Case(
        "bytes large: add 6 to 54, log-normal",
        54,
        6,
        10_000,
        0,
        3,
        "add",
        6,
        spread=ODD,
        sizes="lognormal",
        balance=BalanceMode.BYTES,
    ),
]
STRESS = [
    # Every partition on its own replica set (placed as in the skewed rebalance), so no two
    # partitions of a topic shrink alike: the balance program's worst case (--stress).
    Case("stress: RF 3->2, all replica sets distinct", 60, 6, 500, 200, 3, "rf-down-skewed"),
]


REPLICA_HEADER = (
    "| case | partitions | brokers per rack | moves | lower bound | moves/bound | replica spread | "
    "forced spread | spread in a rack | topic spread | topic spread in a rack | leader spread | "
    "rack violations | fallbacks | seconds | CPU s | peak MiB |"
)


def row(result: dict[str, Any]) -> str:
    r, case = result["report"], result["case"]
    after = r["balance"]["after"]
    ratio = r["moves_over_bound"] if r["lower_bound"] else (1.0 if r["replica_moves"] == 0 else "inf")
    if above := shapes.excess(r["replica_moves"], r["lower_bound"]):
        ratio = f"{ratio}{above}"
    racks = "/".join(map(str, result["racks"]))
    return (
        f"| {case['name']} | {r['partitions']:,} | {racks} | {r['replica_moves']:,} | "
        f"{r['lower_bound']:,} | {ratio} | {after['replica_spread']} | {r['forced_replica_spread']} | "
        f"{after['rack_replica_spread_max']} | {after['topic_replica_spread_max']} | "
        f"{after['topic_rack_spread_max']} | {after['leader_spread']} | {after['rack_violations']} | "
        f"{r.get('placement_fallbacks', 0)} | {result['seconds']:.2f} | {result['cpu_seconds']:.2f} | "
        f"{result['peak_mib']:.0f} |"
    )


BYTE_HEADER = (
    "| case | partitions | brokers per rack | bytes moved | byte bound | moved/bound | disk spread before "
    "| disk spread after | off target (max) | outside band | replica spread | leader spread "
    "| rack violations | seconds | CPU s | peak MiB |"
)


def byte_row(result: dict[str, Any]) -> str:
    """A byte-balance case: disk spread is fullest minus emptiest as a share of the mean (of the
    fraction in use, with capacities); off target is the furthest any broker ends from its share."""
    r, case = result["report"], result["case"]
    disk, after = r["disk"], r["balance"]["after"]
    bound = disk["bytes_lower_bound"]
    ratio = f"{r['bytes_moved'] / bound:.3f}" if bound else ("1.0" if r["bytes_moved"] == 0 else "inf")
    return (
        f"| {case['name']} | {r['partitions']:,} | {'/'.join(map(str, result['racks']))} | "
        f"{r['bytes_moved'] / 1e9:,.1f} GB | {bound / 1e9:,.1f} GB | {ratio} | "
        f"{100 * disk['before']['spread_of_mean']:.1f} % | {100 * disk['after']['spread_of_mean']:.1f} % | "
        f"{100 * disk['after']['off_target_max']:.2f} % | {disk['after']['outside_band']} | "
        f"{after['replica_spread']} | {after['leader_spread']} | {after['rack_violations']} | "
        f"{result['seconds']:.2f} | {result['cpu_seconds']:.2f} | {result['peak_mib']:.0f} |"
    )


def _cases(args: argparse.Namespace) -> list[Any]:
    """The cases the command line asks for."""
    cases: list[Any] = SMALL + UNEQUAL if args.small else SMALL + UNEQUAL + LARGE
    if args.stress:
        cases = STRESS
    if args.unequal:
        cases = UNEQUAL + [c for c in LARGE if c.rack_sizes]
    if args.huge:
        cases = [*HUGE, *(s.scaled(1, "huge:") for s in shapes.SHAPES)]
    if args.shapes:
        factor = args.partitions / 1_000_000
        cases = [s.scaled(factor, f"{args.partitions // 1000:,}k:") for s in shapes.SHAPES]
    if args.rfs and (args.shapes or args.huge):
        rfs = tuple(int(f) for f in args.rfs.split(","))
        cases = [
            replace(c, rfs=rfs, name=f"{c.name}, RF {args.rfs}") for c in cases if isinstance(c, shapes.Shape)
        ]
    if args.bytes:
        cases = BYTES
    if args.only:
        cases = [c for c in cases if args.only in c.name]
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--small", action="store_true", help="only the ~3k-partition cases")
    parser.add_argument("--stress", action="store_true", help="only the stress case (not in the default run)")
    parser.add_argument("--unequal", action="store_true", help="only the unequal-rack cases")
    parser.add_argument(
        "--huge", action="store_true", help="only the 1M-partition cases (not in the default run)"
    )
    parser.add_argument(
        "--shapes", action="store_true", help="only the shapes of benchmarks/shapes.py, at 100k partitions"
    )
    parser.add_argument(
        "--partitions",
        type=int,
        default=100_000,
        help="with --shapes: about this many partitions per shape (default 100,000)",
    )
    parser.add_argument("--seed", type=int, default=7, help="the draw of each generated cluster (default 7)")
    parser.add_argument(
        "--rfs",
        help="with --shapes or --huge: draw every shape with these replication factors per topic, "
        "each as likely as it is listed (1,2,3,3,4: RF 3 twice as likely as the others)",
    )
    parser.add_argument("--bytes", action="store_true", help="only the --balance bytes cases")
    parser.add_argument("--json", help="also write raw results to this file")
    parser.add_argument("--only", help="run only the cases whose name contains this text")
    parser.add_argument("--limit", type=float, default=600, help="seconds per case before giving up")
    parser.add_argument(
        "--cores",
        type=int,
        default=1,
        help="cores each case may use (default 1: figures that do not depend on what else runs)",
    )
    args = parser.parse_args()
    if args.rfs and not (args.shapes or args.huge):
        parser.error("--rfs draws the shapes of --shapes or --huge; give one of them")
    cases = _cases(args)
    bytes_only = all(getattr(c, "balance", None) is BalanceMode.BYTES for c in cases)
    header = BYTE_HEADER if bytes_only else REPLICA_HEADER
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    results = []
    for case in cases:
        result = measure(case, args.limit, args.cores, args.seed)
        if result.get("unfinished"):
            peak = result["peak_mib"]
            memory = "" if peak is None else f" (peak {peak:,.0f} MiB by then)"
            print(f"| {case.name} | did not finish within {args.limit:.0f} s{memory} |", flush=True)
            continue
        results.append(result)
        print(byte_row(result) if bytes_only else row(result), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)


if __name__ == "__main__":
    main()
