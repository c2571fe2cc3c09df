"""Verify's verdicts (pure) and which leftover throttles it restores (journal + lock)."""

from __future__ import annotations

from pathlib import Path

from support.exec_fake import ExecFakeAdmin

from ferry.execute import lock
from ferry.execute.journal import Journal
from ferry.execute.records import ConfigKey, ResourceType, ThrottleRecord
from ferry.execute.verify import Status, check, check_cluster, leftover_throttles
from ferry.model import Move, Plan, TopicPartition

A, B, C = (TopicPartition("t", p) for p in range(3))
RATE = ConfigKey(ResourceType.BROKER, "1", "leader.replication.throttled.rate")


def test_verdicts_need_same_order_and_nothing_in_flight() -> None:
    checks = check({A: [1, 2], B: [1, 2], C: [3, 4]}, {A: (1, 2), B: (2, 1), C: (3, 4, 1)}, {C})
    assert [c.status for c in checks] == [Status.REACHED, Status.NOT_REACHED, Status.MOVING]


def _request(journal: Journal, tp: TopicPartition, previous: str | None) -> int:
    plan = Plan.of([Move(tp, (1, 2), (1, 3), 10)])
    request_id = journal.record_request(plan, bootstrap="b", throttles=[ThrottleRecord(RATE, previous, "5")])
    journal.set_throttles_applied(request_id, {RATE: "5"})
    return request_id


def test_oldest_previous_wins_and_live_or_unrelated_requests_are_skipped(tmp_path: Path) -> None:
    with Journal.open(tmp_path / "j.sqlite") as journal:
        first = _request(journal, A, None)
        second = _request(journal, B, "5")  # read the first one's leftover as pre-existing
        unrelated = _request(journal, C, "7")
        assert leftover_throttles(journal, [A, B]) == {first: {RATE: None}, second: {}}
        with lock.holding(journal.path, first):
            assert lock.is_live(journal.path, first)
            assert leftover_throttles(journal, [A, B]) == {second: {RATE: "5"}}
        assert not lock.is_live(journal.path, first)
        assert unrelated not in leftover_throttles(journal, [A, B])


def test_a_replica_out_of_its_named_dir_is_not_reached_and_one_copying_is_moving() -> None:
    admin = ExecFakeAdmin({A: (1, 2), B: (1, 2), C: (1, 2)})
    admin.log_dirs.dirs.update({1: ("/d1/a", "/d1/b"), 2: ("/d2/a", "/d2/b")})
    admin.log_dirs.stuck_dirs = True
    admin.alter_replica_log_dirs({(C, 1): "/d1/b"})  # a copy into /d1/b, in flight
    named = {A: {1: "/d1/a"}, B: {1: "/d1/b"}, C: {1: "/d1/b"}}
    checks = check_cluster(admin, {A: (1, 2), B: (1, 2), C: (1, 2)}, named)
    assert [c.status for c in checks] == [Status.REACHED, Status.NOT_REACHED, Status.MOVING]
