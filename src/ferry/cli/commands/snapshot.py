"""``ferry snapshot``: read a live cluster through the Admin API and write snapshot JSON."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ferry.errors import UsageError
from ferry.kafka.client import KafkaPythonAdmin, load_command_config
from ferry.kafka.snapshot import LiveSnapshot, collect, write_json

DEFAULT_TIMEOUT_S = 30.0


def register(subparsers: Any) -> None:
    """Add ``snapshot`` to the ``ferry`` parser."""
    parser = subparsers.add_parser(
        "snapshot",
        help="write a cluster snapshot (brokers, replicas, ISR, sizes) from a live cluster",
    )
    add_connection_options(parser)
    parser.add_argument("--topics", help="comma-separated topics to include (default: all)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="snapshot JSON to write")
    parser.set_defaults(func=_run)


def add_connection_options(parser: argparse.ArgumentParser, *, bootstrap_group: Any = None) -> None:
    """``--bootstrap-server``, ``--command-config`` and ``--timeout``, as in Kafka's tools.

    ``--bootstrap-server`` is required unless ``bootstrap_group`` (a mutually exclusive group of
    input choices) is given to hold it; ``--timeout`` then defaults to None so a command can tell
    whether it was given at all.
    """
    target = parser if bootstrap_group is None else bootstrap_group
    target.add_argument(
        "--bootstrap-server",
        required=bootstrap_group is None,
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
    timeout = DEFAULT_TIMEOUT_S if args.timeout is None else args.timeout
    if timeout <= 0:
        raise UsageError("--timeout must be positive")
    settings = load_command_config(args.command_config)
    with KafkaPythonAdmin(args.bootstrap_server, settings, timeout_s=timeout) as admin:
        return collect(admin, topics)


def _run(args: argparse.Namespace) -> int:
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
