"""Metric values from the executor's events and from one measurement; the server's port handling."""

from __future__ import annotations

import argparse
import socket
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from ferry.cli.exec_render import event_line
from ferry.cli.metrics import RequestMetrics, served, tee
from ferry.errors import UsageError
from ferry.execute.events import (
    Event,
    HeldUnderMinIsr,
    PaceDecided,
    ProgressUpdate,
    SubmissionPaused,
    SubmissionResumed,
)
from ferry.execute.pace.controller import Pace, Role, State
from ferry.execute.progress import Estimate, Progress, ReplicaProgress
from ferry.kafka.freeze import FreezeState
from ferry.model import TopicPartition

REPLICAS = (
    ReplicaProgress(TopicPartition("t", 0), 3, Progress(40, 100)),
    ReplicaProgress(TopicPartition("t", 1), 3, Progress(10, 50)),
    ReplicaProgress(TopicPartition("t", 1), 4, Progress(50, 50)),
)


def samples(metrics: RequestMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(metrics.registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def update(estimate: Estimate, *, done: int = 1, in_flight: int = 2, total: int = 5) -> ProgressUpdate:
    progress = Progress(100, 200)
    return ProgressUpdate(7, progress, estimate, done, total, in_flight, REPLICAS)


def test_a_progress_event_sets_bytes_per_request_and_broker_moves_and_eta() -> None:
    metrics = RequestMetrics()
    metrics.start(7, 1_000_000)
    metrics.listen(update(Estimate(rate=10.0, eta_s=12.5)))
    got = samples(metrics)
    r = (("request", "7"),)
    assert got[("ferry_bytes_copied", r)] == 100 and got[("ferry_bytes_total", r)] == 200
    assert got[("ferry_broker_bytes_copied", (("broker", "3"), *r))] == 50
    assert got[("ferry_broker_bytes_total", (("broker", "3"), *r))] == 150
    assert got[("ferry_broker_bytes_copied", (("broker", "4"), *r))] == 50
    moves = {
        state: got[("ferry_moves", (*r, ("state", state)))] for state in ("done", "in_flight", "pending")
    }
    assert moves == {"done": 1, "in_flight": 2, "pending": 2}
    assert got[("ferry_eta_seconds", r)] == 12.5
    assert got[("ferry_throttle_bytes_per_second", r)] == 1_000_000
    assert got[("ferry_frozen", r)] == 0


def test_the_eta_disappears_while_there_is_no_rate() -> None:
    metrics = RequestMetrics()
    metrics.start(7, None)
    metrics.listen(update(Estimate(rate=10.0, eta_s=3.0)))
    metrics.listen(update(Estimate(rate=None, eta_s=None)))
    got = samples(metrics)
    assert not any(name == "ferry_eta_seconds" for name, _ in got)
    assert got[("ferry_throttle_bytes_per_second", (("request", "7"),))] == 0


def test_a_freeze_shows_until_it_is_lifted_and_events_before_start_are_ignored() -> None:
    metrics = RequestMetrics()
    freeze = FreezeState(True, "maintenance", "op@host", datetime.now(UTC))
    metrics.listen(SubmissionPaused(7, freeze, 2))
    assert samples(metrics) == {}
    metrics.start(7, None)
    metrics.listen(SubmissionPaused(7, freeze, 2))
    assert samples(metrics)[("ferry_frozen", (("request", "7"),))] == 1
    metrics.listen(SubmissionResumed(7, None))
    assert samples(metrics)[("ferry_frozen", (("request", "7"),))] == 0


def test_pace_decisions_show_each_brokers_throttle_per_role_its_moves_and_rule() -> None:
    metrics = RequestMetrics()
    metrics.start(7, 10_000_000)
    decisions = {
        (3, Role.FOLLOWER): Pace(7_000_000, 2, State.BACK_OFF, "1 partition lost an ISR member"),
        (3, Role.LEADER): Pace(10_000_000, 4, State.HOLD, "achieved 0 of 10000000 B/s"),
    }
    metrics.listen(PaceDecided(7, decisions, ((3, Role.FOLLOWER),)))
    metrics.listen(HeldUnderMinIsr(7, (TopicPartition("t", 0),)))
    got = samples(metrics)
    r = ("request", "7")
    follower = (("broker", "3"), r, ("role", "follower"))
    assert got[("ferry_pace_throttle_bytes_per_second", follower)] == 7_000_000
    assert (
        got[("ferry_pace_throttle_bytes_per_second", (("broker", "3"), r, ("role", "leader")))] == 10_000_000
    )
    assert got[("ferry_pace_concurrency", (("broker", "3"), r))] == 2
    assert got[("ferry_pace_state", (*follower, ("state", "back-off")))] == 1
    assert got[("ferry_pace_state", (*follower, ("state", "raise")))] == 0
    assert got[("ferry_held_under_min_isr", (r,))] == 1


def test_pace_lines_name_what_changed_and_why() -> None:
    decided = PaceDecided(
        7,
        {
            (3, Role.FOLLOWER): Pace(7_000_000, 2, State.BACK_OFF, "1 partition lost an ISR member"),
            (4, Role.FOLLOWER): Pace(10_000_000, 5, State.HOLD, "steady"),
        },
        ((3, Role.FOLLOWER),),
    )
    line = event_line(decided)
    assert line is not None and "broker 3 follower 6.7 MiB/s, 2 move(s) (back-off: 1 partition lost" in line
    assert "broker 4" not in line
    assert event_line(PaceDecided(7, decided.decisions, ())) is None
    held = event_line(HeldUnderMinIsr(7, (TopicPartition("t", 0),)))
    assert held is not None and "paused: t-0 under min ISR while moving" in held
    assert "resumed" in (event_line(HeldUnderMinIsr(7, ())) or "")


def test_tee_hands_every_event_to_each_listener() -> None:
    first: list[Event] = []
    second: list[Event] = []
    event = SubmissionResumed(1, None)
    tee(first.append, None, second.append)(event)
    assert first == second == [event]


def test_textfile_holds_the_same_metrics(tmp_path: Path) -> None:
    metrics = RequestMetrics()
    metrics.start(7, None)
    metrics.record(REPLICAS, Estimate(None, None), done=0, in_flight=2, moves=2)
    metrics.write_textfile(tmp_path / "ferry.prom")
    assert 'ferry_bytes_total{request="7"} 200.0' in (tmp_path / "ferry.prom").read_text()
    with pytest.raises(UsageError, match=r"--metrics-textfile .*: cannot write"):
        metrics.write_textfile(tmp_path / "missing" / "ferry.prom")


def _args(port: int | None) -> argparse.Namespace:
    return argparse.Namespace(metrics_port=port, metrics_address="127.0.0.1")


def test_served_metrics_answer_on_loopback_until_the_block_ends() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with served(_args(port)) as metrics:
        assert metrics is not None
        metrics.start(3, 5)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            assert 'ferry_throttle_bytes_per_second{request="3"} 5.0' in response.read().decode()
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2)


def test_a_busy_or_bad_port_is_a_usage_error() -> None:
    with served(_args(None)) as nothing:
        assert nothing is None
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with (
            pytest.raises(UsageError, match=f"--metrics-port: cannot listen on 127.0.0.1:{port}"),
            served(_args(port)),
        ):
            pass
    with pytest.raises(UsageError, match="expected a port between 1 and 65535"), served(_args(70000)):
        pass


def test_a_broker_that_did_not_answer_shows_as_silent_until_it_answers(tmp_path: Path) -> None:
    metrics = RequestMetrics()
    metrics.start(7, None)
    estimate = Estimate(None, None)
    metrics.listen(ProgressUpdate(7, Progress(100, 200), estimate, 1, 5, 2, REPLICAS, silent=frozenset({4})))
    key = ("ferry_broker_silent", (("broker", "4"), ("request", "7")))
    assert samples(metrics)[key] == 1
    metrics.listen(update(Estimate(None, None)))
    assert samples(metrics)[key] == 0
    # ferry progress --metrics-textfile: one measurement, its silent brokers.
    metrics.record(REPLICAS, Estimate(None, None), done=0, in_flight=2, moves=2, silent=frozenset({3}))
    metrics.write_textfile(tmp_path / "ferry.prom")
    text = (tmp_path / "ferry.prom").read_text()
    assert 'ferry_broker_silent{broker="3",request="7"} 1.0' in text
    assert 'ferry_broker_silent{broker="4",request="7"} 0.0' in text
