"""Pure parts of the live progress bars: which bars, and the text in their cells."""

from __future__ import annotations

import io

from rich.console import Console

from ferry.cli.live_progress import (
    BarRow,
    LiveProgress,
    amount_text,
    bar_rows,
    clock_text,
    rate_eta_text,
    request_label,
)
from ferry.execute.events import BatchSubmitted, ProgressUpdate, WaitingForForeign
from ferry.execute.progress import Estimate, Progress, ReplicaProgress
from ferry.model import TopicPartition

MIB = 1024 * 1024


def _tp(p: int) -> TopicPartition:
    return TopicPartition("t", p)


def _update(replicas: list[ReplicaProgress], moving: list[TopicPartition]) -> ProgressUpdate:
    total = sum((r.progress for r in replicas), Progress(0, 0))
    return ProgressUpdate(
        7, total, Estimate(2.0 * MIB, 125.0), 1, 5, len(moving), tuple(replicas), tuple(moving)
    )


def test_a_bar_per_partition_in_flight_with_its_adding_brokers() -> None:
    replicas = [
        ReplicaProgress(_tp(0), 4, Progress(1, 4)),
        ReplicaProgress(_tp(0), 3, Progress(2, 4)),
        ReplicaProgress(_tp(1), 3, Progress(8, 8)),  # done: no bar
        ReplicaProgress(_tp(2), 4, Progress(0, 8)),
    ]
    rows = bar_rows(_update(replicas, [_tp(0), _tp(2)]))
    assert rows == (
        BarRow("p:t-0", "t-0 → 3,4", Progress(3, 8)),
        BarRow("p:t-2", "t-2 → 4", Progress(0, 8)),
    )


def test_bars_per_receiving_broker_when_too_many_partitions_move() -> None:
    replicas = [ReplicaProgress(_tp(p), 3 + p % 2, Progress(p, 10)) for p in range(5)]
    rows = bar_rows(_update(replicas, [_tp(p) for p in range(5)]), max_rows=4)
    assert rows == (
        BarRow("b:3", "broker 3 ← 3 replica(s)", Progress(0 + 2 + 4, 30)),
        BarRow("b:4", "broker 4 ← 2 replica(s)", Progress(1 + 3, 20)),
    )


def test_cell_texts() -> None:
    assert amount_text(Progress(MIB, 3 * MIB)) == "1.0 MiB / 3.0 MiB"
    assert clock_text(125.4) == "0:02:05"
    assert clock_text(90061) == "25:01:01"
    assert rate_eta_text(Estimate(2.0 * MIB, 125.0), 1) == "2.0 MiB/s, ETA 0:02:05"
    assert rate_eta_text(Estimate(None, None), 1) == "rate …, ETA …"
    assert rate_eta_text(Estimate(5.0, 0.0), 0) == "5 B/s, ETA 0:00:00"
    assert request_label(_update([], [])) == "request 7 (1/5 moves done, 0 in flight)"


def test_bars_drawn_and_finished_partitions_dropped() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, width=120, color_system=None, force_terminal=False)
    a = ReplicaProgress(_tp(0), 3, Progress(MIB, 4 * MIB))
    b = ReplicaProgress(_tp(1), 4, Progress(0, 4 * MIB))
    with LiveProgress(console) as live:
        live(_update([a, b], [_tp(0), _tp(1)]))
        live(BatchSubmitted(7, 2, (_tp(1),)))
        live(WaitingForForeign(7, {TopicPartition("other", 0): (3,)}, 1, 60.0))
        live(_update([a], [_tp(0)]))
    out = buffer.getvalue()
    assert "ferry execute: request 7: batch 2: submitted 1 move(s)" in out
    assert "did not start (for 60 s): other-0 on broker 3;" in " ".join(out.split())  # rich wraps it
    assert "t-0 → 3" in out and "1.0 MiB / 4.0 MiB" in out and "ETA 0:02:05" in out
    # The last frame (printed when the bars stop) no longer has the bar of t-1.
    assert "t-1 → 4" not in out.split("request 7")[-1]
