"""Which request ``ferry progress`` shows when none is named: a live one, never a killed one's."""

from __future__ import annotations

from pathlib import Path

import pytest

from ferry.cli.requests import pick_request
from ferry.errors import PreconditionError
from ferry.execute import lock
from ferry.execute.journal import Journal
from ferry.execute.states import RequestState
from ferry.model import Move, Plan, TopicPartition


def _running(journal: Journal) -> int:
    request_id = journal.record_request(
        Plan.of([Move(TopicPartition("t", 0), (1, 2), (1, 3), 10)]), bootstrap="b", throttles=[]
    )
    journal.set_request_state(request_id, RequestState.RUNNING)
    return request_id


def test_a_running_request_without_its_process_is_not_picked_as_live(tmp_path: Path) -> None:
    with Journal.open(tmp_path / "j.sqlite") as journal:
        killed = _running(journal)
        assert pick_request(journal, None, [RequestState.RUNNING]).id == killed
        with pytest.raises(PreconditionError, match="no running request"):
            pick_request(journal, None, [RequestState.RUNNING], live=True)
        with lock.holding(journal.path, killed):
            assert pick_request(journal, None, [RequestState.RUNNING], live=True).id == killed
