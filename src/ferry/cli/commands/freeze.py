"""``ferry freeze`` / ``ferry unfreeze``: the cluster-wide brake on new moves.

The flag is a record in the cluster (:mod:`ferry.kafka.freeze`), so one command stops every ferry
that talks to that cluster, from any machine: running executors finish the moves they have in
flight and submit nothing new until ``ferry unfreeze``. ``--cancel`` also stops ferry's moves in
flight (as ``ferry cancel --all`` would, without touching moves other tools started).
"""

from __future__ import annotations

import argparse
import getpass
import socket
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ferry.cli.exec_render import frozen_by_text, frozen_text, late_writes_text, outcome_text
from ferry.cli.options import add_connection_options, add_journal_option, open_admin
from ferry.cli.requests import journal_path
from ferry.errors import UsageError
from ferry.execute.cancel import Outcome, Scope, cancel
from ferry.execute.journal import Journal
from ferry.execute.states import OPEN_TASK_STATES
from ferry.kafka.admin import ClusterAdmin
from ferry.kafka.freeze import CONTROL_TOPIC, FreezeState

_FREEZE_DESCRIPTION = f"""\
Freeze the cluster: from now on no ferry process, on any machine, submits new moves. Running
executors say they are paused and why, and let the moves they have in flight finish; an executor
started while frozen waits paused. The flag is a record in the compacted topic
{CONTROL_TOPIC} (created on first use), so 'ferry status' shows it everywhere.
With --cancel, ferry's moves in flight (those in this journal) are cancelled too."""


def register(subparsers: Any) -> None:
    """Add ``freeze`` and ``unfreeze`` to the ``ferry`` parser."""
    freeze = subparsers.add_parser(
        "freeze",
        help="stop every ferry from submitting new moves (cluster-wide, until unfreeze)",
        description=_FREEZE_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    freeze.add_argument("--reason", required=True, metavar="TEXT", help="why; shown to every executor")
    freeze.add_argument(
        "--cancel", action="store_true", help="also cancel ferry's moves in flight (see 'ferry cancel')"
    )
    add_connection_options(freeze)
    add_journal_option(freeze)
    freeze.set_defaults(func=_freeze)
    unfreeze = subparsers.add_parser(
        "unfreeze", help="let ferry submit moves again; paused executors carry on by themselves"
    )
    add_connection_options(unfreeze)
    unfreeze.set_defaults(func=_unfreeze)


def _freeze(args: argparse.Namespace) -> int:
    reason = " ".join(args.reason.split())
    if not reason:
        raise UsageError("--reason must say why the cluster is frozen")
    with open_admin(args) as admin:
        before = admin.read_freeze()
        state = FreezeState(True, reason, operator(), datetime.now(UTC))
        admin.write_freeze(state)
        outcome = _cancel_ours(admin, journal_path(args)) if args.cancel else None
    if before is not None and before.frozen:
        print(f"ferry freeze: replacing: {frozen_text(before)}", file=sys.stderr)
    print(
        f"ferry freeze: {frozen_text(state)}; no ferry submits new moves until 'ferry unfreeze'"
        " (moves in flight go on)"
        if outcome is None
        else "",
        file=sys.stderr,
    )
    if outcome is not None:
        print(outcome_text(outcome), end="")
    return 0


def _cancel_ours(admin: ClusterAdmin, path: Path) -> Outcome | None:
    """Cancel every open move of the journal at ``path``; None when there is nothing to cancel."""
    if not path.exists():
        return None
    with Journal.open(path) as journal:
        if not journal.tasks(states=OPEN_TASK_STATES):
            return None
        return cancel(admin, journal, Scope(everything=True), _wait_out)


def _wait_out(seconds: float) -> None:
    print(f"ferry freeze: {late_writes_text(seconds)}", file=sys.stderr)
    time.sleep(seconds)


def _unfreeze(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        before = admin.read_freeze()
        if before is None or not before.frozen:
            # Nothing to lift: writing anyway would create the control topic for nothing.
            print("ferry unfreeze: the cluster is not frozen", file=sys.stderr)
            return 0
        admin.write_freeze(FreezeState(False, "", operator(), datetime.now(UTC)))
    print(f"ferry unfreeze: unfrozen; it was frozen {frozen_by_text(before)}", file=sys.stderr)
    return 0


def operator() -> str:
    """``user@host`` of whoever runs the command, for the record's ``by``."""
    try:
        user = getpass.getuser()
    except (OSError, KeyError):
        # No login name in the environment and no passwd entry (some containers).
        user = "unknown"
    return f"{user}@{socket.gethostname()}"
