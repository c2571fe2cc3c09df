"""``ferry freeze`` / ``unfreeze`` / ``status`` on a FakeAdmin, and the lines a pause prints."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path

import pytest
from support.fake_admin import FakeAdmin

from ferry.cli.commands import freeze as freeze_cmd
from ferry.cli.commands import status as status_cmd
from ferry.cli.commands.status import RequestLine, status_json, status_text, unfinished_requests
from ferry.cli.exec_render import event_line
from ferry.cli.main import main
from ferry.cli.running import freeze_notices, listener_for
from ferry.execute import lock
from ferry.execute.events import ProgressUpdate, SubmissionPaused, SubmissionResumed
from ferry.execute.journal import Journal
from ferry.execute.progress import Estimate, Progress
from ferry.execute.states import RequestState
from ferry.kafka.freeze import FreezeState
from ferry.model import Broker, Move, Plan, TopicPartition

AT = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
FROZEN = FreezeState(True, "disk swap", "ops@db-1", AT)
THAWED = FreezeState(False, "", "ops@db-2", AT)
CONNECT = ["--bootstrap-server", "127.0.0.1:1"]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAdmin]:
    admin = FakeAdmin.of([Broker(1), Broker(2)])
    for module in (freeze_cmd, status_cmd):
        monkeypatch.setattr(module, "open_admin", lambda args: nullcontext(admin))
    yield admin


def test_freeze_records_reason_who_and_when_and_unfreeze_lifts_it(
    fake: FakeAdmin, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["freeze", *CONNECT, "--reason", "  disk   swap "]) == 0
    state = fake.freeze
    assert state is not None and state.frozen and state.reason == "disk swap"
    assert state.by == freeze_cmd.operator() and state.at.tzinfo is not None
    assert "no ferry submits new moves until 'ferry unfreeze'" in capsys.readouterr().err
    assert main(["freeze", *CONNECT, "--reason", "still"]) == 0
    assert "replacing: the cluster is frozen by" in capsys.readouterr().err
    assert main(["unfreeze", *CONNECT]) == 0
    assert fake.freeze is not None and not fake.freeze.frozen
    err = capsys.readouterr().err
    assert "unfrozen; it was frozen by" in err and err.rstrip().endswith(": still")


def test_unfreeze_of_a_cluster_never_frozen_writes_nothing(
    fake: FakeAdmin, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["unfreeze", *CONNECT]) == 0
    assert fake.freeze is None
    assert "not frozen" in capsys.readouterr().err


@pytest.mark.parametrize("reason", [[], ["--reason", "   "]])
def test_freeze_needs_a_reason(reason: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["freeze", *CONNECT, *reason]) == 2
    assert "reason" in capsys.readouterr().err


def test_operator_survives_a_missing_login_name(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_user() -> str:
        raise OSError("no login name")

    monkeypatch.setattr(freeze_cmd.getpass, "getuser", no_user)
    assert freeze_cmd.operator().startswith("unknown@")


def test_status_text_and_json(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    requests = (
        RequestLine(3, RequestState.INTERRUPTED, False, 1, 4),
        RequestLine(5, RequestState.RUNNING, True, 0, 2),
        RequestLine(6, RequestState.RUNNING, False, 2, 2),
    )
    assert status_text(FROZEN, path, requests).splitlines() == [
        "frozen by ops@db-1 since 2025-01-02 03:04:05 UTC: disk swap",
        f"unfinished requests in {path}:",
        "  request 3: interrupted, 1/4 moves done",
        "  request 5: running, 0/2 moves done",
        "  request 6: running, executor gone: 'ferry resume' it, 2/2 moves done",
    ]
    assert status_text(THAWED, path, ()).splitlines() == [
        "not frozen (unfrozen by ops@db-2 at 2025-01-02 03:04:05 UTC)",
        f"no running or interrupted requests in {path}",
    ]
    assert status_text(None, path, ()).splitlines()[0] == "not frozen"
    assert status_json(FROZEN, path, requests[:1]) == {
        "frozen": True,
        "freeze": {
            "frozen": True,
            "reason": "disk swap",
            "by": "ops@db-1",
            "at": "2025-01-02T03:04:05+00:00",
        },
        "journal": str(path),
        "requests": [{"id": 3, "state": "interrupted", "live": False, "done": 1, "total": 4}],
    }
    assert status_json(None, path, ())["freeze"] is None


def test_unfinished_requests_from_the_journal(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    assert unfinished_requests(path) == ()
    assert not path.exists()  # status never creates a journal
    plan = Plan.of([Move(TopicPartition("t", 0), (1, 2), (1, 3), 10)])
    with Journal.open(path) as journal:
        finished, running, _recorded = (journal.record_request(plan, bootstrap="b") for _ in range(3))
        for request_id in (finished, running):
            journal.set_request_state(request_id, RequestState.RUNNING)
        journal.set_request_state(finished, RequestState.DONE)
        assert unfinished_requests(path) == (RequestLine(running, RequestState.RUNNING, False, 0, 1),)
        with lock.holding(path, running):
            assert unfinished_requests(path)[0].live


def test_status_command_shows_the_freeze(
    fake: FakeAdmin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.freeze = FROZEN
    assert main(["status", *CONNECT, "--journal", str(tmp_path / "j.sqlite")]) == 0
    assert capsys.readouterr().out.startswith("frozen by ops@db-1 since 2025-01-02 03:04:05 UTC: disk swap\n")
    assert main(["status", *CONNECT, "--journal", str(tmp_path / "j.sqlite"), "--json"]) == 0
    assert '"frozen": true' in capsys.readouterr().out


def test_pause_and_resume_lines() -> None:
    assert event_line(SubmissionPaused(7, FROZEN, 2)) == (
        "ferry execute: request 7: paused: the cluster is frozen by ops@db-1 since 2025-01-02 03:04:05 UTC:"
        " disk swap; 2 move(s) in flight go on, no new ones until 'ferry unfreeze'"
    )
    assert event_line(SubmissionResumed(7, THAWED)) == (
        "ferry execute: request 7: resumed: the cluster was unfrozen by ops@db-2 at 2025-01-02 03:04:05 UTC"
    )
    assert (
        event_line(SubmissionResumed(7, None))
        == "ferry execute: request 7: resumed: the cluster was unfrozen"
    )


def test_without_wait_only_pauses_are_printed(capsys: pytest.CaptureFixture[str]) -> None:
    freeze_notices(ProgressUpdate(7, Progress(0, 10), Estimate(None, None), 0, 1, 0))
    freeze_notices(SubmissionPaused(7, FROZEN, 0))
    assert capsys.readouterr().err.splitlines() == [event_line(SubmissionPaused(7, FROZEN, 0))]


def test_a_paused_run_with_nothing_in_flight_prints_progress_sparingly(
    capsys: pytest.CaptureFixture[str],
) -> None:
    listen = listener_for(True)
    listen(SubmissionPaused(7, FROZEN, 0))
    for _ in range(5):
        listen(ProgressUpdate(7, Progress(0, 10), Estimate(None, None), 0, 1, 0))
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and "paused" in lines[0] and "0/1 moves done" in lines[1]
