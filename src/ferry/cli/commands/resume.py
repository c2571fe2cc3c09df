"""``ferry resume REQUEST``: continue an interrupted request from the journal.

The submitted tasks are reconciled with the cluster first (finished ones are never submitted
again, see :mod:`ferry.execute.resume`), then the request runs on under its recorded options
(limits, order, throttle) until every move has ended, and its throttles are restored at the end,
as with ``ferry execute``. ``--pace auto`` (with ``--max-throttle``, ``--schedule``) makes it go on
under the pace controller from now on, starting from its recorded throttle; ``--pace static``
goes back to that throttle for the whole run. The cluster defaults to the bootstrap servers the
request recorded; a different cluster (another cluster id) is refused.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from ferry.cli.exec_render import resumed_text
from ferry.cli.interrupts import Interrupts
from ferry.cli.options import (
    DEFAULT_TIMEOUT_S,
    add_journal_option,
    add_pace_options,
    admin_options,
    pace_settings,
)
from ferry.cli.requests import journal_path, open_existing
from ferry.cli.running import progress_listener
from ferry.errors import PreconditionError, UsageError
from ferry.execute.executor import Executor
from ferry.execute.pace.settings import DEFAULT_START


def register(subparsers: Any) -> None:
    """Add ``resume`` to the ``ferry`` parser."""
    parser = subparsers.add_parser("resume", help="continue an interrupted request from the journal")
    parser.add_argument("request", type=int, metavar="REQUEST", help="request id (see 'ferry execute')")
    parser.add_argument(
        "--bootstrap-server", metavar="HOST:PORT[,...]", help="brokers to connect to (default: as recorded)"
    )
    parser.add_argument("--command-config", type=Path, metavar="FILE", help="Kafka client properties file")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S", help="per request")
    add_journal_option(parser)
    parser.add_argument("--wait", action="store_true", help="print progress on stderr while moves run")
    add_pace_options(parser, default=None)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    connection = admin_options(args)
    with open_existing(journal_path(args)) as journal:
        request = journal.request(args.request)
        if args.pace is not None and not request.state.is_final:
            options = replace(request.options, pace=pace_settings(args))
            if options.pace is not None and options.throttle is None:
                options = replace(options, throttle=DEFAULT_START)
            journal.set_request_options(request.id, options)
        bootstrap = args.bootstrap_server or request.bootstrap
        with connection.open(bootstrap) as admin:
            cluster_id = admin.cluster_id()
            if request.cluster_id and cluster_id and cluster_id != request.cluster_id:
                raise PreconditionError(
                    f"request {request.id} ran on cluster {request.cluster_id}, {bootstrap} is {cluster_id}",
                    hint="pass the --bootstrap-server of the request's cluster",
                )
            with Interrupts() as interrupts, progress_listener(args.wait) as listener:
                executor = Executor(admin, journal, listener=listener, shield=interrupts.shielded)
                found = executor.resume(request.id)
    print(
        f"ferry resume: request {request.id}: done; {resumed_text(found)}",
        file=sys.stderr,
    )
    return 0
