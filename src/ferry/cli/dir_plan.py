"""``ferry plan --disks balance`` and ``--evacuate-dir BROKER:PATH``: plans between the log dirs
of brokers (JBOD).

Each broker's dirs are planned on their own, in this process on either engine: the work is a
pass over one broker's replicas at a time, which a Spark session would only slow down by its
start-up (as for ``--replace``). The plan is ordinary reassignment JSON naming ``log_dirs``, so
``ferry execute`` runs it like any other (and Kafka's own tool could too).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ferry.cli.plan_args import usage_error
from ferry.cli.render import human_bytes
from ferry.model import ClusterSnapshot, Move, Plan
from ferry.plan.log_dirs.balance import TOLERANCE, balance_dirs
from ferry.plan.log_dirs.evacuate import evacuate_dir, parse_dir_option
from ferry.plan.log_dirs.figures import dir_figures
from ferry.plan.log_dirs.loads import dir_moves


def add_dir_options(parser: argparse.ArgumentParser) -> None:
    """``--disks balance`` and ``--evacuate-dir``."""
    dirs = parser.add_argument_group(
        "log dirs (JBOD)",
        "plan between the log dirs inside brokers, from a snapshot that lists them (a live one); "
        "nothing else is planned alongside",
    )
    dirs.add_argument(
        "--disks",
        choices=("balance",),
        help=f"balance: even out the bytes across the open dirs of each broker, each dir within "
        f"{TOLERANCE * 100:g} %% of its share (by size), moving as few bytes as that needs",
    )
    dirs.add_argument(
        "--evacuate-dir",
        metavar="BROKER:PATH",
        type=_dir_option,
        help="every replica off that dir, into the broker's other open dirs with room (emptiest "
        "first), or onto another broker (same rack first) where they lack room",
    )


def _dir_option(text: str) -> tuple[int, str]:
    try:
        return parse_dir_option(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def wants_dirs(args: argparse.Namespace) -> bool:
    return args.disks is not None or args.evacuate_dir is not None


def check_dir_usage(args: argparse.Namespace) -> None:
    """A dir plan is a job of its own: no other goal goes with it."""
    if not wants_dirs(args):
        return
    if args.disks is not None and args.evacuate_dir is not None:
        raise usage_error(
            "--disks balance and --evacuate-dir are two plans: run one, execute it, then the other"
        )
    others = (
        ("--brokers", args.brokers is not None),
        ("--remove-brokers", args.remove_brokers is not None),
        ("--replace", bool(args.replace)),
        ("--replication-factor", bool(args.replication_factors)),
        ("--topics", args.topics is not None),
        ("--balance bytes", args.balance != "replicas"),
        ("--drain-above", args.drain_above is not None),
        ("--max-moves", args.max_moves is not None),
        ("--max-bytes", args.max_bytes is not None),
        ("--fleet", args.fleet is not None),
    )
    clash = [flag for flag, given in others if given]
    if clash:
        job = "--disks balance" if args.disks is not None else "--evacuate-dir"
        raise usage_error(f"{job} plans the log dirs inside brokers: it cannot go with {clash[0]}")


def plan_dirs(
    args: argparse.Namespace, snapshot: ClusterSnapshot, source: str
) -> tuple[Plan, dict[str, Any]]:
    """The dir plan ``args`` ask for, and its report.

    Raises:
        InputError: the snapshot lists no log dirs, or names an unknown broker or dir.
        PreconditionError: an evacuated dir's replicas have nowhere to go.
    """
    if args.disks is not None:
        moves = dir_moves(snapshot, balance_dirs(snapshot))
        job: dict[str, Any] = {"disks": "balance", "tolerance": TOLERANCE}
    else:
        broker, path = args.evacuate_dir
        evacuation = evacuate_dir(snapshot, broker, path)
        moves = evacuation.moves
        job = {"evacuate_dir": {"broker": broker, "path": path}, "to_other_brokers": len(evacuation.away)}
    plan = Plan.of(moves)
    return plan, dir_report(snapshot, plan.moves, source, job)


def dir_report(
    snapshot: ClusterSnapshot, moves: Sequence[Move], source: str, job: Mapping[str, Any]
) -> dict[str, Any]:
    """report.json of a dir plan: the job, the moves, the bytes copied and each dir before/after."""
    copies = {m.tp: len(m.adding) + len(_dir_changes(m, snapshot)) for m in moves}
    return {
        "snapshot": source,
        **job,
        "replica_moves": sum(copies.values()),
        "partitions": len(moves),
        "bytes_moved": sum(m.size_bytes * copies[m.tp] for m in moves),
        "log_dirs": dir_figures(snapshot, moves),
    }


def _dir_changes(move: Move, snapshot: ClusterSnapshot) -> list[int]:
    state = snapshot.partition(move.tp)
    return [b for b in state.off_named_dirs(move.named_dirs) if b in state.replicas]


def summary(report: Mapping[str, Any], files: Sequence[Path]) -> str:
    """What a dir plan does, in a few lines."""
    rows = [r for r in report["log_dirs"] if r.get("path") is not None]
    moved = [r for r in rows if r["bytes_before"] != r["bytes_after"]]
    lines = [
        f"ferry plan: {report['replica_moves']} replica move(s) between log dirs, "
        f"{human_bytes(report['bytes_moved'])} to copy, {len(moved)} dir(s) changed",
    ]
    lines += [
        f"  broker {r['broker']} {r['path']}: "
        f"{human_bytes(r['bytes_before'])} -> {human_bytes(r['bytes_after'])}"
        + (
            f" ({r['fraction_before']:.1%} -> {r['fraction_after']:.1%} of its size)"
            if r["total_bytes"]
            else ""
        )
        for r in moved
    ]
    lines += [f"  wrote {f}" for f in files]
    return "\n".join(lines)
