"""``ferry execute``: run a reassignment plan on a live cluster, batched, throttled and journalled.

The request is recorded (originals, throttles and their pre-existing values) before anything is
submitted, its id is printed on stdout at once, and the command stays until every move has ended:
batches need a driver to be submitted as slots free up, and the throttles are restored when it
ends, however it ends (SIGTERM is turned into the same interruption as Ctrl-C, so ``finally``
blocks run, and a second one waits for the cleanup: see :mod:`ferry.cli.interrupts`). ``--wait``
adds progress lines on stderr.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console

from ferry.cli.commands.snapshot import add_connection_options
from ferry.cli.exec_render import event_line, resumed_text
from ferry.cli.interrupts import Interrupts
from ferry.cli.live_progress import LiveProgress
from ferry.errors import UsageError
from ferry.execute import safety
from ferry.execute.batching import DEFAULT_MAX_MOVES_PER_BROKER, Limits
from ferry.execute.events import Event, Listener, ProgressUpdate, SubmissionPaused, SubmissionResumed
from ferry.execute.executor import Executor
from ferry.execute.journal import Journal, default_journal_path
from ferry.execute.options import ExecuteOptions
from ferry.execute.resume import resumable_request
from ferry.execute.states import RequestState
from ferry.execute.strategies import DEFAULT_ORDER, STRATEGIES, parse_order
from ferry.formats import Reassignment, load_reassignment
from ferry.kafka.admin import ClusterAdmin
from ferry.kafka.client import KafkaPythonAdmin, load_command_config
from ferry.kafka.snapshot import LiveSnapshot, collect
from ferry.model import Plan, TopicPartition

_PROGRESS_EVERY_S = 5.0
_DESCRIPTION = """\
Run a reassignment plan (Kafka's reassignment JSON, e.g. from 'ferry plan') on a live cluster.
The request is recorded in the journal before anything is submitted and its id is printed on
stdout. Moves are submitted in batches as the limits allow; with --throttle, replication of
exactly the moving replicas is throttled and every throttle config is restored when the run ends,
however it ends. ferry stays until the last move has ended (--wait prints progress meanwhile).
Refuses (exit 4) while reassignments ferry did not start are in flight, unless --additional.
While the cluster is frozen ('ferry freeze', from any machine) it submits no new moves: started
frozen, it records the request, says the cluster is frozen, by whom and why, and waits paused;
frozen mid-run, the moves in flight go on. It carries on by itself after 'ferry unfreeze'."""


def register(subparsers: Any) -> None:
    """Add ``execute`` to the ``ferry`` parser."""
    parser = subparsers.add_parser(
        "execute",
        help="run a reassignment plan on the cluster: batched, throttled, journalled",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--plan", type=Path, required=True, metavar="FILE", help="reassignment JSON")
    add_connection_options(parser)
    add_journal_option(parser)
    add_run_options(parser)
    add_safety_options(parser)
    parser.set_defaults(func=_run)


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """How a request runs: throttle, limits, order, --wait, --additional, --no-elect."""
    _add_poll_interval(parser)
    parser.add_argument("--throttle", type=int, metavar="BYTES_PER_S", help="replication throttle (none)")
    parser.add_argument(
        "--max-moves-per-broker",
        type=int,
        default=DEFAULT_MAX_MOVES_PER_BROKER,
        metavar="N",
        help="moves in flight per broker gaining or losing a replica (%(default)s)",
    )
    parser.add_argument(
        "--max-moves", type=int, metavar="N", help="ferry's moves in flight in the whole cluster"
    )
    parser.add_argument(
        "--order",
        default=",".join(DEFAULT_ORDER),
        metavar="A[,B...]",
        help=f"ordering strategies, first wins ({', '.join(sorted(STRATEGIES))}; default %(default)s)",
    )
    parser.add_argument("--wait", action="store_true", help="print progress on stderr while moves run")
    parser.add_argument(
        "--additional",
        action="store_true",
        help="run even though reassignments ferry did not start are in flight",
    )
    parser.add_argument(
        "--no-elect", action="store_true", help="skip the preferred-leader election at the end"
    )


def _add_poll_interval(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--poll-interval", type=float, default=1.0, metavar="S", help=argparse.SUPPRESS)


_FORCE_HELP = (
    "submit even what the safety checks refuse (below min.insync.replicas, onto a broker that is "
    "not alive, stale plan); the reason is kept in the journal"
)


def add_safety_options(
    parser: argparse.ArgumentParser, *, originals: bool = True, force_help: str = _FORCE_HELP
) -> None:
    """``--force REASON`` and (for plans) ``--originals FILE``: the safety checks' options."""
    if originals:
        parser.add_argument(
            "--originals",
            type=Path,
            metavar="FILE",
            help="the replicas the plan was made from, for the stale-plan check (default: "
            "rollback.json beside the plan, as 'ferry plan' writes it, when present)",
        )
    parser.add_argument("--force", metavar="REASON", help=force_help)


def check_force(args: argparse.Namespace) -> None:
    """An override must say why: the reason is all a later reader has to go on.

    Raises:
        UsageError: ``--force`` with an empty reason.
    """
    if args.force is not None and not args.force.strip():
        raise UsageError("--force needs a reason, e.g. --force 'broker 7 is being replaced'")


def add_journal_option(parser: argparse.ArgumentParser) -> None:
    """``--journal PATH`` (default: the user's state directory)."""
    parser.add_argument(
        "--journal",
        type=Path,
        metavar="PATH",
        help=f"journal file (default {default_journal_path()})",
    )


def run_options(args: argparse.Namespace) -> ExecuteOptions:
    """The :class:`ExecuteOptions` of :func:`add_run_options` and ``--force``."""
    if args.throttle is not None and args.throttle < 1:
        raise UsageError("--throttle must be a positive number of bytes per second")
    if args.timeout <= 0 or args.poll_interval <= 0:
        raise UsageError("--timeout and --poll-interval must be positive")
    check_force(args)
    return ExecuteOptions(
        throttle=args.throttle,
        limits=Limits(args.max_moves_per_broker, args.max_moves),
        ordering=parse_order(args.order),
        additional=args.additional,
        elect=not args.no_elect,
        poll_interval_s=args.poll_interval,
        force=args.force,
    )


def _run(args: argparse.Namespace) -> int:
    options = run_options(args)
    reassignment = load_reassignment(args.plan)
    settings = load_command_config(args.command_config)
    with (
        KafkaPythonAdmin(args.bootstrap_server, settings, timeout_s=args.timeout) as admin,
        Journal.open(args.journal or default_journal_path()) as journal,
    ):
        live = collect(admin, sorted({e.tp.topic for e in reassignment.entries}))
        plan = _live_plan(live, reassignment, str(args.plan), journal)
        interrupted = resumable_request(
            journal, admin.cluster_id(), reassignment.targets, [m.tp for m in plan.moves]
        )
        if interrupted is not None:
            return _resume(Executor(admin, journal), interrupted, options, args.wait)
        if not plan.moves:
            print(
                "ferry execute: every partition of the plan has its target replicas already", file=sys.stderr
            )
            return 0
        refusals = safety.check(plan.moves, live.snapshot, live.min_insync, _originals(args))
        safety.enforce(refusals, options.force)
        request_id = Executor(admin, journal).prepare(plan, bootstrap=args.bootstrap_server, options=options)
        run_request(admin, journal, request_id, len(plan.moves), wait=args.wait, command="execute")
    return 0


def run_request(
    admin: ClusterAdmin, journal: Journal, request_id: int, moves: int, *, wait: bool, command: str
) -> None:
    """Print the new request's id, drive it to its end, and say how it ended."""
    print(request_id, flush=True)
    print(f"ferry {command}: request {request_id}: {moves} move(s), journal {journal.path}", file=sys.stderr)
    with Interrupts() as interrupts, progress_listener(wait) as listener:
        Executor(admin, journal, listener=listener, shield=interrupts.shielded).run(request_id)
    request = journal.request(request_id)
    note = f" ({request.note})" if request.note and request.state is not RequestState.DONE else ""
    print(f"ferry {command}: request {request_id}: {request.state}{note}", file=sys.stderr)


def _resume(executor: Executor, request_id: int, options: ExecuteOptions, wait: bool) -> int:
    """Continue the interrupted request of this plan (as ``ferry resume`` would) and say so."""
    print(request_id, flush=True)
    recorded = executor.options_of(request_id)
    differ = (
        "" if recorded.to_json() == options.to_json() else "; its recorded options apply, not this command's"
    )
    print(
        f"ferry execute: this plan's request {request_id} was interrupted: resuming it{differ}",
        file=sys.stderr,
    )
    with Interrupts() as interrupts, progress_listener(wait) as listener:
        found = executor.with_listener(listener, interrupts.shielded).resume(request_id)
    print(f"ferry execute: request {request_id}: done; {resumed_text(found)}", file=sys.stderr)
    return 0


def _live_plan(live: LiveSnapshot, reassignment: Reassignment, source: str, journal: Journal) -> Plan:
    """The plan's moves from the cluster's current replicas; partitions already there are dropped.

    A partition in motion lists target + original replicas; its move starts from the original
    ones (those an earlier ferry request recorded, else the replicas it is not adding), so a
    rollback of this request restores the layout from before both moves.
    """
    moves = reassignment.to_moves(live.snapshot, source)
    return Plan.of(
        replace(m, original=_original_of(m.tp, live, journal)) if m.tp in live.reassignments else m
        for m in moves
        if m.original != m.target
    )


def _original_of(tp: TopicPartition, live: LiveSnapshot, journal: Journal) -> tuple[int, ...]:
    earlier = journal.active_tasks(tp)
    if earlier:
        return earlier[-1].original
    moving = live.reassignments[tp]
    return tuple(b for b in moving.replicas if b not in moving.adding_replicas)


def _originals(args: argparse.Namespace) -> Mapping[TopicPartition, tuple[int, ...]] | None:
    """The replicas the plan was made from: ``--originals``, else ``rollback.json`` beside the plan."""
    path: Path | None = args.originals
    if path is None:
        beside = args.plan.with_name("rollback.json")
        if beside == args.plan or not beside.is_file():
            return None
        path = beside
    return load_reassignment(path).targets


@contextmanager
def progress_listener(wait: bool) -> Iterator[Listener]:
    """The listener for ``--wait``: live bars when stderr is a terminal, else log lines.

    Without ``--wait`` only pauses for a freeze (and their end) are shown. The bars are stopped
    when the block ends, however it ends, so the terminal is left clean for the final message or
    error.
    """
    if not wait:
        yield freeze_notices
    elif sys.stderr.isatty():
        with LiveProgress(Console(stderr=True)) as live:
            yield live
    else:
        yield listener_for(True)


def listener_for(verbose: bool) -> Listener:
    """Plain progress lines on stderr (one every few seconds) and a line per other event."""
    last_progress = [0.0]
    paused = [False]

    def listen(event: Event) -> None:
        if not verbose:
            return
        if isinstance(event, SubmissionPaused | SubmissionResumed):
            paused[0] = isinstance(event, SubmissionPaused)
        if isinstance(event, ProgressUpdate):
            # One progress line every few seconds is enough for a log; the rest are every poll.
            # The last one (nothing in flight) is shown at once, unless a freeze holds the rest.
            now = time.monotonic()
            if now - last_progress[0] < _PROGRESS_EVERY_S and (event.in_flight or paused[0]):
                return
            last_progress[0] = now
        line = event_line(event)
        if line:
            print(line, file=sys.stderr, flush=True)

    return listen


def freeze_notices(event: Event) -> None:
    """A line for a pause (cluster frozen) or its end, even without ``--wait``.

    An executor that stopped submitting without a word would look hung.
    """
    if isinstance(event, SubmissionPaused | SubmissionResumed):
        print(event_line(event), file=sys.stderr, flush=True)
