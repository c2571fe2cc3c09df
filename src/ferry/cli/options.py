"""The options several verbs share, and opening the admin client they describe.

Every verb module registers its own parser from these helpers, so no verb imports another: the
connection options (as Kafka's tools take them), the journal, how a request runs, the safety
checks' overrides and a one-shot progress measurement.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ferry.cli.metrics import add_metrics_port_options
from ferry.errors import UsageError
from ferry.execute.batching import DEFAULT_MAX_MOVES_PER_BROKER, Limits
from ferry.execute.journal import default_journal_path
from ferry.execute.options import ExecuteOptions
from ferry.execute.pace.schedule import Schedule
from ferry.execute.pace.settings import DEFAULT_PERIOD_S, DEFAULT_START, PaceSettings
from ferry.execute.strategies import DEFAULT_ORDER, STRATEGIES, parse_order
from ferry.formats import sizes
from ferry.kafka.client import KafkaPythonAdmin, load_command_config
from ferry.kafka.config import ClientSettings
from ferry.kafka.snapshot import LiveSnapshot, collect

DEFAULT_TIMEOUT_S = 30.0

_FORCE_HELP = (
    "submit even what the safety checks refuse (below min.insync.replicas, onto a broker that is "
    "not alive, stale plan); the reason is kept in the journal"
)


# -- connection ------------------------------------------------------------------------------------


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


@dataclass(frozen=True, slots=True)
class AdminOptions:
    """The connection options, checked and with ``--command-config`` read, ready to connect."""

    bootstrap: str | None
    settings: ClientSettings
    timeout_s: float

    def open(self, bootstrap: str | None = None) -> KafkaPythonAdmin:
        """Connect to ``bootstrap`` (default: ``--bootstrap-server``); use it as a context manager.

        Raises:
            KafkaError: the cluster cannot be reached or refuses the credentials.
        """
        servers = bootstrap or self.bootstrap
        if servers is None:
            raise UsageError("--bootstrap-server is required here")
        return KafkaPythonAdmin(servers, self.settings, timeout_s=self.timeout_s)


def admin_options(args: argparse.Namespace) -> AdminOptions:
    """The connection options of ``args``, read before anything else is touched.

    Raises:
        UsageError: a non-positive ``--timeout``.
        InputError: an unreadable or invalid ``--command-config``.
    """
    timeout = DEFAULT_TIMEOUT_S if args.timeout is None else args.timeout
    if timeout <= 0:
        raise UsageError("--timeout must be positive")
    return AdminOptions(args.bootstrap_server, load_command_config(args.command_config), timeout)


def open_admin(args: argparse.Namespace) -> KafkaPythonAdmin:
    """The admin client the connection options describe (use it as a context manager).

    Raises:
        UsageError: a non-positive ``--timeout``.
        InputError: an unreadable or invalid ``--command-config``.
    """
    return admin_options(args).open()


def take_snapshot(args: argparse.Namespace, topics: Sequence[str] | None = None) -> LiveSnapshot:
    """Connect as the connection options say and collect a live snapshot.

    Raises:
        UsageError: a non-positive ``--timeout``.
        InputError: an unreadable or invalid ``--command-config``.
        KafkaError: the cluster cannot be reached, refuses the credentials, or a call fails.
    """
    with open_admin(args) as admin:
        return collect(admin, topics)


# -- the journal and how a request runs ----------------------------------------------------------


def add_journal_option(parser: argparse.ArgumentParser) -> None:
    """``--journal PATH`` (default: the user's state directory)."""
    parser.add_argument(
        "--journal",
        type=Path,
        metavar="PATH",
        help=f"journal file (default {default_journal_path()})",
    )


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """How a request runs: throttle, limits, order, --wait, --additional, --no-elect."""
    parser.add_argument("--poll-interval", type=float, default=1.0, metavar="S", help=argparse.SUPPRESS)
    parser.add_argument(
        "--throttle",
        type=int,
        metavar="BYTES_PER_S",
        help="replication throttle per broker (none); with --pace auto the starting rate (10 MB/s)",
    )
    add_pace_options(parser)
    add_dir_options(parser)
    parser.add_argument(
        "--one-replica-at-a-time",
        action="store_true",
        help="make each move that changes several replicas a sequence of single-replica "
        "reassignments ([1,2,3] -> [4,2,3] -> [4,5,3] -> [4,5,6]; a joining replica takes the place "
        "of a leaving one in its rack first), so a leader feeds one new follower at a time; cancel "
        "stops the current step, rollback returns to the originals, resume goes on from the step",
    )
    parser.add_argument(
        "--max-moves-per-broker",
        type=int,
        default=DEFAULT_MAX_MOVES_PER_BROKER,
        metavar="N",
        help="moves in flight per broker gaining or losing a replica (%(default)s)",
    )
    parser.add_argument(
        "--max-moves", type=int, metavar="N", help="ferry's moves in flight in the whole cluster"
    )
    parser.add_argument(
        "--order",
        default=",".join(DEFAULT_ORDER),
        metavar="A[,B...]",
        help=f"ordering strategies, first wins ({', '.join(sorted(STRATEGIES))}; default %(default)s)",
    )
    parser.add_argument("--wait", action="store_true", help="print progress on stderr while moves run")
    parser.add_argument(
        "--additional",
        action="store_true",
        help="run even though reassignments ferry did not start are in flight",
    )
    parser.add_argument(
        "--no-elect", action="store_true", help="skip the preferred-leader election at the end"
    )


def add_pace_options(parser: argparse.ArgumentParser, default: str | None = "static") -> None:
    """``--pace`` with the ceiling options of ``--pace auto``."""
    parser.add_argument(
        "--pace",
        choices=("static", "auto"),
        default=default,
        help="static: --throttle for the whole run; auto: every 20 s set each broker's leader and "
        "follower throttle and its moves in flight from what the cluster shows: never so low that "
        "the copy runs under 1.2x the produce rate into the moving partitions, cut to 0.7x with "
        "half the moves when a partition not being moved loses an ISR member or sits at min ISR, "
        "raised while healthy and the throttle binds (doubled, read every 2.5 s, until the first "
        "cut; then by --throttle or 10%%); no new move while the plan holds a "
        "partition under min ISR (default: " + ("static)" if default else "as the request recorded)"),
    )
    parser.add_argument(
        "--max-throttle",
        type=_rate,
        metavar="RATE",
        help="with --pace auto: the highest rate per broker and role, e.g. 200MB/s (none)",
    )
    parser.add_argument(
        "--schedule",
        metavar="SPEC",
        help="with --pace auto: ceilings by local time of day, first match wins, e.g. "
        "'22:00-06:00=200MB/s,*=40MB/s'",
    )
    parser.add_argument("--pace-period", type=float, default=DEFAULT_PERIOD_S, help=argparse.SUPPRESS)


def add_dir_options(parser: argparse.ArgumentParser) -> None:
    """How replicas move between the log dirs of a broker (a plan's ``log_dirs``, JBOD)."""
    parser.add_argument(
        "--dir-throttle",
        type=_rate,
        metavar="RATE",
        help="copy rate between the log dirs of a broker (replica.alter.log.dirs.io.max.bytes.per."
        "second), e.g. 100MB/s (default: --throttle)",
    )
    parser.add_argument(
        "--max-dir-moves-per-broker",
        type=int,
        default=1,
        metavar="N",
        help="replicas copied between the log dirs of one broker at once (%(default)s)",
    )
    parser.add_argument(
        "--max-dir-move-brokers",
        type=int,
        metavar="N",
        help="brokers copying between their log dirs at once; 1: one broker at a time (any number)",
    )


def add_request_options(parser: argparse.ArgumentParser, *, originals: bool) -> None:
    """Everything a verb that starts a request takes: connection, journal, run and safety options."""
    add_connection_options(parser)
    add_journal_option(parser)
    add_run_options(parser)
    add_safety_options(parser, originals=originals)
    add_metrics_port_options(parser)


def run_options(args: argparse.Namespace) -> ExecuteOptions:
    """The :class:`ExecuteOptions` of :func:`add_run_options` and ``--force``."""
    if args.throttle is not None and args.throttle < 1:
        raise UsageError("--throttle must be a positive number of bytes per second")
    if args.timeout <= 0 or args.poll_interval <= 0:
        raise UsageError("--timeout and --poll-interval must be positive")
    check_force(args)
    if args.max_dir_moves_per_broker < 1 or (args.max_dir_move_brokers or 1) < 1:
        raise UsageError("--max-dir-moves-per-broker and --max-dir-move-brokers must be at least 1")
    pace = pace_settings(args)
    return ExecuteOptions(
        throttle=args.throttle if pace is None else args.throttle or DEFAULT_START,
        limits=Limits(args.max_moves_per_broker, args.max_moves),
        ordering=parse_order(args.order),
        additional=args.additional,
        elect=not args.no_elect,
        poll_interval_s=args.poll_interval,
        force=args.force,
        pace=pace,
        one_replica_at_a_time=args.one_replica_at_a_time,
        dir_throttle=args.dir_throttle,
        max_dir_moves_per_broker=args.max_dir_moves_per_broker,
        max_dir_move_brokers=args.max_dir_move_brokers,
    )


def pace_settings(args: argparse.Namespace) -> PaceSettings | None:
    """The :class:`PaceSettings` of :func:`add_pace_options` (None: a static throttle)."""
    if args.pace != "auto":
        if args.max_throttle is not None or args.schedule is not None:
            raise UsageError("--max-throttle and --schedule set the ceiling of --pace auto: add it")
        return None
    schedule = Schedule.parse(args.schedule) if args.schedule is not None else None
    return PaceSettings(args.max_throttle, schedule, args.pace_period)


def _rate(text: str) -> int:
    try:
        return sizes.parse_rate(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


# -- safety overrides and progress measurement ---------------------------------------------------


def add_safety_options(
    parser: argparse.ArgumentParser, *, originals: bool = True, force_help: str = _FORCE_HELP
) -> None:
    """``--force REASON`` and (for plans) ``--originals FILE``: the safety checks' options."""
    if originals:
        parser.add_argument(
            "--originals",
            type=Path,
            metavar="FILE",
            help="the replicas the plan was made from, for the stale-plan check (default: "
            "rollback.json beside the plan, as 'ferry plan' writes it, when present)",
        )
    parser.add_argument("--force", metavar="REASON", help=force_help)


def check_force(args: argparse.Namespace) -> None:
    """An override must say why: the reason is all a later reader has to go on.

    Raises:
        UsageError: ``--force`` with an empty reason.
    """
    if args.force is not None and not args.force.strip():
        raise UsageError("--force needs a reason, e.g. --force 'broker 7 is being replaced'")


def add_measure_options(parser: argparse.ArgumentParser) -> None:
    """``--json`` and ``--interval``: how a one-shot progress measurement is taken and shown."""
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--interval",
        type=float,
        default=2.0,
        metavar="S",
        help="seconds between the two measurements the rate comes from (%(default)s; 0: no rate)",
    )
