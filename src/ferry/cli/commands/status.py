"""``ferry status``: is the cluster frozen, and which requests of this journal are unfinished.

The freeze comes from the cluster (every machine sees the same); the requests come from the local
journal, one line each: a ``running`` request whose executor is gone (killed) says so, since
``ferry resume`` is then what moves it on.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any

from ferry.cli.exec_render import frozen_by_text, utc_text
from ferry.cli.options import add_connection_options, add_journal_option, open_admin
from ferry.cli.requests import journal_path
from ferry.execute.journal import Journal
from ferry.execute.lock import is_live
from ferry.execute.states import RequestState, TaskState
from ferry.formats import dumps_json
from ferry.kafka.freeze import FreezeState

_UNFINISHED = (RequestState.RUNNING, RequestState.INTERRUPTED)


@dataclass(frozen=True, slots=True)
class RequestLine:
    """One unfinished request: its state, whether a live ferry holds it, and moves done of all."""

    id: int
    state: RequestState
    live: bool
    done: int
    total: int


def register(subparsers: Any) -> None:
    """Add ``status`` to the ``ferry`` parser."""
    parser = subparsers.add_parser(
        "status", help="show whether the cluster is frozen and the journal's unfinished requests"
    )
    add_connection_options(parser)
    add_journal_option(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        freeze = admin.read_freeze()
    path = journal_path(args)
    requests = unfinished_requests(path)
    if args.json:
        print(dumps_json(status_json(freeze, path, requests)), end="")
    else:
        print(status_text(freeze, path, requests))
    return 0


def unfinished_requests(path: Path) -> tuple[RequestLine, ...]:
    """The journal's running and interrupted requests, oldest first (none without a journal)."""
    # A read must not create a journal; without one, ferry started nothing here.
    if not path.exists():
        return ()
    with Journal.open(path) as journal:
        lines = []
        for request in journal.requests(_UNFINISHED):
            tasks = journal.tasks(request.id)
            done = sum(1 for t in tasks if t.state is TaskState.DONE)
            live = request.state is RequestState.RUNNING and is_live(path, request.id)
            lines.append(RequestLine(request.id, request.state, live, done, len(tasks)))
    return tuple(lines)


def status_text(freeze: FreezeState | None, path: Path, requests: tuple[RequestLine, ...]) -> str:
    """Two parts: the freeze line, then one line per unfinished request."""
    if freeze is not None and freeze.frozen:
        lines = [f"frozen {frozen_by_text(freeze)}"]
    elif freeze is not None:
        lines = [f"not frozen (unfrozen by {freeze.by} at {utc_text(freeze.at)})"]
    else:
        lines = ["not frozen"]
    if not requests:
        lines.append(f"no running or interrupted requests in {path}")
        return "\n".join(lines)
    lines.append(f"unfinished requests in {path}:")
    for r in requests:
        gone = ", executor gone: 'ferry resume' it" if r.state is RequestState.RUNNING and not r.live else ""
        lines.append(f"  request {r.id}: {r.state}{gone}, {r.done}/{r.total} moves done")
    return "\n".join(lines)


def status_json(freeze: FreezeState | None, path: Path, requests: tuple[RequestLine, ...]) -> dict[str, Any]:
    """``{"frozen", "freeze": {...} | null, "journal", "requests": [...]}``."""
    record = None
    if freeze is not None:
        record = {
            "frozen": freeze.frozen,
            "reason": freeze.reason,
            "by": freeze.by,
            "at": freeze.at.astimezone(UTC).isoformat(),
        }
    return {
        "frozen": freeze is not None and freeze.frozen,
        "freeze": record,
        "journal": str(path),
        "requests": [
            {"id": r.id, "state": str(r.state), "live": r.live, "done": r.done, "total": r.total}
            for r in requests
        ],
    }
