"""``ferry requests``: every request in the journal with its state; progress and ETA of running ones.

The journal alone gives states and task counts. With ``--bootstrap-server`` the requests that a
live ferry process runs are measured too (bytes of their adding replicas, twice ``--interval``
apart for the rate and ETA, as ``ferry progress`` does), so queued work shows how far along it is.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ferry.cli.options import add_connection_options, add_journal_option, add_measure_options, open_admin
from ferry.cli.progress_render import silent_text
from ferry.cli.render import human_bytes
from ferry.cli.requests import journal_path, open_existing
from ferry.errors import UsageError
from ferry.execute.journal import Journal
from ferry.execute.lock import is_live
from ferry.execute.progress import Progress, Sample, estimate, total
from ferry.execute.records import RequestRecord
from ferry.execute.report import measure
from ferry.formats import dumps_json
from ferry.kafka.admin import ClusterAdmin


@dataclass(frozen=True, slots=True)
class Row:
    """One request as listed."""

    request: RequestRecord
    tasks: Counter[str]
    live: bool
    progress: Progress | None = None
    eta_s: float | None = None
    silent: frozenset[int] = frozenset()
    """Brokers of its moves that did not answer the measurement in time."""


def register(subparsers: Any) -> None:
    """Add ``requests`` to the ``ferry`` parser."""
    parser = subparsers.add_parser(
        "requests",
        help="list the journal's requests: state, tasks, progress and ETA of running ones",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_journal_option(parser)
    add_connection_options(parser, required=False)
    add_measure_options(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.interval < 0 or (args.timeout is not None and args.timeout <= 0):
        raise UsageError("--interval must not be negative and --timeout must be positive")
    with open_existing(journal_path(args)) as journal:
        rows = [_row(journal, r) for r in journal.requests()]
        if args.bootstrap_server:
            with open_admin(args) as admin:
                rows = _measured(admin, journal, rows, args.interval)
    print(dumps_json([_json(r) for r in rows]) if args.json else _table(rows), end="")
    return 0


def _row(journal: Journal, request: RequestRecord) -> Row:
    counts = Counter(t.state.value for t in journal.tasks(request.id))
    return Row(request, counts, is_live(journal.path, request.id))


def _measured(admin: ClusterAdmin, journal: Journal, rows: Sequence[Row], interval: float) -> list[Row]:
    running = [r for r in rows if r.live]
    first = {r.request.id: measure(admin, journal.tasks(r.request.id)) for r in running}
    started = time.monotonic()
    if running and interval > 0:
        time.sleep(interval)
    out = []
    for row in rows:
        if row.request.id not in first:
            out.append(row)
            continue
        before = first[row.request.id]
        # Without an interval there is no rate to take: the one measurement is the figure.
        tasks = journal.tasks(row.request.id)
        replicas, silent = measure(admin, tasks, None, before.replicas) if interval > 0 else before
        then, now = total(before.replicas), total(replicas)
        samples = [Sample(started, then.done), Sample(time.monotonic(), now.done)]
        eta = estimate(samples, now.remaining).eta_s if interval > 0 else None
        out.append(Row(row.request, row.tasks, row.live, now, eta, silent))
    return out


def _table(rows: Sequence[Row]) -> str:
    if not rows:
        return "no requests in the journal\n"
    lines = [f"{'ID':>4}  {'KIND':<8}  {'STATE':<11}  {'CREATED':<19}  TASKS"]
    for row in rows:
        r = row.request
        kind = r.kind.value if r.origin_request is None else f"{r.kind.value}<{r.origin_request}"
        created = datetime.fromtimestamp(r.created_at, UTC).strftime("%Y-%m-%d %H:%M:%S")
        tasks = ", ".join(f"{n} {state}" for state, n in sorted(row.tasks.items()))
        line = (
            f"{r.id:>4}  {kind:<8}  {r.state.value + ('*' if row.live else ''):<11}  {created:<19}  {tasks}"
        )
        if row.progress is not None:
            p = row.progress
            line += f"; {human_bytes(p.done)} of {human_bytes(p.total)}"
            if row.eta_s is not None:
                line += f", ETA {row.eta_s:.0f} s"
            if row.silent:
                line += f"; {silent_text(row.silent)}"
        if r.options.force:
            line += f"; forced: {r.options.force}"
        lines.append(line)
    lines.append("(* a live ferry process is running it)")
    return "\n".join(lines) + "\n"


def _json(row: Row) -> dict[str, Any]:
    r = row.request
    data: dict[str, Any] = {
        "id": r.id,
        "kind": r.kind.value,
        "origin_request": r.origin_request,
        "state": r.state.value,
        "live": row.live,
        "created_at": r.created_at,
        "finished_at": r.finished_at,
        "tasks": dict(sorted(row.tasks.items())),
        "note": r.note,
        "force": r.options.force,
    }
    if row.progress is not None:
        data["progress"] = {"done_bytes": row.progress.done, "total_bytes": row.progress.total}
        data["eta_s"] = row.eta_s
        data["silent_brokers"] = sorted(row.silent)
    return data
