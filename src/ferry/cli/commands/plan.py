"""``ferry plan``: compute a minimal-movement reassignment from a snapshot or a live cluster.

Never changes the cluster: with ``--bootstrap-server`` it only reads it, through the same snapshot
``ferry snapshot`` takes, and saves that snapshot next to the plan so the plan can be reviewed and
re-made from exactly what it was computed from. Every option is checked before anything is read or
written (bad usage: exit 2), the snapshot and the goal are validated together (bad input: exit 3),
and the output files are written atomically: all of them or none.

A plan made from a live cluster also passes the safety checks ``ferry execute`` runs before it
submits (:mod:`ferry.execute.safety`: below min.insync.replicas, onto a broker that is not alive)
against the snapshot it was made from, with the brokers' liveness read again once the plan is
made: planning can take a while, and a broker that died meanwhile must not receive replicas. A
refused plan is not written at all (exit 4) unless ``--force REASON``, which report.json records.
A snapshot file holds no live state to check against, so offline plans are not checked.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ferry.cli import render
from ferry.cli.dir_plan import add_dir_options, check_dir_usage, plan_dirs, wants_dirs
from ferry.cli.dir_plan import summary as dir_summary
from ferry.cli.disk_report import on_disks
from ferry.cli.engines import add_engine_options, plan_clusters, worth_starting_early
from ferry.cli.html_report import html_page
from ferry.cli.options import add_safety_options, open_admin, take_snapshot
from ferry.cli.plan_args import (
    add_balance_options,
    add_broker_options,
    add_budget_options,
    add_input_options,
    add_topic_options,
    check_usage,
    usage_error,
)
from ferry.cli.plan_help import DESCRIPTION, EPILOG, FORCE_HELP
from ferry.cli.plan_view import plan_view
from ferry.errors import InputError, PreconditionError, and_more
from ferry.execute import safety
from ferry.formats import parse_snapshot, render_snapshot, write_plan
from ferry.formats.capacity_json import load_capacity
from ferry.formats.goal_json import goal_json
from ferry.formats.parquet import is_parquet_snapshot
from ferry.formats.report_json import report_json
from ferry.formats.sources import load_any
from ferry.kafka.snapshot import to_json, with_current_brokers
from ferry.model import BalanceMode, ClusterSnapshot, Goal, Plan, PlanJob, RackMode
from ferry.model.goal import DEFAULT_MAX_DISK_FRACTION
from ferry.plan.gc_pause import paused
from ferry.plan.prepare.validate_goal import validate_goal

if TYPE_CHECKING:
    from ferry.pipeline.early_session import SparkStart

EXAMPLE_NAME = "six_brokers_add_two.json"
SNAPSHOT_NAME = "snapshot.json"


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add the ``plan`` sub-command to ``subparsers``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "plan",
        help="plan a minimal-movement reassignment from a snapshot",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        # Scripts keep working when a new flag shares a prefix with an old one.
        allow_abbrev=False,
    )
    add_input_options(parser, EXAMPLE_NAME)
    add_broker_options(parser)
    add_topic_options(parser)
    add_balance_options(parser)
    add_budget_options(parser)
    add_dir_options(parser)
    add_engine_options(parser)
    add_safety_options(parser, originals=False, force_help=FORCE_HELP)
    parser.add_argument(
        "--rack-mode",
        choices=[mode.value for mode in RackMode],
        default=RackMode.STRICT.value,
        help="strict (default): never two replicas of a partition in one rack while the target "
        "brokers span enough racks, even if brokers of a small rack then carry more; even: spread "
        "replicas evenly over brokers, sharing a rack only where unequal racks force it",
    )
    parser.add_argument(
        "--output-dir",
        metavar="DIR",
        type=Path,
        required=True,
        help="where to write reassignment.json, rollback.json, report.json and, with "
        "--bootstrap-server, snapshot.json (created if missing; existing files there are "
        "replaced), e.g. plans/2024-06-01",
    )
    parser.add_argument(
        "--html",
        action="store_true",
        help="also write report.html: the plan drawn as one self-contained page with charts "
        "(the same page as 'ferry report OUT')",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Plan, write the output files atomically and print a summary; returns the exit code.

    Raises:
        UsageError: conflicting options or an unusable output directory.
        InputError: a bad snapshot or command config, or a goal that does not fit the snapshot.
        PreconditionError: the goal would move replicas onto a broker that is down.
        KafkaError: the live cluster could not be read.
    """
    check_usage(args)
    check_dir_usage(args)
    # Loading, planning and writing build millions of long-lived objects (ferry.plan.gc_pause).
    with paused():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    if args.fleet is not None:
        from ferry.cli.fleet import run_fleet

        return run_fleet(args, _build_goal)
    early = _spark_while_loading(args)
    with early if early is not None else nullcontext():
        loaded = _load(args)
        snapshot, source = loaded.snapshot, loaded.source
        if wants_dirs(args):
            return _run_dirs(args, loaded)
        goal = _build_goal(args, snapshot, source)
        _check_targets_alive(snapshot, goal, source)
        parquet = args.snapshot if args.snapshot is not None and is_parquet_snapshot(args.snapshot) else None
        cluster = PlanJob(source, source, snapshot, goal, parquet)
        [planned], _ = plan_clusters(
            [cluster], engine=args.engine, master=args.spark_master, debug=args.debug, started=early
        )
    # Where the snapshot lists log dirs, each new replica goes into its broker's emptiest dir.
    result, on_disk = on_disks(planned.plan, snapshot)
    _check_cordons(snapshot, result, source)
    forced = _check_safety(args, loaded, result)
    saved, extra = _snapshot_file(args, loaded)
    report = report_json(result.figures, snapshot=str(saved) if saved else source, goal=goal_json(goal))
    if forced is not None:
        report["forced"] = forced
    report |= on_disk
    if args.html:
        view = plan_view(snapshot, {m.tp: m.target for m in result.moves}, report["target_brokers"])
        extra[args.output_dir / "report.html"] = html_page(view, report, title=f"ferry plan: {source}")
    files = _write_outputs(args.output_dir, result, report, extra)
    print(render.plan_summary(report, snapshot=source, files=files))
    return 0


def _spark_while_loading(args: argparse.Namespace) -> SparkStart | None:
    """The Spark session, starting while a big snapshot file loads, where the options alone say the
    plan runs on Spark."""
    if args.engine != "spark" or wants_dirs(args) or one_pass(args):
        return None
    if not worth_starting_early(args.snapshot):
        return None
    from ferry.pipeline.early_session import SparkStart  # as plan_clusters: only the Spark engine's

    return SparkStart(args.spark_master, debug=args.debug)


def one_pass(args: argparse.Namespace) -> bool:
    """Whether the goal is planned in one pass over the whole cluster, in this process on either
    engine (:func:`ferry.plan.planner.per_topic_phases` says the same of the goal; a goal is only
    built once the snapshot is read)."""
    return bool(args.replace) or args.balance == BalanceMode.BYTES.value or args.drain_above is not None


def _run_dirs(args: argparse.Namespace, loaded: _Loaded) -> int:
    """``--disks balance`` or ``--evacuate-dir``: plan, check and write as any plan."""
    result, report = plan_dirs(args, loaded.snapshot, loaded.source)
    forced = _check_safety(args, loaded, result)
    report |= {"forced": forced} if forced is not None else {}
    extra = _snapshot_file(args, loaded)[1]
    if args.html:
        alive = [b.id for b in loaded.snapshot.brokers if b.alive]
        view = plan_view(loaded.snapshot, {m.tp: m.target for m in result.moves}, alive)
        extra[args.output_dir / "report.html"] = html_page(view, report, title=f"ferry plan: {loaded.source}")
    files = _write_outputs(args.output_dir, result, report, extra)
    print(dir_summary(report, files))
    return 0


def _snapshot_file(args: argparse.Namespace, loaded: _Loaded) -> tuple[Path | None, dict[Path, str]]:
    """Where a snapshot taken live is saved beside the plan, and the file to write there."""
    if loaded.text is None:
        return None, {}
    saved = args.output_dir / SNAPSHOT_NAME
    return saved, {saved: loaded.text}


@dataclass(frozen=True, slots=True)
class _Loaded:
    """The snapshot to plan, the name to report it under; when taken live, its file text and the
    topics' min.insync.replicas (for the safety checks)."""

    snapshot: ClusterSnapshot
    source: str
    text: str | None = None
    min_insync: Mapping[str, int] | None = None


def _load(args: argparse.Namespace) -> _Loaded:
    if args.example:
        # importlib.resources finds the file inside an installed wheel as well as in a checkout.
        data = (resources.files("ferry") / "examples" / EXAMPLE_NAME).read_bytes()
        source = f"example:{EXAMPLE_NAME}"
        return _Loaded(parse_snapshot(data, source), source)
    if args.bootstrap_server is not None:
        # The whole cluster, whatever --topics says: balance counts every replica on a broker, as
        # it does when planning from a snapshot file.
        live = take_snapshot(args)
        text = render_snapshot(to_json(live))
        return _Loaded(live.snapshot, f"cluster {args.bootstrap_server}", text, live.min_insync)
    path: Path = args.snapshot
    return _Loaded(load_any(path), str(path))


def _build_goal(args: argparse.Namespace, snapshot: ClusterSnapshot, source: str) -> Goal:
    """The Goal the options ask for, validated against the snapshot.

    Raises:
        InputError: listing every option value that does not fit the snapshot.
    """
    brokers: frozenset[int] | None = args.brokers
    problems: list[str] = []
    removed = _removed(args.remove_brokers, snapshot, source)
    if removed is not None:
        known = frozenset(snapshot.broker_ids)
        problems = [f"--remove-brokers: broker {b} is not in {source}" for b in sorted(removed - known)]
        brokers = known - removed
        if not brokers:
            raise InputError(f"--remove-brokers: would remove every broker of {source}")
    goal = Goal(
        brokers=brokers,
        replace=tuple(args.replace),
        replication_factors=dict(args.replication_factors),
        topics=args.topics,
        exclude_topics=args.exclude_topics or frozenset(),
        rack_mode=RackMode(args.rack_mode),
        balance=BalanceMode(args.balance),
        capacity=_capacity(args, snapshot, source),
        max_disk_fraction=args.max_disk_fraction or DEFAULT_MAX_DISK_FRACTION,
        max_moves=args.max_moves,
        drain_above=args.drain_above,
        max_bytes=args.max_bytes,
    )
    if goal.balance is BalanceMode.BYTES and not any(p.size or p.replica_bytes for p in snapshot.partitions):
        problems.append(f"--balance bytes: no partition of {source} has a size (size_bytes or replica_sizes)")
    try:
        validate_goal(snapshot, goal, source=source)
    except InputError as exc:
        # The capacity checks speak of --capacity; the operator needs the file's name too.
        named = f"--capacity {args.capacity}:" if args.capacity is not None else "--capacity:"
        problems += [p.replace("--capacity:", named, 1) for p in exc.problems]
    if problems:
        raise InputError.of(problems)
    return goal


def _removed(
    given: frozenset[int] | str | None, snapshot: ClusterSnapshot, source: str
) -> frozenset[int] | None:
    """The brokers ``--remove-brokers`` names; ``cordoned``: those the snapshot says are.

    Raises:
        InputError: ``cordoned``, and no broker of the snapshot is.
    """
    if not isinstance(given, str):
        return given
    cordoned = frozenset(b.id for b in snapshot.brokers if b.cordoned)
    if not cordoned:
        raise InputError(
            f"--remove-brokers cordoned: no broker of {source} is cordoned",
            hint="a live snapshot records cordons (Kafka 4.3, cordoned.log.dirs); "
            "'ferry sandbox cordon N' sets one on the sandbox",
        )
    return cordoned


def _check_cordons(snapshot: ClusterSnapshot, result: Plan, source: str) -> None:
    """Refuse a plan that places new replicas on a cordoned broker: it takes no new partitions
    (Kafka 4.3.1 would still accept the move)."""
    cordoned = {b.id for b in snapshot.brokers if b.cordoned}
    receiving = Counter(b for m in result.moves for b in m.adding if b in cordoned)
    if receiving:
        named = [f"broker {b} ({receiving[b]} new replicas)" for b in sorted(receiving)]
        raise PreconditionError(
            f"the plan places replicas on cordoned brokers of {source}, which take no new partitions: "
            f"{and_more(named)}",
            hint="drain them with --remove-brokers cordoned, leave them out with --brokers, or uncordon them",
        )


def _capacity(args: argparse.Namespace, snapshot: ClusterSnapshot, source: str) -> dict[int, int] | None:
    """Each broker's disk: from --capacity FILE, else for a drain from the snapshot.

    Raises:
        InputError: a drain, no --capacity, and a broker of the snapshot without a capacity.
    """
    if args.capacity is not None:
        return dict(load_capacity(args.capacity))
    if args.drain_above is None:
        return None
    missing = [b.id for b in snapshot.brokers if b.alive and b.capacity_bytes is None]
    if missing:
        raise InputError(
            f"--drain-above: {source} gives no capacity for broker {and_more(missing)}",
            hint="give each broker's disk size with --capacity FILE, or take a live snapshot",
        )
    return {b.id: b.capacity_bytes for b in snapshot.brokers if b.capacity_bytes is not None}


def _check_targets_alive(snapshot: ClusterSnapshot, goal: Goal, source: str) -> None:
    """Refuse a goal that would place replicas on a broker that is down.

    A reassignment onto a dead broker never completes (the new replica can never join the ISR),
    so this is caught here rather than discovered hours into an execution.
    """
    dead = set(snapshot.dead_broker_ids)
    if not dead:
        return
    if goal.replace:
        targets = {new for _, new in goal.replace}
    else:
        targets = set(goal.brokers) if goal.brokers is not None else set(snapshot.broker_ids)
    down = sorted(dead & targets)
    if down:
        ids = ",".join(str(b) for b in down)
        raise PreconditionError(
            f"broker {ids} is down in {source} (alive: false) and cannot receive replicas",
            hint=f"move its replicas away with --remove-brokers {ids}, or restart it and plan again",
        )


def _check_safety(args: argparse.Namespace, loaded: _Loaded, result: Plan) -> dict[str, Any] | None:
    """Run execute's safety checks on a live plan; returns report.json's ``forced`` entry, if forced.

    Raises:
        PreconditionError: a check refuses the plan and ``--force`` was not given.
        KafkaError: the brokers could not be read again.
    """
    if loaded.min_insync is None:
        return None  # planned from a file: no live state to check against
    with open_admin(args) as admin:
        current = with_current_brokers(admin, loaded.snapshot)
    refusals = safety.check(result.moves, current, loaded.min_insync)
    if args.force is not None:
        return {"reason": args.force, "overridden": [str(r) for r in refusals]}
    if refusals:
        raise PreconditionError(
            f"refusing to write the plan: {safety.summary(refusals)}; nothing was written",
            hint="plan differently, or pass --force REASON to write it anyway (the reason goes into "
            "report.json)",
        )
    return None


def _write_outputs(
    output_dir: Path, result: Plan, report: Mapping[str, Any], extra: Mapping[Path, str]
) -> list[Path]:
    """Write the plan files (and ``extra`` ones), all or none; returns their paths, reassignment first."""
    try:
        return write_plan(output_dir, result, report, extra)
    except OSError as exc:
        raise usage_error(f"--output-dir {output_dir}: cannot write: {exc.strerror or exc}") from None
