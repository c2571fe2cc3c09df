"""Which plans start Spark while the snapshot is read: by the options, and by the snapshot's size on
disk (a file or a Parquet folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ferry.cli.commands.plan import one_pass
from ferry.cli.engines import EARLY_FROM_BYTES, worth_starting_early
from ferry.cli.main import build_parser
from ferry.model import BalanceMode, Goal
from ferry.plan.planner import per_topic_phases


def test_a_snapshot_file_from_the_threshold_on_is_read_while_spark_starts(tmp_path: Path) -> None:
    small, big = tmp_path / "small.json", tmp_path / "big.json"
    small.write_bytes(b" " * (EARLY_FROM_BYTES - 1))
    big.write_bytes(b" " * EARLY_FROM_BYTES)
    assert not worth_starting_early(small)
    assert worth_starting_early(big)


def test_a_parquet_folder_counts_every_file_in_it(tmp_path: Path) -> None:
    folder = tmp_path / "snapshot"
    (folder / "partitions").mkdir(parents=True)
    (folder / "brokers.parquet").write_bytes(b" " * (EARLY_FROM_BYTES // 2))
    (folder / "partitions" / "part-0.parquet").write_bytes(b" " * (EARLY_FROM_BYTES // 2 - 1))
    assert not worth_starting_early(folder)
    (folder / "partitions" / "part-1.parquet").write_bytes(b" ")
    assert worth_starting_early(folder)


def test_no_snapshot_file_starts_nothing_early(tmp_path: Path) -> None:
    assert not worth_starting_early(None)  # --bootstrap-server, --example
    assert not worth_starting_early(tmp_path / "missing.json")  # the load names it


@pytest.mark.parametrize(
    "options",
    [
        [],
        ["--remove-brokers", "8"],
        ["--replace", "1=9"],
        ["--balance", "bytes"],
        ["--drain-above", "0.8", "--capacity", "disks.json"],
        ["--replication-factor", "t=2"],
    ],
)
def test_the_options_tell_a_one_pass_goal_as_the_planner_does(options: list[str]) -> None:
    """Whether Spark starts early is decided before a goal can be built; it must agree with it."""
    args = build_parser().parse_args(["plan", "--example", "--output-dir", "out", *options])
    goal = Goal(
        replace=tuple(args.replace),
        balance=BalanceMode(args.balance),
        drain_above=args.drain_above,
        capacity={1: 1} if args.drain_above is not None else None,
    )
    assert one_pass(args) == (not per_topic_phases(goal))
