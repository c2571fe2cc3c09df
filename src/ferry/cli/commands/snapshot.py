"""``ferry snapshot``: read a live cluster through the Admin API and write snapshot JSON."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ferry.errors import UsageError
from ferry.kafka.client import KafkaPythonAdmin, load_command_config
from ferry.kafka.snapshot import collect, write_json


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


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    """``--bootstrap-server``, ``--command-config`` and ``--timeout``, as in Kafka's tools."""
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,...]")
    parser.add_argument(
        "--command-config", type=Path, metavar="FILE", help="Kafka client properties (SSL, SASL)"
    )
    parser.add_argument(
        "--timeout", type=float, default=30.0, metavar="S", help="seconds per Kafka call (30)"
    )


def _run(args: argparse.Namespace) -> int:
    topics = _topics(args.topics)
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    settings = load_command_config(args.command_config)
    with KafkaPythonAdmin(args.bootstrap_server, settings, timeout_s=args.timeout) as admin:
        live = collect(admin, topics)
    write_json(live, args.output)
    snap = live.snapshot
    print(
        f"ferry snapshot: {len(snap.partitions)} partitions of {len(snap.topics)} topics "
        f"on {len(snap.brokers)} brokers -> {args.output}",
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
