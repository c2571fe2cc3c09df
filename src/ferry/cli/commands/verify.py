"""``ferry verify``: is every partition of a plan at its target? Clean up throttles ferry left.

Exit 0 when all partitions reached their targets, 6 (ExecutionIncomplete) otherwise; either way
the throttles ferry left behind are restored from the journal once nothing of the plan is moving
(see :mod:`ferry.execute.verify`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ferry.cli.options import add_connection_options, add_journal_option, open_admin
from ferry.cli.requests import journal_path
from ferry.errors import ExecutionIncomplete
from ferry.execute.journal import Journal
from ferry.execute.verify import PartitionCheck, Status, check_cluster, clear_leftover_throttles
from ferry.formats import load_reassignment


def register(subparsers: Any) -> None:
    """Add ``verify`` to the ``ferry`` parser."""
    parser = subparsers.add_parser(
        "verify", help="check that a plan's partitions reached their targets; remove leftover throttles"
    )
    parser.add_argument("--plan", type=Path, required=True, metavar="FILE", help="reassignment JSON")
    add_connection_options(parser)
    add_journal_option(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    reassignment = load_reassignment(args.plan)
    path = journal_path(args)
    with open_admin(args) as admin:
        checks = check_cluster(admin, reassignment.targets, reassignment.named_dirs)
        for line in map(check_line, checks):
            print(line)
        moving = any(c.status is Status.MOVING for c in checks)
        if moving:
            print("throttles kept: moves of the plan are in flight (verify again when they end)")
        elif path.exists():  # no journal: ferry never set a throttle through it
            with Journal.open(path) as journal:
                cleared = clear_leftover_throttles(admin, journal, reassignment.targets)
            print(
                f"throttles: {cleared} config(s) left by ferry restored"
                if cleared
                else "throttles: none left"
            )
    missing = [c for c in checks if c.status is not Status.REACHED]
    if missing:
        raise ExecutionIncomplete(
            f"{len(missing)} of {len(checks)} partition(s) not at their target (first: {missing[0].tp})",
            hint="'ferry resume REQUEST' continues an interrupted request",
        )
    return 0


def check_line(c: PartitionCheck) -> str:
    """One line per partition, in the spirit of kafka-reassign-partitions --verify."""
    if c.status is Status.REACHED:
        return f"{c.tp}: reached {list(c.target)}"
    if c.status is Status.MOVING:
        return f"{c.tp}: still moving to {list(c.target)} (replicas now {list(c.replicas)})"
    return f"{c.tp}: not reached: replicas {list(c.replicas)}, target {list(c.target)}, nothing in flight"
