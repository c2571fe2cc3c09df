"""Throttle configs shared between requests: merging needs, pre-ferry values, settling, writing."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from support.exec_fake import ExecFakeAdmin

from ferry.errors import KafkaError
from ferry.execute import sharing
from ferry.execute import throttles as thr
from ferry.execute.journal import Journal
from ferry.execute.options import ExecuteOptions
from ferry.execute.records import ConfigKey, ResourceType, ThrottleRecord
from ferry.execute.states import RequestState, TaskState
from ferry.execute.throttles import FOLLOWER_RATE, FOLLOWER_REPLICAS, LEADER_RATE, LEADER_REPLICAS
from ferry.model import Move, Plan, TopicPartition

A0, A1 = TopicPartition("a", 0), TopicPartition("a", 1)
B0 = TopicPartition("b", 0)


def _topic(topic: str, key: str) -> ConfigKey:
    return ConfigKey(ResourceType.TOPIC, topic, key)


def _broker(broker: int, key: str) -> ConfigKey:
    return ConfigKey(ResourceType.BROKER, str(broker), key)


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    with Journal.open(tmp_path / "j.sqlite") as j:
        yield j


def _request(
    journal: Journal,
    moves: Sequence[Move],
    rate: int | None,
    *,
    previous: dict[ConfigKey, str | None] | None = None,
    submit: bool = True,
) -> int:
    """A request recording every config its moves need (previous values as given), submitted."""
    keys = thr.required(moves, rate).keys
    before = previous or {}
    records = [ThrottleRecord(k, before.get(k), None) for k in sorted(keys)]
    options = ExecuteOptions(throttle=rate)
    rid = journal.record_request(Plan.of(moves), bootstrap="b", options=options, throttles=records)
    if submit:
        journal.set_task_states([t.id for t in journal.tasks(rid)], TaskState.SUBMITTED, batch=1)
    return rid


def test_merge_unions_replica_entries_and_the_first_rate_wins() -> None:
    key, rate = _topic("a", LEADER_REPLICAS), _broker(1, LEADER_RATE)
    first = thr.Throttles({key: frozenset({(0, 1)})}, {rate: 10})
    second = thr.Throttles({key: frozenset({(1, 2)}), _topic("b", LEADER_REPLICAS): frozenset()}, {rate: 99})
    merged = sharing.merge(first, second)
    assert merged.replicas[key] == frozenset({(0, 1), (1, 2)})
    assert _topic("b", LEADER_REPLICAS) in merged.replicas
    assert merged.rates == {rate: 10}


def test_others_need_the_submitted_tasks_of_other_requests_at_their_own_rate(journal: Journal) -> None:
    mine = _request(journal, [Move(A0, (1, 2), (1, 3))], 10)
    _request(journal, [Move(A1, (1, 2), (1, 4))], 20)
    _request(journal, [Move(B0, (1, 2), (2, 5))], 30, submit=False)  # pending: needs nothing yet
    needed = sharing.others_need(journal, mine)
    assert needed.replicas == {
        _topic("a", LEADER_REPLICAS): frozenset({(1, 1), (1, 2)}),
        _topic("a", FOLLOWER_REPLICAS): frozenset({(1, 4)}),
    }
    assert set(needed.rates.values()) == {20}
    assert {k.resource_name for k in needed.rates} == {"1", "2", "4"}


def test_an_unthrottled_other_request_needs_nothing(journal: Journal) -> None:
    mine = _request(journal, [Move(A0, (1, 2), (1, 3))], 10)
    _request(journal, [Move(A1, (1, 2), (1, 4))], None)
    assert sharing.others_need(journal, mine) == thr.Throttles({}, {})


def test_wanted_keeps_to_the_requests_keys_and_adds_the_others_entries(journal: Journal) -> None:
    mine_moves = [Move(A0, (1, 2), (1, 3))]
    mine = _request(journal, mine_moves, 10)
    _request(journal, [Move(A1, (1, 2), (1, 4))], 20)
    keys = thr.required(mine_moves, 10).keys
    values = sharing.wanted(journal, mine, journal.tasks(mine), 10, {}, keys)
    assert set(values) == set(keys)  # broker 4's rate is the other request's to write
    assert values[_topic("a", LEADER_REPLICAS)] == "0:1,0:2,1:1,1:2"
    assert values[_topic("a", FOLLOWER_REPLICAS)] == "0:3,1:4"
    assert values[_broker(3, FOLLOWER_RATE)] == "10"


def test_previous_values_come_from_a_live_request_that_applied_the_config(journal: Journal) -> None:
    shared, other = _broker(1, LEADER_RATE), _broker(9, LEADER_RATE)
    first = _request(journal, [Move(A0, (1, 2), (1, 3))], 10, previous={shared: "555"})
    journal.set_throttles_applied(first, {shared: "10"})
    on_cluster = {shared: "10", other: "7"}  # the cluster shows ferry's value, not the operator's
    assert sharing.previous_values(journal, on_cluster, [shared, other]) == {shared: "555", other: "7"}


def test_previous_values_ignore_ended_requests_and_unapplied_configs(journal: Journal) -> None:
    key = _broker(1, LEADER_RATE)
    ended = _request(journal, [Move(A0, (1, 2), (1, 3))], 10, previous={key: "555"})
    journal.set_throttles_applied(ended, {key: "10"})
    journal.set_request_state(ended, RequestState.RUNNING)
    journal.set_request_state(ended, RequestState.DONE)
    _request(journal, [Move(A1, (1, 2), (1, 3))], 10, previous={key: "666"})  # nothing applied
    assert sharing.previous_values(journal, {key: "1"}, [key]) == {key: "1"}


def test_write_records_owned_configs_and_releases_the_rest(journal: Journal) -> None:
    owned, released = _broker(1, LEADER_RATE), _broker(2, LEADER_RATE)
    rid = _request(journal, [Move(A0, (1, 2), (1, 3))], 10)
    journal.set_throttles_applied(rid, {released: "10"})
    admin = ExecFakeAdmin({A0: (1, 2)})
    ours, gone = sharing.write(admin, journal, rid, {owned: "10", released: None}, {owned: "10"})
    assert (ours, gone) == ({owned: "10"}, [released])
    assert admin.config_writes == [{owned: "10", released: None}]
    applied = {t.config: t.applied for t in journal.throttles(rid)}
    assert applied[owned] == "10"
    assert applied[released] is None


def test_a_failed_write_leaves_both_records_for_the_cleanup(journal: Journal) -> None:
    owned, released = _broker(1, LEADER_RATE), _broker(2, LEADER_RATE)
    rid = _request(journal, [Move(A0, (1, 2), (1, 3))], 10)
    journal.set_throttles_applied(rid, {released: "10"})
    admin = ExecFakeAdmin({A0: (1, 2)})
    admin.fail_alter_configs = True
    with pytest.raises(KafkaError):
        sharing.write(admin, journal, rid, {owned: "10", released: None}, {owned: "10"})
    applied = {t.config: t.applied for t in journal.throttles(rid)}
    # Recorded before the write (it may have landed), kept until the restore is known to be done.
    assert applied[owned] == "10"
    assert applied[released] == "10"


class _LandsUnanswered(ExecFakeAdmin):
    """Its next config write lands, and its answer is lost (a timeout in a controller failover)."""

    lose_answer = False

    def alter_configs(self, writes: Mapping[ConfigKey, str | None]) -> None:
        super().alter_configs(writes)
        if self.lose_answer:
            self.lose_answer = False
            raise KafkaError("altering configs failed: RequestTimedOutError", transient=True)


def _failed_sync(journal: Journal, admin: ExecFakeAdmin) -> tuple[int, sharing.RequestThrottles]:
    """A request's first sync, whose write ``admin`` is set to fail."""
    rid = _request(journal, [Move(A0, (1, 2), (1, 3))], 10)
    throttles = sharing.RequestThrottles.load(admin, journal, rid)
    with pytest.raises(KafkaError):
        throttles.sync(journal.tasks(rid))
    return rid, throttles


def test_a_write_whose_answer_was_lost_is_put_back_by_the_restore(journal: Journal) -> None:
    """The throttles were written but the call failed, and the moves ended before another sync:
    the restore still removes every one of them, as the journal says the request owns them."""
    admin = _LandsUnanswered({A0: (1, 2)})
    admin.lose_answer = True
    rid, throttles = _failed_sync(journal, admin)
    assert admin.configs  # landed
    throttles.restore()
    assert admin.configs == {}
    assert all(t.applied is None for t in journal.throttles(rid))


def test_a_write_whose_answer_was_lost_is_written_again_by_the_next_sync(journal: Journal) -> None:
    """Unsure whether the failed write landed, the next sync writes the same configs again."""
    admin = ExecFakeAdmin({A0: (1, 2)})
    admin.fail_alter_configs = True
    rid, throttles = _failed_sync(journal, admin)
    admin.fail_alter_configs = False
    assert throttles.sync(journal.tasks(rid)) is not None
    assert admin.configs == throttles.applied


def test_settle_with_nothing_applied_writes_nothing(journal: Journal) -> None:
    rid = _request(journal, [Move(A0, (1, 2), (1, 3))], 10)
    admin = ExecFakeAdmin({A0: (1, 2)})
    assert sharing.settle(admin, journal, rid) == 0
    assert admin.config_writes == []


def test_settle_drops_the_entries_of_moves_no_longer_in_flight(journal: Journal) -> None:
    moves = [Move(A0, (1, 2), (1, 3)), Move(A1, (1, 2), (1, 4))]
    rid = _request(journal, moves, 10)
    admin = ExecFakeAdmin({A0: (1, 2), A1: (1, 2)})
    assert sharing.RequestThrottles.load(admin, journal, rid).sync(journal.tasks(rid)) is not None
    a1 = journal.tasks(rid)[1]
    journal.set_task_states([a1.id], TaskState.CANCELLED)
    written = sharing.settle(admin, journal, rid)
    assert written == 4  # broker 4's two rates deleted, both replica lists narrowed to partition 0
    assert admin.configs[_topic("a", LEADER_REPLICAS)] == "0:1,0:2"
    assert admin.configs[_topic("a", FOLLOWER_REPLICAS)] == "0:3"
    assert _broker(4, LEADER_RATE) not in admin.configs
    assert sharing.settle(admin, journal, rid) == 0  # settled: nothing more to write


def test_restore_keeps_what_another_request_still_needs(journal: Journal) -> None:
    shared = _topic("a", LEADER_REPLICAS)
    mine = _request(journal, [Move(A0, (1, 2), (1, 3))], 10, previous={shared: "9:9"})
    _request(journal, [Move(A1, (1, 2), (1, 4))], 20)
    admin = ExecFakeAdmin({A0: (1, 2), A1: (1, 2)})
    throttles = sharing.RequestThrottles.load(admin, journal, mine)
    assert throttles.rate == 10
    throttles.sync(journal.tasks(mine))
    assert admin.configs[shared] == "0:1,0:2,1:1,1:2,9:9"
    owned, released = throttles.restore() or (0, 0)
    assert owned == 0
    assert released > 0
    # The other request's entries stay on the shared list; ours and our own rates go.
    assert admin.configs[shared] == "1:1,1:2,9:9"
    assert _broker(3, FOLLOWER_RATE) not in admin.configs
    assert throttles.applied == {}
    assert all(t.applied is None for t in journal.throttles(mine))


def test_a_sync_that_changes_nothing_reports_nothing(journal: Journal) -> None:
    rid = _request(journal, [Move(A0, (1, 2), (1, 3))], 10)
    throttles = sharing.RequestThrottles.load(ExecFakeAdmin({A0: (1, 2)}), journal, rid)
    assert throttles.sync(journal.tasks(rid)) is not None
    assert throttles.sync(journal.tasks(rid)) is None


def test_restore_landed_puts_back_what_a_late_write_set_or_deleted(journal: Journal) -> None:
    """A write that landed after the restore set one config and deleted another that had a value
    of its own before ferry: both go back to what they were; a config left as it was is not
    written. Until then the journal keeps the request's configs unsure."""
    theirs, rate = _topic("a", LEADER_REPLICAS), _broker(3, FOLLOWER_RATE)
    rid = _request(journal, [Move(A0, (1, 2), (1, 3))], 10, previous={theirs: "9:9"})
    admin = ExecFakeAdmin({A0: (1, 2)})
    admin.configs[theirs] = "9:9"
    throttles = sharing.RequestThrottles.load(admin, journal, rid)
    throttles.sync(journal.tasks(rid))
    admin.settle_in_s = 60.0
    throttles.restore()
    assert admin.configs == {theirs: "9:9"}
    assert all(t.applied is not None for t in journal.throttles(rid))
    admin.alter_configs({theirs: None, rate: "10"})  # the late write
    admin.settle_in_s, admin.config_writes = 0.0, []
    assert throttles.restore_landed() == (0, 2)
    assert admin.configs == {theirs: "9:9"}
    assert admin.config_writes == [{theirs: "9:9", rate: None}]
    assert all(t.applied is None for t in journal.throttles(rid))
