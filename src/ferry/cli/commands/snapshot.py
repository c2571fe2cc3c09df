"""``ferry snapshot``: read a live cluster through the Admin API and write snapshot JSON.

``ferry snapshot convert IN OUT`` converts between snapshot JSON and a Parquet snapshot directory.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ferry.errors import UsageError
from ferry.formats.sources import load_any, write_any
from ferry.kafka.client import KafkaPythonAdmin, load_command_config
from ferry.kafka.snapshot import LiveSnapshot, collect, write_json
from ferry.plan.collector import pausing

DEFAULT_TIMEOUT_S = 30.0


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


def add_connection_options(
    parser: argparse.ArgumentParser, *, bootstrap_group: Any = None, required: bool = True
) -> None:
    """``--bootstrap-server``, ``--command-config`` and ``--timeout``, as in Kafka's tools.

    ``--bootstrap-server`` is required unless ``bootstrap_group`` (a mutually exclusive group of
    input choices) is given to hold it, or ``required`` is False (checked by the command itself);
    with a group, ``--timeout`` defaults to None so a command can tell whether it was given at all.
    """
    target = parser if bootstrap_group is None else bootstrap_group
    target.add_argument(
        "--bootstrap-server",
        required=bootstrap_group is None and required,
        metavar="HOST:PORT[,...]",
        help="brokers to connect to, as Kafka's tools take them, e.g. 127.0.0.1:9092",
    )
    parser.add_argument(
        "--command-config",
        type=Path,
        metavar="FILE",
        help="Kafka client properties file (security.protocol, sasl.mechanism, sasl.jaas.config, "
        "PEM ssl.* settings), the same file kafka-topics.sh takes",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S if bootstrap_group is None else None,
        metavar="S",
        help=f"seconds per Kafka call (default {DEFAULT_TIMEOUT_S:g})",
    )


def take_snapshot(args: argparse.Namespace, topics: Sequence[str] | None = None) -> LiveSnapshot:
    """Connect as the connection options say and collect a live snapshot.

    Raises:
        UsageError: a non-positive ``--timeout``.
        InputError: an unreadable or invalid ``--command-config``.
        KafkaError: the cluster cannot be reached, refuses the credentials, or a call fails.
    """
    with open_admin(args) as admin:
        return collect(admin, topics)


def open_admin(args: argparse.Namespace) -> KafkaPythonAdmin:
    """The admin client the connection options describe (use it as a context manager).

    Raises:
        UsageError: a non-positive ``--timeout``.
        InputError: an unreadable or invalid ``--command-config``.
    """
    timeout = DEFAULT_TIMEOUT_S if args.timeout is None else args.timeout
    if timeout <= 0:
        raise UsageError("--timeout must be positive")
    settings = load_command_config(args.command_config)
    return KafkaPythonAdmin(args.bootstrap_server, settings, timeout_s=timeout)


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
