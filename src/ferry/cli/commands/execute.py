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
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ferry.cli.exec_render import resumed_text
from ferry.cli.interrupts import Interrupts
from ferry.cli.metrics import RequestMetrics, served
from ferry.cli.options import add_request_options, admin_options, run_options
from ferry.cli.running import progress_listener, run_request, with_metrics
from ferry.errors import and_more
from ferry.execute import safety
from ferry.execute.executor import Executor
from ferry.execute.journal import Journal, default_journal_path
from ferry.execute.options import ExecuteOptions
from ferry.execute.resume import resumable_request
from ferry.formats import Reassignment, load_reassignment
from ferry.kafka.snapshot import LiveSnapshot, collect
from ferry.model import Move, Plan, TopicPartition

_DESCRIPTION = """\
Run a reassignment plan (Kafka's reassignment JSON, e.g. from 'ferry plan') on a live cluster.
The request is recorded in the journal before anything is submitted and its id is printed on
stdout. Moves are submitted in batches as the limits allow; with --throttle, replication of
exactly the moving replicas is throttled and every throttle config is restored when the run ends,
however it ends. ferry stays until the last move has ended (--wait prints progress meanwhile).
The plan's log_dirs (JBOD) are honoured: a new replica is created in its dir, a replica changing
dir on its broker is copied there under --dir-throttle, one per broker at a time by default.
Refuses (exit 4) while reassignments ferry did not start are in flight, unless --additional.
While the cluster is frozen ('ferry freeze', from any machine) it submits no new moves: started
frozen, it records the request, says the cluster is frozen, by whom and why, and waits paused;
frozen mid-run, the moves in flight go on. It carries on by itself after 'ferry unfreeze'.
A poll that cannot reach the cluster (a broker restarting, a timeout, a controller failover) is
said and tried again; after 5 minutes of failing polls the run ends interrupted (exit 5), its
throttles restored where the cluster allows, and 'ferry resume' continues it. A throttle write
left unanswered that way may still land for a minute (a broker forwards it to the controller):
a run with one in its last minute waits that out, then puts back any throttle that came back."""


def register(subparsers: Any) -> None:
    """Add ``execute`` to the ``ferry`` parser."""
    parser = subparsers.add_parser(
        "execute",
        help="run a reassignment plan on the cluster: batched, throttled, journalled",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--plan", type=Path, required=True, metavar="FILE", help="reassignment JSON")
    add_request_options(parser, originals=True)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    options = run_options(args)
    reassignment = load_reassignment(args.plan)
    connection = admin_options(args)
    with (
        served(args) as metrics,
        connection.open() as admin,
        Journal.open(args.journal or default_journal_path()) as journal,
    ):
        live = collect(admin, sorted({e.tp.topic for e in reassignment.entries}))
        plan = _live_plan(live, reassignment, str(args.plan), journal)
        interrupted = resumable_request(
            journal, admin.cluster_id(), reassignment.targets, [m.tp for m in plan.moves]
        )
        if interrupted is not None:
            return _resume(Executor(admin, journal), journal, interrupted, (options, args.wait, metrics))
        if not plan.moves:
            print(
                "ferry execute: every partition of the plan has its target replicas (and log dirs) already",
                file=sys.stderr,
            )
            return 0
        originals = _originals(args)
        refusals = safety.check(plan.moves, live.snapshot, live.min_insync, originals)
        safety.enforce(refusals, options.force)
        shuffled = safety.reordered(plan.moves, originals or {})
        if shuffled:
            print(
                f"ferry execute: warning: {and_more(shuffled)}: same replicas as the plan was made from, "
                "in another order (a cancelled reassignment puts them back in KRaft's order); moving them",
                file=sys.stderr,
            )
        request_id = Executor(admin, journal).prepare(
            plan, bootstrap=args.bootstrap_server, options=options, now=live.snapshot
        )
        run_request(
            admin, journal, request_id, len(plan.moves), wait=args.wait, command="execute", metrics=metrics
        )
    return 0


def _resume(
    executor: Executor,
    journal: Journal,
    request_id: int,
    how: tuple[ExecuteOptions, bool, RequestMetrics | None],
) -> int:
    options, wait, metrics = how
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
    with Interrupts() as interrupts, progress_listener(wait) as shown:
        listener = with_metrics(shown, metrics, journal, request_id)
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
        if m.original != m.target or _dirs_to_change(m, live)
    )


def _dirs_to_change(move: Move, live: LiveSnapshot) -> bool:
    """Whether a replica of ``move`` is not in the log dir the move names for it."""
    return bool(live.snapshot.partition(move.tp).off_named_dirs(move.named_dirs))


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
