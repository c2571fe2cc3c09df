"""Finding the journal and the request a command is about (``progress``, ``verify``, ``resume``)."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path

from ferry.errors import PreconditionError
from ferry.execute.journal import Journal, default_journal_path
from ferry.execute.lock import is_live
from ferry.execute.records import RequestRecord
from ferry.execute.states import RequestState


def journal_path(args: argparse.Namespace) -> Path:
    """``--journal`` or the default path."""
    path: Path | None = args.journal
    return path or default_journal_path()


def open_existing(path: Path) -> Journal:
    """Open a journal that must exist already: a command that reads one must not create it.

    Raises:
        PreconditionError: there is no journal at ``path``.
    """
    if not path.exists():
        raise PreconditionError(f"no journal at {path}", hint="pass the --journal that 'ferry execute' used")
    return Journal.open(path)


def pick_request(
    journal: Journal, request_id: int | None, states: Iterable[RequestState], *, live: bool = False
) -> RequestRecord:
    """Request ``request_id``, or the latest one in ``states`` when None.

    With ``live``, only requests a running ferry process holds count: a killed executor leaves its
    request "running" in the journal until ``ferry resume`` finds the lock free.

    Raises:
        PreconditionError: no such request, or none in ``states``.
    """
    if request_id is not None:
        return journal.request(request_id)
    wanted = tuple(states)
    found = journal.requests(wanted)
    if live:
        found = tuple(r for r in found if is_live(journal.path, r.id))
    if not found:
        names = " or ".join(s.value for s in wanted)
        raise PreconditionError(f"no {names} request in {journal.path}", hint="name the request id")
    return found[-1]
