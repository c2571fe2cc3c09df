"""``ferry snapshot``: read a live cluster through the Admin API and write snapshot JSON.

``ferry snapshot convert IN OUT`` converts between snapshot JSON and a Parquet snapshot directory.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ferry.cli.options import add_connection_options, take_snapshot
from ferry.errors import UsageError
from ferry.formats.sources import load_any, write_any
from ferry.kafka.snapshot import write_json
from ferry.plan.gc_pause import pausing


def register(subparsers: Any) -> None:
    """Add ``snapshot`` to the ``ferry`` parser."""
    parser = subparsers.add_parser(
        "snapshot",
        help="write a cluster snapshot (brokers, replicas, ISR, sizes) from a live cluster",
        description="Write a cluster snapshot from a live cluster (--bootstrap-server, -o), or "
        "convert one between JSON and Parquet ('ferry snapshot convert IN OUT').",
    )
    # Required unless the convert action is given; checked in _run (argparse cannot say "unless").
    add_connection_options(parser, required=False)
    parser.add_argument("--topics", help="comma-separated topics to include (default: all)")
    parser.add_argument("-o", "--output", type=Path, help="snapshot JSON to write")
    parser.set_defaults(func=_run)
    actions = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    convert = actions.add_parser(
        "convert",
        help="convert a snapshot between JSON (*.json) and Parquet (a directory)",
        description="Convert IN to OUT: a path ending in .json is snapshot JSON, anything else a "
        "Parquet snapshot directory (brokers.parquet + partitions.parquet). IN is validated first.",
    )
    convert.add_argument("input", type=Path, metavar="IN")
    convert.add_argument("output_path", type=Path, metavar="OUT")
    convert.set_defaults(func=_convert)


def _run(args: argparse.Namespace) -> int:
    missing = [
        flag
        for flag, value in (("--bootstrap-server", args.bootstrap_server), ("-o/--output", args.output))
        if value is None
    ]
    if missing:
        raise UsageError(
            f"ferry snapshot: the following arguments are required: {', '.join(missing)}",
            hint="see 'ferry snapshot --help'",
        )
    live = take_snapshot(args, _topics(args.topics))
    write_json(live, args.output)
    snap = live.snapshot
    down = f" ({len(snap.dead_broker_ids)} down)" if snap.dead_broker_ids else ""
    print(
        f"ferry snapshot: {len(snap.partitions)} partitions of {len(snap.topics)} topics "
        f"on {len(snap.brokers)} brokers{down} -> {args.output}",
        file=sys.stderr,
    )
    return 0


def _topics(raw: str | None) -> tuple[str, ...] | None:
    if raw is None:
        return None
    topics = tuple(t.strip() for t in raw.split(",") if t.strip())
    if not topics:
        raise UsageError("--topics needs at least one topic name")
    return topics


@pausing
def _convert(args: argparse.Namespace) -> int:
    source: Path = args.input
    target: Path = args.output_path
    if source.resolve() == target.resolve():
        raise UsageError("ferry snapshot convert: IN and OUT are the same path")
    snap = load_any(source)
    kind = write_any(snap, target)
    print(
        f"ferry snapshot convert: {len(snap.partitions)} partitions of {len(snap.topics)} topics "
        f"on {len(snap.brokers)} brokers -> {target} ({kind})",
        file=sys.stderr,
    )
    return 0
