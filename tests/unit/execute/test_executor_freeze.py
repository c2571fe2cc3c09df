"""The executor under a cluster freeze: no new moves while frozen, in-flight ones and throttles go on."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from support.exec_fake import ExecFakeAdmin

from ferry.errors import KafkaError
from ferry.execute.batching import Limits
from ferry.execute.events import BatchSubmitted, Event, SubmissionPaused, SubmissionResumed
from ferry.execute.executor import Executor
from ferry.execute.journal import Journal
from ferry.execute.options import ExecuteOptions
from ferry.execute.states import RequestState, TaskState
from ferry.kafka.freeze import FreezeState
from ferry.model import Move, Plan, TopicPartition

# Three partitions on brokers 1,2 going to 3,4: with one move per broker they go one at a time.
ORIGINAL = {TopicPartition("t", p): (1, 2) for p in range(3)}
TARGETS = {tp: (3, 4) for tp in ORIGINAL}
AT = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
FROZEN = FreezeState(True, "disk swap on broker 3", "ops@db-1", AT)
THAWED = FreezeState(False, "", "ops@db-2", AT)
OPTIONS = ExecuteOptions(throttle=1000, limits=Limits(max_moves_per_broker=1))


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    with Journal.open(tmp_path / "j.sqlite") as j:
        yield j  # type: ignore[misc]


def _plan() -> Plan:
    return Plan.of(Move(tp, ORIGINAL[tp], TARGETS[tp], 100) for tp in ORIGINAL)


def _executor(
    admin: ExecFakeAdmin, journal: Journal, events: list[Event], on_sleep: Callable[[int], None]
) -> Executor:
    """An executor whose n-th sleep calls ``on_sleep(n)``: the test's hand on the freeze switch."""
    sleeps = [0]

    def sleep(seconds: float) -> None:
        sleeps[0] += 1
        on_sleep(sleeps[0])

    ticks = iter(range(10**6))
    return Executor(admin, journal, listener=events.append, clock=lambda: float(next(ticks)), sleep=sleep)


def _submissions(events: list[Event]) -> list[int]:
    """Indexes of the BatchSubmitted events in ``events``."""
    return [i for i, e in enumerate(events) if isinstance(e, BatchSubmitted)]


def test_started_frozen_it_waits_paused_then_runs_after_unfreeze(journal: Journal) -> None:
    admin, events = ExecFakeAdmin(ORIGINAL), []
    admin.freeze = FROZEN
    writes_while_frozen: list[int] = []

    def hand(n: int) -> None:
        if n == 5:
            writes_while_frozen.append(len(admin.config_writes))
            admin.freeze = THAWED

    executor = _executor(admin, journal, events, hand)
    rid = executor.prepare(_plan(), bootstrap="b", options=OPTIONS)
    executor.run(rid)
    paused = [e for e in events if isinstance(e, SubmissionPaused)]
    resumed = [e for e in events if isinstance(e, SubmissionResumed)]
    assert paused == [SubmissionPaused(rid, FROZEN, 0)]
    assert resumed == [SubmissionResumed(rid, THAWED)]
    assert events.index(resumed[0]) < _submissions(events)[0]  # nothing went out while frozen
    assert writes_while_frozen == [0]  # not even a throttle: nothing was moving
    assert admin.replicas == TARGETS
    assert admin.configs == {}
    assert journal.request(rid).state is RequestState.DONE


def test_frozen_mid_run_lets_moves_in_flight_finish_and_drops_their_throttles(journal: Journal) -> None:
    admin, events = ExecFakeAdmin(ORIGINAL, polls_to_finish=2), []
    seen: dict[str, object] = {}

    def hand(n: int) -> None:
        if n == 1:  # the first batch (one move) is in flight
            admin.freeze = FROZEN
        if n == 6:  # long after that move ended
            seen["states"] = sorted(t.state for t in journal.tasks())
            seen["configs"] = dict(admin.configs)
            seen["moving"] = dict(admin.moving)
            admin.freeze = None  # the record vanished (topic deleted): not frozen either

    executor = _executor(admin, journal, events, hand)
    rid = executor.prepare(_plan(), bootstrap="b", options=OPTIONS)
    executor.run(rid)
    assert seen["states"] == [TaskState.DONE, TaskState.PENDING, TaskState.PENDING]
    assert seen["moving"] == {}
    assert seen["configs"] == {}  # the finished move's throttles went with it
    (paused,) = [e for e in events if isinstance(e, SubmissionPaused)]
    assert paused == SubmissionPaused(rid, FROZEN, 1)
    (resumed,) = [e for e in events if isinstance(e, SubmissionResumed)]
    assert resumed.freeze is None
    between = [i for i in _submissions(events) if events.index(paused) < i < events.index(resumed)]
    assert between == []
    assert admin.replicas == TARGETS
    assert journal.request(rid).state is RequestState.DONE


def test_the_flag_is_read_at_most_once_a_poll_and_not_once_all_is_submitted(journal: Journal) -> None:
    admin, events = ExecFakeAdmin(ORIGINAL, polls_to_finish=3), []
    admin.freeze = THAWED  # an unfreeze record: not frozen, nothing to report
    sleeps: list[int] = []
    executor = _executor(admin, journal, events, sleeps.append)
    executor.run(executor.prepare(_plan(), bootstrap="b", options=ExecuteOptions()))
    assert not [e for e in events if isinstance(e, SubmissionPaused | SubmissionResumed)]
    assert len(sleeps) >= 2
    assert admin.freeze_reads == 1  # all three went in the first batch: nothing left to hold back


def test_a_new_freeze_while_paused_is_reported_again(journal: Journal) -> None:
    admin, events = ExecFakeAdmin(ORIGINAL), []
    admin.freeze = FROZEN
    again = FreezeState(True, "and broker 4 too", "ops@db-3", AT)

    def hand(n: int) -> None:
        admin.freeze = {2: again, 4: THAWED}.get(n, admin.freeze)

    executor = _executor(admin, journal, events, hand)
    rid = executor.prepare(_plan(), bootstrap="b", options=OPTIONS)
    executor.run(rid)
    changes = [e for e in events if isinstance(e, SubmissionPaused | SubmissionResumed)]
    assert changes == [
        SubmissionPaused(rid, FROZEN, 0),
        SubmissionPaused(rid, again, 0),
        SubmissionResumed(rid, THAWED),
    ]


def test_a_resume_sends_nothing_again_while_frozen_and_everything_after_unfreeze(journal: Journal) -> None:
    # Request interrupted right after journalling its first batch: submitted, never sent.
    admin, events = ExecFakeAdmin(ORIGINAL), []
    seen: dict[str, object] = {}

    def hand(n: int) -> None:
        if n == 12:  # more than the 10 s grace that would fail a vanished move
            seen["moving"] = dict(admin.moving)
            seen["replicas"] = dict(admin.replicas)
            seen["states"] = sorted(t.state for t in journal.tasks())
            seen["writes"] = len(admin.config_writes)
            admin.freeze = THAWED

    executor = _executor(admin, journal, events, hand)
    rid = executor.prepare(_plan(), bootstrap="b", options=OPTIONS)
    first = journal.tasks(rid)[0]
    journal.set_task_states([first.id], TaskState.SUBMITTED, batch=1)
    journal.set_request_state(rid, RequestState.INTERRUPTED)
    admin.freeze = FROZEN
    found = executor.resume(rid)
    assert [t.id for t in found.unsent] == [first.id]
    assert seen["moving"] == {} and seen["replicas"] == ORIGINAL  # not re-sent while frozen
    assert seen["states"] == [TaskState.PENDING, TaskState.PENDING, TaskState.SUBMITTED]  # nor failed
    assert seen["writes"] == 0  # no throttle for a move that is not running
    assert [e for e in events if isinstance(e, SubmissionPaused)] == [SubmissionPaused(rid, FROZEN, 0)]
    (resumed,) = [e for e in events if isinstance(e, SubmissionResumed)]
    assert events.index(resumed) < _submissions(events)[0]
    assert admin.replicas == TARGETS
    assert {t.state for t in journal.tasks(rid)} == {TaskState.DONE}
    assert journal.request(rid).state is RequestState.DONE
    assert admin.configs == {}


def test_a_long_freeze_adds_a_progress_sample_every_few_seconds_not_every_poll(journal: Journal) -> None:
    admin, events = ExecFakeAdmin(ORIGINAL), []
    admin.freeze = FROZEN
    polls = 200

    def hand(n: int) -> None:
        if n == polls:
            admin.freeze = THAWED

    executor = _executor(admin, journal, events, hand)
    rid = executor.prepare(_plan(), bootstrap="b", options=OPTIONS)
    executor.run(rid)
    samples = journal.progress_samples(rid)
    frozen_at = {s.at for s in samples if s.done == 0}
    # The clock ticks at least once a poll, so 200 polls span ≥ 200 s: one sample per 5 s at most.
    assert 1 <= len(frozen_at) <= polls // 5 + 1
    assert journal.request(rid).state is RequestState.DONE


class _LeaderSilent(ExecFakeAdmin):
    """The control topic's leader does not answer while ``silent_reads`` is above zero: a bounded
    read of the flag fails as the real one does (transient), whatever the flag says."""

    def __init__(self) -> None:
        super().__init__(ORIGINAL)
        self.silent_reads = 0
        self.bounds: list[float | None] = []

    def read_freeze(self, *, within_s: float | None = None) -> FreezeState | None:
        self.bounds.append(within_s)
        if self.silent_reads > 0:
            self.silent_reads -= 1
            raise KafkaError("reading the freeze flag: no answer within 3 s", transient=True)
        return super().read_freeze(within_s=within_s)


@pytest.mark.parametrize("start", [FROZEN, None])
def test_a_freeze_flag_that_cannot_be_read_in_time_leaves_the_run_as_last_read(
    journal: Journal, start: FreezeState | None
) -> None:
    """Frozen, it stays paused (nothing submitted) while the flag goes unread, though the flag
    meanwhile says thawed; not frozen, it goes on submitting. Neither reports a change it did not read."""
    admin, events = _LeaderSilent(), []
    admin.freeze = start
    submitted_while_unread: list[bool] = []

    def hand(n: int) -> None:
        if n == 2:
            admin.silent_reads, admin.freeze = 2, THAWED if start else None
        if n == 3:
            submitted_while_unread.append(bool(_submissions(events)))

    executor = _executor(admin, journal, events, hand)
    rid = executor.prepare(_plan(), bootstrap="b", options=OPTIONS)
    executor.run(rid)
    assert admin.silent_reads == 0 and set(admin.bounds) == {3.0}  # every poll's read is bounded
    paused = [e for e in events if isinstance(e, SubmissionPaused)]
    resumed = [e for e in events if isinstance(e, SubmissionResumed)]
    if start:
        assert paused == [SubmissionPaused(rid, FROZEN, 0)] and len(resumed) == 1
        first_sent = _submissions(events)[0]
        assert events.index(resumed[0]) < first_sent  # held until the flag was read again
    else:
        assert paused == [] and resumed == [] and submitted_while_unread == [True]
    assert admin.replicas == TARGETS and admin.configs == {}
    assert journal.request(rid).state is RequestState.DONE
