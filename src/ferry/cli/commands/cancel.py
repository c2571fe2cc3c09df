"""``ferry cancel``: stop in-flight moves now (KIP-455); not a revert -- see ``ferry rollback``."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from ferry.cli.exec_render import late_writes_text, outcome_json, outcome_text
from ferry.cli.options import add_connection_options, add_journal_option, admin_options
from ferry.cli.requests import journal_path, open_existing
from ferry.errors import UsageError
from ferry.execute.cancel import Scope, cancel
from ferry.execute.journal import Journal
from ferry.formats import dumps_json
from ferry.kafka.admin import ClusterAdmin
from ferry.model import TopicPartition

_DESCRIPTION = """\
Stop in-flight reassignments at once (AlterPartitionReassignments with no target). The
controller drops the replicas each move was adding and keeps the rest; cancel is not a rollback:
replicas an earlier, re-targeted move brought in stay, so a partition may keep more replicas than
before (the output names those partitions). On KRaft, an adding replica that already joined the
ISR is dropped too. Pending moves of the scope are never submitted. The throttles of the
cancelled moves are removed, and the journal marks their tasks cancelled (a move found already
at its target, finished while no ferry watched, is marked done). To restore the original
replicas, use 'ferry rollback'.

--all also cancels reassignments ferry did not start, after a confirmation (or --yes)."""


def register(subparsers: Any) -> None:
    """Add ``cancel`` to the ``ferry`` parser."""
    parser = subparsers.add_parser(
        "cancel",
        help="stop in-flight moves now (drops their adding replicas; not a rollback)",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    scope = parser.add_mutually_exclusive_group(required=True)
    scope.add_argument("--request", type=int, metavar="ID", help="every open move of one request")
    scope.add_argument("--topic", metavar="TOPIC", help="ferry's open moves of one topic")
    scope.add_argument("--partition", metavar="TOPIC:P", help="ferry's open move of one partition")
    scope.add_argument("--all", action="store_true", help="everything in flight, ferry's or not")
    parser.add_argument("--yes", action="store_true", help="do not ask before cancelling others' moves")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    add_connection_options(parser)
    add_journal_option(parser)
    parser.set_defaults(func=_run)


def parse_partition(text: str) -> TopicPartition:
    """``orders:3`` -> TopicPartition("orders", 3) (topic names cannot hold ':').

    Raises:
        UsageError: not ``TOPIC:PARTITION`` with a non-negative partition.
    """
    topic, _, number = text.rpartition(":")
    if not topic or not number.isdigit():
        raise UsageError(f"--partition {text!r}: expected TOPIC:PARTITION, e.g. orders:3")
    return TopicPartition(topic, int(number))


def _run(args: argparse.Namespace) -> int:
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    partition = parse_partition(args.partition) if args.partition else None
    connection = admin_options(args)
    with (
        # --all works without a journal too: it may cancel only others' moves.
        Journal.open(journal_path(args)) if args.all else open_existing(journal_path(args)) as journal,
        connection.open() as admin,
    ):
        foreign = args.all and _confirm_foreign(admin, journal, args.yes)
        scope = Scope(args.request, args.topic, partition, args.all, foreign)
        outcome = cancel(admin, journal, scope, _wait_out)
    print(dumps_json(outcome_json(outcome)) if args.json else outcome_text(outcome), end="")
    return 0


def _wait_out(seconds: float) -> None:
    print(f"ferry cancel: {late_writes_text(seconds)}", file=sys.stderr)
    time.sleep(seconds)


def _confirm_foreign(admin: ClusterAdmin, journal: Journal, yes: bool) -> bool:
    """Whether ``--all`` may cancel the reassignments ferry did not start (asks on a terminal)."""
    ours = journal.moving_partitions()
    others = [r.tp for r in admin.list_reassignments() if r.tp not in ours]
    if not others or yes:
        return True
    if not sys.stdin.isatty():
        raise UsageError(
            f"--all would also cancel {len(others)} reassignment(s) ferry did not start",
            hint="pass --yes to confirm, or cancel ferry's requests with --request",
        )
    print(
        f"{len(others)} reassignment(s) in flight were not started by ferry, e.g. {others[0]}.",
        file=sys.stderr,
    )
    answer = input("Cancel them too? [y/N] ").strip().lower()
    return answer in ("y", "yes")
