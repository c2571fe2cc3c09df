"""``ferry progress``: measure a request's progress once (KIP-179's numerator/denominator).

Bytes per adding replica (its size on the new broker against the leader's, from DescribeLogDirs),
rolled up per partition, per receiving broker and for the request. The rate needs two
measurements, so the command measures twice, ``--interval`` seconds apart, while moves are in
flight; the ETA is the remaining bytes at that rate, and never sooner than the busiest receiving
broker can finish at its own rate, counted at most at the share of the request's throttle that
Kafka's quota sustains (see :class:`~ferry.execute.progress.History`).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from ferry.cli.metrics import RequestMetrics
from ferry.cli.options import add_connection_options, add_journal_option, add_measure_options, admin_options
from ferry.cli.progress_render import progress_table
from ferry.cli.requests import journal_path, open_existing, pick_request
from ferry.errors import UsageError
from ferry.execute.progress import History
from ferry.execute.report import RequestProgress, measure, to_json
from ferry.execute.states import RequestState, TaskState
from ferry.execute.tiered import tiered_copies
from ferry.formats import dumps_json
from ferry.kafka.admin import ClusterAdmin


def register(subparsers: Any) -> None:
    """Add ``progress`` to the ``ferry`` parser."""
    parser = subparsers.add_parser(
        "progress", help="print a request's progress once: bytes per replica, partition, broker; rate, ETA"
    )
    parser.add_argument(
        "request", nargs="?", type=int, metavar="REQUEST", help="request id (default: the latest running one)"
    )
    add_connection_options(parser)
    add_journal_option(parser)
    add_measure_options(parser)
    parser.add_argument(
        "--metrics-textfile",
        type=Path,
        metavar="FILE",
        help="also write the request's Prometheus metrics to FILE (atomically), for node-exporter's "
        "textfile collector: run from cron or a systemd timer into its --collector.textfile.directory",
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.timeout <= 0 or args.interval < 0:
        raise UsageError("--timeout must be positive and --interval not negative")
    connection = admin_options(args)
    with open_existing(journal_path(args)) as journal:
        request = pick_request(journal, args.request, [RequestState.RUNNING], live=True)
        tasks = journal.tasks(request.id)
        with connection.open() as admin:
            tiered = tiered_copies(admin, tasks)
            replicas, silent = measure(admin, tasks, tiered)
            throttle = request.options.throttle
            history = History(throttle=throttle).add(time.monotonic(), replicas)
            if args.interval > 0 and any(t.state is TaskState.SUBMITTED for t in tasks):
                time.sleep(args.interval)
                # The journal may have moved on meanwhile (a move finished): measure its new state.
                request, tasks = journal.request(request.id), journal.tasks(request.id)
                replicas, silent = measure(admin, tasks, tiered, replicas)
                history = history.add(time.monotonic(), replicas)
            frozen = args.metrics_textfile is not None and _frozen(admin)
    estimate = history.estimate(replicas)
    report = RequestProgress(request.id, request.state, tasks, replicas, estimate, silent)
    if args.metrics_textfile is not None:
        _write_metrics(args.metrics_textfile, report, throttle, frozen=frozen)
    print(dumps_json(to_json(report)) if args.json else progress_table(report), end="")
    return 0


def _frozen(admin: ClusterAdmin) -> bool:
    state = admin.read_freeze()
    return state is not None and state.frozen


def _write_metrics(path: Path, report: RequestProgress, throttle: int | None, *, frozen: bool) -> None:
    metrics = RequestMetrics()
    metrics.start(report.request_id, throttle)
    states = [t.state for t in report.tasks]
    metrics.record(
        report.replicas,
        report.estimate,
        done=states.count(TaskState.DONE),
        in_flight=states.count(TaskState.SUBMITTED),
        moves=len(states),
        silent=report.silent,
    )
    metrics.set_frozen(frozen)
    metrics.write_textfile(path)
