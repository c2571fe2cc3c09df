"""``ferry plan``'s own options: their parsers, and the combinations argparse cannot check.

Everything here runs before anything is read or written, so bad usage exits 2 with nothing done.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ferry.cli.options import add_connection_options, check_force
from ferry.errors import UsageError
from ferry.formats import sizes
from ferry.model import BalanceMode


def add_input_options(parser: argparse.ArgumentParser, example_name: str) -> None:
    """Where the snapshot comes from: a file, a fleet folder, the bundled example or a live cluster."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--snapshot",
        metavar="FILE",
        type=Path,
        help="cluster snapshot JSON (version 1): brokers with racks, partitions with replicas and "
        "optionally leader, isr and size_bytes; or a Parquet snapshot directory (see 'ferry "
        "snapshot convert')",
    )
    source.add_argument(
        "--fleet",
        metavar="DIR",
        type=Path,
        help="plan every snapshot in DIR (*.json files and Parquet snapshot directories, one "
        "cluster each, named after them) with the same options; writes OUT/<cluster>/ per cluster "
        "and OUT/fleet-summary.{json,csv}. On the Spark engine the workers read the snapshots, so "
        "with a remote --spark-master DIR must be at the same path on every worker",
    )
    source.add_argument(
        "--example",
        action="store_true",
        help=f"plan the bundled example snapshot ({example_name}: 8 brokers in 2 racks, 2 of them new)",
    )
    add_connection_options(parser, bootstrap_group=source)


def add_broker_options(parser: argparse.ArgumentParser) -> None:
    """Which brokers the replicas go to: ``--brokers``, ``--remove-brokers`` or ``--replace``."""
    brokers = parser.add_mutually_exclusive_group()
    brokers.add_argument(
        "--brokers",
        metavar="IDS",
        type=_broker_ids,
        help="comma-separated target brokers; replicas leave every other broker (default: every "
        "broker in the snapshot; a broker with no replicas is a new one), e.g. 1,2,3,4",
    )
    brokers.add_argument(
        "--remove-brokers",
        metavar="IDS",
        type=_removal,
        help="comma-separated brokers to empty; the rest of the snapshot's brokers are the targets, e.g. "
        "5,6; 'cordoned': every broker whose log dirs are all cordoned (Kafka 4.3; a live snapshot "
        "records it)",
    )
    parser.add_argument(
        "--replace",
        metavar="OLD=NEW",
        type=_replace_pair,
        action="append",
        default=[],
        help="move exactly broker OLD's replicas to broker NEW and nothing else (repeatable; not "
        "with --brokers, --remove-brokers or --replication-factor), e.g. 3=9",
    )


def add_topic_options(parser: argparse.ArgumentParser) -> None:
    """Which topics are planned, and replication-factor changes."""
    parser.add_argument(
        "--replication-factor",
        metavar="TOPIC=N",
        dest="replication_factors",
        type=_topic_rf,
        action="append",
        default=[],
        help="change TOPIC's replication factor to N, up or down (repeatable), e.g. orders=3",
    )
    topics = parser.add_mutually_exclusive_group()
    topics.add_argument(
        "--topics",
        metavar="T,...",
        type=_topic_names,
        help="plan only these topics (comma-separated), e.g. orders,payments",
    )
    topics.add_argument(
        "--exclude-topics",
        metavar="T,...",
        type=_topic_names,
        help="never touch these topics (comma-separated), e.g. __consumer_offsets",
    )


def add_balance_options(parser: argparse.ArgumentParser) -> None:
    """What is balanced: replica counts (the default) or disk bytes, optionally against capacities."""
    parser.add_argument(
        "--balance",
        choices=[mode.value for mode in BalanceMode],
        default=BalanceMode.REPLICAS.value,
        help="replicas (default): even replica counts per broker and per topic, moving as few "
        "replicas as that needs; bytes: even disk bytes per broker (each within a few percent of "
        "its share), moving as few bytes as that needs, from the snapshot's replica_sizes where "
        "measured, else size_bytes; replica counts may then differ, and report.json shows both",
    )
    parser.add_argument(
        "--capacity",
        metavar="FILE",
        type=Path,
        help='with --balance bytes: JSON of each broker\'s disk capacity in bytes, e.g. {"1": '
        '2000000000000, "2": 4000000000000}; brokers then fill to the same fraction of their disk, '
        "and a plan that would fill one beyond --max-disk-fraction is refused (exit 4)",
    )
    parser.add_argument(
        "--drain-above",
        metavar="F",
        type=_fraction,
        help="only the brokers whose disks are fuller than F of their capacity send replicas (e.g. "
        "0.8), to the brokers with the most room, until each is under F; nothing else moves; "
        "capacities from --capacity FILE, else from the snapshot (a live one records each disk's "
        "size); refused (exit 4) where no plan gets every broker under F",
    )
    parser.add_argument(
        "--max-disk-fraction",
        metavar="F",
        type=_fraction,
        help="with --capacity: the fullest any broker's disk may end, as a fraction of its capacity "
        "(default: 0.85)",
    )


def add_budget_options(parser: argparse.ArgumentParser) -> None:
    """A budget: the step of the full plan that fits it, not the whole change."""
    budget = parser.add_argument_group(
        "budget",
        "plan only the first step of the full plan: the moves that remove the most imbalance per move "
        "(or per byte) first, every replica going where the full plan puts it; after executing it, "
        "plan again for the next step (report.json's 'budget' says how many are left)",
    )
    budget.add_argument(
        "--max-moves",
        metavar="N",
        type=_positive,
        help="at most N replica moves (replicas added, each copying its partition)",
    )
    budget.add_argument(
        "--max-bytes",
        metavar="SIZE",
        type=parse_size,
        help="moves copying at most SIZE bytes, e.g. 500GB or 2TiB (GB = 10^9 bytes, GiB = 2^30)",
    )


def parse_size(text: str) -> int:
    """``"500GB"`` -> 500 * 10**9 (:func:`ferry.formats.sizes.parse_size`), for argparse."""
    try:
        return sizes.parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.85, got {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1], got {text!r}")
    return value


def _broker_ids(text: str) -> frozenset[int]:
    """``"1,2,3"`` -> {1, 2, 3}; argparse reports the error with the option name."""
    items = [item.strip() for item in text.split(",")]
    ids: set[int] = set()
    for item in items:
        if not item.isdigit():
            shown = repr(item) if item else "an empty item"
            raise argparse.ArgumentTypeError(f"{shown} in {text!r} is not a broker id (expected e.g. 1,2,3)")
        ids.add(int(item))
    return frozenset(ids)


CORDONED = "cordoned"
"""``--remove-brokers cordoned``: the snapshot's cordoned brokers, known once it is read."""


def _removal(text: str) -> frozenset[int] | str:
    """``"5,6"`` -> {5, 6}; ``"cordoned"`` as it is."""
    return CORDONED if text.strip() == CORDONED else _broker_ids(text)


def _replace_pair(text: str) -> tuple[int, int]:
    """``"3=9"`` -> (3, 9)."""
    old, sep, new = (part.strip() for part in text.partition("="))
    if not sep or not old.isdigit() or not new.isdigit():
        raise argparse.ArgumentTypeError(f"expected OLD=NEW broker ids (e.g. 3=9), got {text!r}")
    if int(old) == int(new):
        raise argparse.ArgumentTypeError(f"cannot replace broker {old} with itself")
    return int(old), int(new)


def _topic_rf(text: str) -> tuple[str, int]:
    """``"orders=3"`` -> ("orders", 3)."""
    topic, sep, value = text.rpartition("=")
    topic = topic.strip()
    value = value.strip()
    if not sep or not topic:
        raise argparse.ArgumentTypeError(f"expected TOPIC=N (e.g. orders=3), got {text!r}")
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(
            f"replication factor must be a whole number >= 1, got {value!r} in {text!r}"
        )
    return topic, int(value)


def _topic_names(text: str) -> frozenset[str]:
    """``"a,b"`` -> {"a", "b"}."""
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"empty topic name in {text!r} (expected e.g. a,b)")
    return frozenset(names)


def check_usage(args: argparse.Namespace) -> None:
    """Option combinations argparse cannot express; raised before anything is read."""
    if args.replace and (
        args.brokers is not None or args.remove_brokers is not None or args.replication_factors
    ):
        raise usage_error(
            "--replace cannot be combined with --brokers, --remove-brokers or "
            "--replication-factor: it moves exactly OLD's replicas to NEW"
        )
    olds = [old for old, _ in args.replace]
    twice = sorted({old for old in olds if olds.count(old) > 1})
    if twice:
        raise usage_error(f"--replace: broker {twice[0]} is replaced twice")
    factors: dict[str, int] = {}
    for topic, rf in args.replication_factors:
        if factors.setdefault(topic, rf) != rf:
            raise usage_error(f"--replication-factor: {topic} is given both {factors[topic]} and {rf}")
    _check_balance(args)
    if args.html and args.fleet is not None:
        raise usage_error("--html draws one cluster's plan: for a fleet, run 'ferry report OUT/CLUSTER'")
    check_force(args)
    if args.bootstrap_server is None:
        # --force overrides the live checks; offline there are none, so it would say nothing.
        live_only = (
            ("--command-config", args.command_config),
            ("--timeout", args.timeout),
            ("--force", args.force),
        )
        offline = [flag for flag, value in live_only if value is not None]
        if offline:
            raise usage_error(f"{offline[0]} only goes with --bootstrap-server")
    if args.spark_master is not None and args.engine != "spark":
        raise usage_error("--spark-master needs --engine spark")
    if args.output_dir.exists() and not args.output_dir.is_dir():
        raise usage_error(f"--output-dir {args.output_dir}: exists and is not a directory")


def _check_drain(args: argparse.Namespace) -> None:
    if args.drain_above is None:
        return
    others = (
        ("--balance bytes", args.balance == BalanceMode.BYTES.value),
        ("--replace", bool(args.replace)),
        ("--brokers", args.brokers is not None),
        ("--remove-brokers", args.remove_brokers is not None),
        ("--replication-factor", bool(args.replication_factors)),
    )
    clash = [flag for flag, given in others if given]
    if clash:
        raise usage_error(f"--drain-above moves only off the brokers over it: it cannot go with {clash[0]}")
    if args.fleet is not None:
        raise usage_error("--drain-above plans one cluster's disks: it cannot go with --fleet")


def _check_balance(args: argparse.Namespace) -> None:
    _check_drain(args)
    if args.balance != BalanceMode.BYTES.value:
        if args.drain_above is not None:
            if args.max_disk_fraction is not None:
                raise usage_error("--max-disk-fraction needs --balance bytes")
            return
        given = [
            flag
            for flag, value in (
                ("--capacity", args.capacity),
                ("--max-disk-fraction", args.max_disk_fraction),
            )
            if value is not None
        ]
        if given:
            raise usage_error(f"{given[0]} needs --balance bytes")
        return
    if args.max_disk_fraction is not None and args.capacity is None:
        raise usage_error("--max-disk-fraction needs --capacity: a fraction of what")
    if args.replace:
        raise usage_error(
            "--balance bytes cannot be combined with --replace, which moves exactly OLD's replicas"
        )
    if args.capacity is not None and args.fleet is not None:
        raise usage_error("--capacity names one cluster's brokers: it cannot go with --fleet")


def usage_error(message: str) -> UsageError:
    """A usage error of ``ferry plan``, pointing at its help."""
    return UsageError(message, hint="see 'ferry plan --help'")
