"""Pure parts of ``ferry execute`` / ``ferry list``: option checks, list JSON, event lines."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ferry.cli.commands.listing import listing
from ferry.cli.exec_render import event_line
from ferry.cli.main import main
from ferry.execute.events import (
    BatchSubmitted,
    LateWritesAwaited,
    ProgressUpdate,
    TaskFinished,
    WaitingForForeign,
)
from ferry.execute.progress import Estimate, Progress
from ferry.execute.states import TaskState
from ferry.kafka.admin import OngoingReassignment
from ferry.model import TopicPartition

TP = TopicPartition("t", 0)


def test_list_is_empty_object_without_reassignments() -> None:
    assert listing((), {}) == {}


def test_list_gives_target_adding_removing_and_owner() -> None:
    ongoing = (OngoingReassignment(TP, (3, 4, 1, 2), (3, 4), (1, 2)),)
    assert listing(ongoing, {TP: 7}) == {
        "version": 1,
        "partitions": [
            {
                "topic": "t",
                "partition": 0,
                "replicas": [3, 4],
                "adding_replicas": [3, 4],
                "removing_replicas": [1, 2],
                "request": 7,
            }
        ],
    }


def test_event_lines() -> None:
    assert (
        event_line(BatchSubmitted(3, 2, (TP,), {}))
        == "ferry execute: request 3: batch 2: submitted 1 move(s)"
    )
    failed = event_line(TaskFinished(3, TP, TaskState.FAILED, "refused"))
    assert failed == "ferry execute: request 3: t-0 failed (refused)"
    progress = ProgressUpdate(3, Progress(512, 2048), Estimate(256.0, 6.0), 1, 4, 2)
    assert event_line(progress) == (
        "ferry execute: request 3: 25.0% (512 B of 2.0 KiB), 1/4 moves done, 2 in flight, 256 B/s, ETA 6 s"
    )
    assert event_line(LateWritesAwaited(3, 41.6)) == (
        "ferry execute: request 3: a throttle write went unanswered and a broker may still deliver"
        " it: waiting 42 s, then checking that every throttle is as it should be"
    )
    held = event_line(replace(progress, silent=frozenset({4, 2})))
    assert held is not None and held.endswith(
        "ETA 6 s; broker(s) 2, 4 did not answer within 3 s: their log dirs were not read, and the"
        " replicas they receive count what an earlier reading saw (nothing without one)"
    )


def test_waiting_for_foreign_line_names_blockers_and_brokers() -> None:
    blockers = {TopicPartition("o", p): (3, 4) if p == 0 else (3,) for p in range(7)}
    first = event_line(WaitingForForeign(3, {TP: (2, 3)}, 1, 0.0))
    assert first == (
        "ferry execute: request 3: 1 move(s) ready to start wait for 1 reassignment(s) ferry did not"
        " start: t-0 on broker 2, 3; cancel any that is stuck (e.g. adding a replica on a broker that"
        " is down)"
    )
    later = event_line(WaitingForForeign(3, blockers, 2, 125.4))
    assert later is not None
    assert "wait for 7 reassignment(s) ferry did not start (for 125 s): o-0 on broker 3, 4; o-1 on" in later
    assert "o-4 on broker 3; 2 more; cancel" in later


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--throttle", "0"], "--throttle must be a positive"),
        (["--max-moves-per-broker", "0"], "--max-moves-per-broker must be at least 1"),
        (["--order", "fastest"], "unknown --order strategy"),
        (["--max-throttle", "100MB/s"], "--max-throttle and --schedule set the ceiling of --pace auto"),
        (["--pace", "auto", "--max-throttle", "fast"], "expected a rate such as 40MB/s"),
        (["--pace", "auto", "--schedule", "nights=1MB"], "'nights' is not a window"),
    ],
)
def test_bad_options_exit_2_before_touching_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    journal = tmp_path / "journal.sqlite"
    argv = ["execute", "--plan", str(tmp_path / "missing.json"), "--bootstrap-server", "127.0.0.1:1"]
    assert main([*argv, "--journal", str(journal), *extra]) == 2
    assert message in capsys.readouterr().err
    assert not journal.exists()


def test_missing_plan_file_is_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["execute", "--plan", str(tmp_path / "missing.json"), "--bootstrap-server", "127.0.0.1:1"]
    assert main([*argv, "--journal", str(tmp_path / "j.sqlite")]) == 3
    assert "missing.json" in capsys.readouterr().err
