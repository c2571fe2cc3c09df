"""``ferry list``: ongoing reassignments in the reassignment-JSON format (KIP-455's ``--list``).

Each partition carries its target as ``replicas`` (so the output can be fed back to a reassignment
tool), plus ``adding_replicas``, ``removing_replicas`` and, when ferry started it, the ``request``
id from the journal. Nothing in flight prints ``{}``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ferry.cli.options import add_connection_options, add_journal_option, open_admin
from ferry.execute.journal import Journal, default_journal_path
from ferry.execute.states import TaskState
from ferry.formats import dumps_json
from ferry.kafka.admin import OngoingReassignment
from ferry.model import TopicPartition


def register(subparsers: Any) -> None:
    """Add ``list`` to the ``ferry`` parser."""
    parser = subparsers.add_parser("list", help="print the reassignments in flight (reassignment JSON)")
    add_connection_options(parser)
    add_journal_option(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        ongoing = admin.list_reassignments()
    owners = _owners(args.journal or default_journal_path())
    print(dumps_json(listing(ongoing, owners)), end="")
    return 0


def _owners(path: Path) -> dict[TopicPartition, int]:
    # A read must not create a journal; without one, ferry started nothing.
    if not path.exists():
        return {}
    with Journal.open(path) as journal:
        return {t.tp: t.request_id for t in journal.tasks(states=[TaskState.SUBMITTED])}


def listing(ongoing: tuple[OngoingReassignment, ...], owners: dict[TopicPartition, int]) -> dict[str, Any]:
    """The JSON document for ``ongoing``: ``{}`` when empty."""
    if not ongoing:
        return {}
    partitions = []
    for r in sorted(ongoing, key=lambda r: r.tp):
        partitions.append(
            {
                "topic": r.tp.topic,
                "partition": r.tp.partition,
                "replicas": list(r.target),
                "adding_replicas": list(r.adding_replicas),
                "removing_replicas": list(r.removing_replicas),
                "request": owners.get(r.tp),
            }
        )
    return {"version": 1, "partitions": partitions}
