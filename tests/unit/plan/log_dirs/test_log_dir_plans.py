"""Plans between the log dirs inside brokers: the balance ends every dir in its band (or as close
as one replica allows) moving few bytes, an evacuation empties its dir, new replicas of an
inter-broker plan go into the emptiest dir, and the report counts bytes per dir."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ferry.errors import InputError, PreconditionError
from ferry.model import Broker, ClusterSnapshot, LogDir, Move, PartitionState, Plan, TopicPartition
from ferry.plan.log_dirs.balance import TOLERANCE, balance_dirs
from ferry.plan.log_dirs.choose import choose_dirs
from ferry.plan.log_dirs.evacuate import evacuate_dir, parse_dir_option
from ferry.plan.log_dirs.figures import dir_figures
from ferry.plan.log_dirs.loads import broker_loads, dir_moves

GB = 10**9


def _cluster(
    dirs: dict[int, list[LogDir]],
    replicas: list[tuple[int, int, str]],
    racks: dict[int, str] | None = None,
) -> ClusterSnapshot:
    """Brokers with ``dirs``; one single-replica partition ``t-i`` of each (broker, bytes, dir)."""
    brokers = [Broker(b, (racks or {}).get(b), log_dirs=tuple(d)) for b, d in dirs.items()]
    parts = [
        PartitionState(TopicPartition("t", i), (b,), size_bytes=size, replica_dirs=((b, path),))
        for i, (b, size, path) in enumerate(replicas)
    ]
    return ClusterSnapshot.of(brokers, parts)


def _after(snapshot: ClusterSnapshot, moves: tuple[Move, ...]) -> dict[tuple[int, str], int]:
    rows = dir_figures(snapshot, moves)
    return {(r["broker"], r["path"]): r["bytes_after"] for r in rows if r["path"] is not None}


def _dir(path: str, size: int = 100 * GB, free: int | None = None, **flags: bool) -> LogDir:
    return LogDir(path, size, size if free is None else free, **flags)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.integers(1, 40), min_size=4, max_size=60),
    capacities=st.lists(st.sampled_from([1, 2, 3]), min_size=2, max_size=4),
    skew=st.integers(0, 3),
)
def test_the_balance_ends_every_open_dir_in_its_band_or_one_replica_from_it(
    sizes: list[int], capacities: list[int], skew: int
) -> None:
    # Most replicas start in one dir (a new disk, or a skewed start), the rest round robin; each
    # dir's free space is its size less what it holds.
    placed = [(1, s * GB, f"/d{0 if i % 4 <= skew else i % len(capacities)}") for i, s in enumerate(sizes)]
    held = {f"/d{i}": sum(n for _, n, d in placed if d == f"/d{i}") for i in range(len(capacities))}
    dirs = [_dir(f"/d{i}", c * 1000 * GB, c * 1000 * GB - held[f"/d{i}"]) for i, c in enumerate(capacities)]
    snapshot = _cluster({1: dirs}, placed)
    moves = dir_moves(snapshot, balance_dirs(snapshot))
    after = _after(snapshot, moves)
    total, whole = sum(after.values()), sum(d.total_bytes or 0 for d in dirs)
    largest = max(sizes) * GB
    for d in dirs:
        share = total * (d.total_bytes or 0) / whole
        assert abs(after[(1, d.path)] - share) <= max(TOLERANCE * share, largest) + 1
    # Nothing moves that does not have to: the bytes copied are at most what leaves the dirs over
    # their bands, plus one replica per dir.
    before = _after(snapshot, ())
    over = sum(
        max(0.0, before[(1, d.path)] - total * (d.total_bytes or 0) / whole * (1 + TOLERANCE)) for d in dirs
    )
    under = sum(
        max(0.0, total * (d.total_bytes or 0) / whole * (1 - TOLERANCE) - before[(1, d.path)]) for d in dirs
    )
    assert sum(m.size_bytes for m in moves) <= max(over, under) + largest * len(dirs)


def test_a_balanced_broker_is_left_alone_and_cordoned_or_offline_dirs_take_no_part() -> None:
    dirs = [_dir("/a"), _dir("/b"), _dir("/c", cordoned=True), _dir("/e", offline=True)]
    snapshot = _cluster({1: dirs}, [(1, 10 * GB, "/a"), (1, 10 * GB, "/b"), (1, 50 * GB, "/c")])
    assert balance_dirs(snapshot) == {}


def test_the_balance_moves_the_replica_that_ends_it_in_one_copy() -> None:
    snapshot = _cluster(
        {1: [_dir("/a"), _dir("/b")]}, [(1, 30 * GB, "/a"), (1, 10 * GB, "/a"), (1, 20 * GB, "/b")]
    )
    # /a holds 40, /b 20: the 10 GB replica evens them at 30 each (the 30 GB one would overshoot).
    assert balance_dirs(snapshot) == {(TopicPartition("t", 1), 1): "/b"}


def test_a_snapshot_without_dirs_is_refused_by_name() -> None:
    snapshot = ClusterSnapshot.of([Broker(1)], [PartitionState(TopicPartition("t", 0), (1,))])
    with pytest.raises(InputError, match="--disks balance: the snapshot lists no log dirs"):
        balance_dirs(snapshot)


def test_an_evacuation_empties_the_dir_into_the_emptiest_dirs_with_room() -> None:
    dirs = [_dir("/a", free=5 * GB), _dir("/b", free=60 * GB), _dir("/c", free=40 * GB)]
    replicas = [(1, 30 * GB, "/a"), (1, 20 * GB, "/a"), (1, 4 * GB, "/b")]
    snapshot = _cluster({1: dirs}, replicas)
    evacuation = evacuate_dir(snapshot, 1, "/a")
    assert evacuation.away == ()
    after = _after(snapshot, evacuation.moves)
    assert after[(1, "/a")] == 0
    # 30 GB to /b (60 free), then 20 GB to /c (40 free: 50 %) rather than /b (30 free: 30 %).
    assert {m.tp: m.named_dirs for m in evacuation.moves} == {
        TopicPartition("t", 0): {1: "/b"},
        TopicPartition("t", 1): {1: "/c"},
    }


def test_what_the_other_dirs_cannot_hold_goes_to_a_broker_of_the_same_rack() -> None:
    dirs = {
        1: [_dir("/a"), _dir("/b", free=10 * GB)],
        2: [_dir("/a"), _dir("/b")],
        3: [_dir("/a"), _dir("/b")],
    }
    racks = {1: "r0", 2: "r1", 3: "r0"}
    snapshot = _cluster(dirs, [(1, 30 * GB, "/a"), (1, 3 * GB, "/a")], racks)
    evacuation = evacuate_dir(snapshot, 1, "/a")
    (away,) = evacuation.away
    assert (away.tp, away.original, away.target) == (TopicPartition("t", 0), (1,), (3,))
    assert away.named_dirs == {3: "/a"}
    (within,) = evacuation.within
    assert within.named_dirs == {1: "/b"}


def test_a_broker_with_an_offline_dir_sends_everything_to_other_brokers() -> None:
    dirs = {1: [_dir("/a"), _dir("/b"), _dir("/x", offline=True)], 2: [_dir("/a")]}
    snapshot = _cluster(dirs, [(1, GB, "/a")])
    assert evacuate_dir(snapshot, 1, "/a").away[0].target == (2,)


@pytest.mark.parametrize(
    ("broker", "path", "error", "match"),
    [
        (9, "/a", InputError, "broker 9 is not in the snapshot"),
        (1, "/zz", InputError, "broker 1 has no log dir /zz"),
    ],
)
def test_an_unknown_broker_or_dir_is_refused(
    broker: int, path: str, error: type[Exception], match: str
) -> None:
    snapshot = _cluster({1: [_dir("/a")]}, [(1, GB, "/a")])
    with pytest.raises(error, match=match):
        evacuate_dir(snapshot, broker, path)


def test_a_replica_with_nowhere_to_go_is_a_precondition_error() -> None:
    snapshot = _cluster({1: [_dir("/a"), _dir("/b", free=GB)]}, [(1, 50 * GB, "/a")])
    with pytest.raises(
        PreconditionError, match=r"nor any other broker has room for t-0 \(50000000000 bytes\)"
    ):
        evacuate_dir(snapshot, 1, "/a")


def test_the_dir_option_reads_broker_colon_path() -> None:
    assert parse_dir_option("3:/data/b") == (3, "/data/b")
    for bad in ("/data/b", "x:/a", "3:"):
        with pytest.raises(ValueError, match="BROKER:PATH"):
            parse_dir_option(bad)


def test_new_replicas_go_into_the_emptiest_dir_counting_what_the_plan_sent_there() -> None:
    dirs = {1: [_dir("/a")], 2: [_dir("/a", free=50 * GB), _dir("/b", free=60 * GB)]}
    snapshot = _cluster(dirs, [(1, 20 * GB, "/a"), (1, 15 * GB, "/a")])
    moves = [Move(TopicPartition("t", i), (1,), (2,), s) for i, s in ((0, 20 * GB), (1, 15 * GB))]
    chosen = choose_dirs(Plan.of(moves), snapshot)
    # The 20 GB replica first, into /b (60 free); then /b has 40 free, /a 50: the 15 GB one to /a.
    assert [m.log_dirs for m in chosen.moves] == [("/b",), ("/a",)]
    single = choose_dirs(Plan.of([Move(TopicPartition("t", 0), (2,), (1,), GB)]), snapshot)
    assert single.moves[0].log_dirs is None  # broker 1 has one dir: the broker's choice


def test_loads_refuse_a_replica_in_a_dir_its_broker_does_not_list() -> None:
    snapshot = _cluster({1: [_dir("/a")]}, [(1, GB, "/zz")])
    with pytest.raises(InputError, match="t-0 on broker 1 is in /zz, not one of its log dirs"):
        broker_loads(snapshot, "--disks balance")


def test_figures_count_a_new_replica_without_a_dir_under_no_dir() -> None:
    snapshot = _cluster({1: [_dir("/a")], 2: [_dir("/a")]}, [(1, GB, "/a")])
    rows = dir_figures(snapshot, [replace(Move(TopicPartition("t", 0), (1,), (2,), GB))])
    assert [(r["broker"], r["path"], r["bytes_before"], r["bytes_after"]) for r in rows] == [
        (1, "/a", GB, 0),
        (2, "/a", 0, 0),
        (2, None, 0, GB),
    ]
