"""``ferry rollback``: restore the original replicas of a request (KIP-236) as a new tracked request."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ferry.cli.options import add_request_options, admin_options, run_options
from ferry.cli.requests import journal_path
from ferry.cli.running import run_request
from ferry.errors import PreconditionError, UsageError
from ferry.execute import safety
from ferry.execute.executor import Executor
from ferry.execute.journal import Journal
from ferry.execute.rollback import RollbackPlan, plan_rollback
from ferry.execute.states import TaskState
from ferry.formats import load_reassignment
from ferry.kafka.snapshot import collect
from ferry.model import TopicPartition

_DESCRIPTION = """\
Restore the original replicas (recorded when the request was submitted) of every partition
request REQUEST touched, finished or not, as a new request with its own id: throttled, batched and
tracked like 'ferry execute', ending with a preferred-leader election. Moves of REQUEST still
pending are cancelled; moves still in flight are re-targeted back without waiting for them.

A partition none of whose original replicas is alive and in the ISR (or able to copy the data) is
skipped and reported: rolling it back would take it offline. When all original and all current
replicas are offline it is rolled back anyway (KIP-236: nothing left to lose).

--file ROLLBACK_JSON does the same for work started by other tools (e.g. the rollback.json that
'ferry plan' or kafka-reassign-partitions wrote)."""


def register(subparsers: Any) -> None:
    """Add ``rollback`` to the ``ferry`` parser."""
    parser = subparsers.add_parser(
        "rollback",
        help="restore a request's original replicas, as a new throttled and tracked request",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("request", nargs="?", type=int, metavar="REQUEST", help="the request to undo")
    parser.add_argument(
        "--file", type=str, metavar="ROLLBACK_JSON", help="original replicas in Kafka's format"
    )
    add_request_options(parser, originals=False)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if (args.request is None) == (args.file is None):
        raise UsageError("name either a REQUEST to roll back or --file ROLLBACK_JSON, not both")
    options = run_options(args)
    connection = admin_options(args)
    with (
        connection.open() as admin,
        Journal.open(journal_path(args)) as journal,
    ):
        originals, dirs = _originals(journal, args)
        live = collect(admin, sorted({tp.topic for tp in originals}))
        rollback = plan_rollback(originals, live, dirs)
        _report(rollback)
        if not rollback.plan.moves:
            print("ferry rollback: nothing to move", file=sys.stderr)
            return 0
        exempt = set(rollback.offline)
        refusals = [
            r for r in safety.check(rollback.plan.moves, live.snapshot, live.min_insync) if r.tp not in exempt
        ]
        safety.enforce(refusals, options.force)
        if args.request is not None:
            _cancel_pending(journal, args.request)
        request_id = Executor(admin, journal).prepare(
            rollback.plan,
            bootstrap=args.bootstrap_server,
            options=options,
            rollback_of=args.request,
            now=live.snapshot,
        )
        run_request(admin, journal, request_id, len(rollback.plan.moves), wait=args.wait, command="rollback")
    return 0


def _originals(
    journal: Journal, args: argparse.Namespace
) -> tuple[dict[TopicPartition, tuple[int, ...]], dict[TopicPartition, dict[int, str]]]:
    """The replicas to restore, and the log dirs to restore them into where known: from the
    request's tasks (submitted ones), or from ``--file`` (its ``log_dirs``)."""
    if args.file is not None:
        loaded = load_reassignment(args.file)
        return dict(loaded.targets), {tp: dict(d) for tp, d in loaded.named_dirs.items()}
    journal.request(args.request)  # an unknown id is an error, not "nothing to do"
    touched = [t for t in journal.tasks(args.request) if t.submitted_at is not None]
    if not touched:
        raise PreconditionError(f"request {args.request} submitted no move: nothing to roll back")
    return {t.tp: t.original for t in touched}, {
        t.tp: dict(t.original_dirs) for t in touched if t.original_dirs
    }


def _cancel_pending(journal: Journal, request_id: int) -> None:
    pending = [t.id for t in journal.tasks(request_id, [TaskState.PENDING])]
    journal.transition_if(pending, TaskState.PENDING, TaskState.CANCELLED, error="rolled back")


def _report(rollback: RollbackPlan) -> None:
    for tp, why in rollback.skipped.items():
        print(f"ferry rollback: skipped {tp}: {why}", file=sys.stderr)
    for tp in rollback.offline:
        print(
            f"ferry rollback: {tp}: all original and current replicas are offline: rolled back anyway",
            file=sys.stderr,
        )
    if rollback.unchanged:
        print(
            f"ferry rollback: {rollback.unchanged} partition(s) have their original replicas already",
            file=sys.stderr,
        )
